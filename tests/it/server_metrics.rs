//! Server metrics end to end: the real `bench` binary scrapes its simulator's `/metrics` and
//! the report's `server_metrics` agree with the simulator's model and with bench's own counts;
//! a bad metrics endpoint costs one warning and nothing else.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use common::{bench, text, write_sim};

fn tmp(name: &str) -> PathBuf {
    common::tmp("sm", name)
}

/// Runs `bench run --mock` closed-loop with 16 streams for 2 s, scraped every 50 ms, and
/// returns the first benchmark.
fn run16(name: &str, extra: &[&str]) -> (serde_json::Value, String) {
    run16_for(name, "2", "0.05", extra)
}

/// [`run16`] for `seconds`, scraped every `interval` seconds.
fn run16_for(
    name: &str,
    seconds: &str,
    interval: &str,
    extra: &[&str],
) -> (serde_json::Value, String) {
    let dir = tmp(name);
    let json = dir.join("run.json");
    let mut args = vec![
        "run",
        "--mock",
        "--rate-type",
        "concurrent",
        "--rate",
        "16",
        "--max-seconds",
        seconds,
        "--data",
        "prompt_tokens=64,output_tokens=32",
        "--server-metrics-interval",
        interval,
        "--console",
        "both",
        "--quiet",
        "--output",
        json.to_str().expect("utf8"),
    ];
    args.extend_from_slice(extra);
    let out = bench(&args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    (run["benchmarks"][0].clone(), stdout)
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn sixteen_streams_keep_sixteen_running_and_the_token_counter_matches_the_client() {
    let (b, stdout) = run16("sixteen", &[]);
    let sm = &b["server_metrics"];
    assert_eq!(sm["server"].as_str(), Some("vllm"), "{sm}");
    assert!(f(&sm["scrapes"]) >= 10.0, "{sm}");
    // The running mean's truth is the scrapes (the next test): never above the 16 streams, and
    // at 16 when a wave is in. Not "16 +- 1": beside two timed tests in a CI run the client
    // turned its streams around more slowly and the scrapes read a mean of 14.97.
    let running = f(&sm["summary"]["running"]["mean"]);
    assert!(running <= 16.0 && running > 8.0, "running mean {running}");
    assert_eq!(f(&sm["summary"]["running"]["max"]), 16.0);
    assert_eq!(
        f(&sm["summary"]["waiting"]["max"]),
        0.0,
        "64 slots: no queue"
    );
    // Every output token bench counted (completed, incomplete and errored requests alike)
    // against the server's generation counter over the benchmark.
    let out = &b["tokens"]["output"];
    let client: f64 = ["completed", "incomplete", "errored"]
        .iter()
        .map(|s| f(&out[s]["total"]))
        .sum();
    let server = f(&sm["summary"]["generation_tokens"]["delta"]);
    assert!(client > 500.0, "{client}");
    assert!(
        (server - client).abs() <= 0.03 * client,
        "server {server} vs client {client}"
    );
    let rate = f(&sm["summary"]["generation_tokens"]["rate_per_s"]);
    assert!((rate * f(&sm["duration_s"]) - server).abs() < 1e-6 * server.max(1.0));
    // KV model: 16 sequences each holding 64 prompt tokens + up to 32 outputs, of 65536.
    let kv = f(&sm["summary"]["kv_usage"]["mean"]);
    let (lo, hi) = (16.0 * 64.0 / 65536.0, 16.0 * 96.0 / 65536.0);
    assert!(
        kv > lo * 0.9 && kv < hi,
        "kv usage {kv} not in ({lo}, {hi})"
    );
    // The server's own TTFT: prefill of 2 ms + 64 / 10000 s = 8.4 ms for every request; the
    // client's TTFT adds the network and client time, never less.
    let ttft = &sm["summary"]["ttft_ms"];
    assert!(f(&ttft["count"]) >= f(&b["requests"]["completed"]));
    assert!((f(&ttft["mean"]) - 8.4).abs() < 0.05, "{ttft}");
    assert!(f(&b["metrics"]["ttft_ms"]["mean"]) >= f(&ttft["mean"]));
    assert!(sm["series"].as_array().is_some_and(|s| s.len() >= 10));
    for want in [
        "Server Metrics:",
        "Server TTFT (ms)",
        "Mean running requests:",
    ] {
        assert!(stdout.contains(want), "{want} missing:\n{stdout}");
    }
}

/// Issue 22: `concurrent@16` for 5 s scraped every second read a running mean of 12.8 in one
/// run (a 0 taken as the load began was one sample in five) and 16.0 in the next. The mean is
/// now the time-weighted mean of the scrapes inside the steady state alone, so it lies between
/// their least and greatest, whatever came before. Not "16 in both runs": the 16 streams run in
/// step (equal requests), and a scrape that falls between a wave's replies and the next wave's
/// admission reads fewer; with a timed test beside this one the client turned around more
/// slowly and one run read a mean of 14.78 (a last scrape of 12), which is what the server
/// said. The scrapes are the ground truth here, not a number of streams.
#[test]
fn the_running_gauge_is_the_time_weighted_mean_of_the_steady_states_scrapes() {
    let _one = common::serial();
    for i in 0..2 {
        let (b, _) = run16_for(&format!("gauge-{i}"), "5", "1", &[]);
        let running = &b["server_metrics"]["summary"]["running"];
        assert_eq!(b["latency_scope"], "steady", "{}", b["timeline"]);
        let tl = |k: &str| f(&b["timeline"][k]);
        let (lo, hi) = (
            (tl("steady_start_ns") - tl("start_ns")) / 1e9,
            (tl("steady_end_ns") - tl("start_ns")) / 1e9,
        );
        let inside: Vec<f64> = b["server_metrics"]["series"]
            .as_array()
            .expect("series")
            .iter()
            .filter(|p| (lo..=hi).contains(&f(&p["t_s"])))
            .map(|p| f(&p["running"]))
            .collect();
        assert!(inside.len() >= 3, "run {i}: {inside:?} in [{lo}, {hi}] s");
        let least = inside.iter().copied().fold(f64::INFINITY, f64::min);
        let most = inside.iter().copied().fold(0.0, f64::max);
        let mean = f(&running["mean"]);
        assert!(
            least - 1e-9 <= mean && mean <= most + 1e-9,
            "run {i}: mean {mean} outside the steady scrapes {inside:?}"
        );
        assert_eq!(f(&running["max"]), most, "run {i}: {running}");
        assert!(most <= 16.0, "run {i}: {inside:?}");
    }
}

#[test]
fn a_full_batch_queues_the_rest() {
    let dir = tmp("queue");
    let cfg = write_sim(&dir, "max_batch: 8\n", None);
    let (b, _) = run16("queue", &["--mock-config", cfg.to_str().expect("utf8")]);
    let sm = &b["server_metrics"];
    let s = &sm["summary"];
    let (running, waiting) = (f(&s["running"]["mean"]), f(&s["waiting"]["mean"]));
    assert!((running - 8.0).abs() <= 0.5, "running {running}");
    assert_eq!(f(&s["running"]["max"]), 8.0);
    assert_eq!(f(&s["waiting"]["max"]), 8.0);
    // The other 8 streams wait, except while a batch that finished together is being resent
    // by its clients (the queue dips for the client's turnaround).
    assert!((5.0..=8.0).contains(&waiting), "waiting {waiting}");
    for p in sm["series"].as_array().expect("series") {
        assert!(f(&p["running"]) + f(&p["waiting"]) <= 16.0, "{p}");
    }
}

/// A loopback server answering every request with `reply` (after `delay`).
fn bad_endpoint(reply: Vec<u8>, delay: Duration) -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let reply = reply.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                std::thread::sleep(delay);
                let _ = s.write_all(&reply);
            });
        }
    });
    format!("http://user:secret@{addr}/metrics")
}

fn ok(body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

#[test]
fn a_bad_metrics_endpoint_costs_one_warning_and_nothing_else() {
    let huge = {
        let mut b = Vec::with_capacity(17 << 20);
        while b.len() < (17 << 20) {
            b.extend_from_slice(b"vllm:num_requests_running 1\n");
        }
        b
    };
    let cases: Vec<(&str, Vec<u8>, Duration)> = vec![
        (
            "404",
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_vec(),
            Duration::ZERO,
        ),
        (
            "html",
            ok(b"<html><body>metrics</body></html>"),
            Duration::ZERO,
        ),
        (
            "malformed",
            ok(b"vllm:num_requests_running{a=\"1\" 3\n"),
            Duration::ZERO,
        ),
        ("huge", ok(&huge), Duration::ZERO),
        ("slow", ok(b"m 1\n"), Duration::from_secs(30)),
    ];
    let handles: Vec<_> = cases
        .into_iter()
        .map(|(name, reply, delay)| {
            let url = bad_endpoint(reply, delay);
            std::thread::spawn(move || {
                let dir = tmp(name);
                let json = dir.join("run.json");
                let out = bench(&[
                    "run",
                    "--mock",
                    "--rate-type",
                    "concurrent",
                    "--rate",
                    "4",
                    "--max-requests",
                    "40",
                    "--data",
                    "prompt_tokens=16,output_tokens=4",
                    "--server-metrics-url",
                    &url,
                    "--server-metrics-interval",
                    "0.05",
                    "--console",
                    "vllm",
                    "--quiet",
                    "--output",
                    json.to_str().expect("utf8"),
                ]);
                (name, out, json)
            })
        })
        .collect();
    for h in handles {
        let (name, out, json) = h.join().expect("thread");
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{name}: {:?}\n{stderr}", out.status);
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("server metrics"))
            .collect();
        assert_eq!(warnings.len(), 1, "{name}: {stderr}");
        assert!(!stderr.contains("secret"), "{name}: {stderr}");
        let saved = std::fs::read_to_string(&json).expect("report");
        assert!(!saved.contains("secret"), "{name}: the password was saved");
        let run: serde_json::Value = serde_json::from_str(&saved).expect("json");
        let b = &run["benchmarks"][0];
        assert_eq!(b["requests"]["completed"].as_u64(), Some(40), "{name}");
        assert!(
            b.get("server_metrics").is_none(),
            "{name}: {}",
            b["server_metrics"]
        );
        assert!(!text(&out.stdout).contains("Server metrics"), "{name}");
    }
}

#[test]
fn scraping_can_be_turned_off() {
    let (b, stdout) = run16("off", &["--no-server-metrics"]);
    assert!(b.get("server_metrics").is_none());
    assert!(!stdout.contains("Server Metrics"));
}
