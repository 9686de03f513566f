//! How a run ends when things go wrong (issue 13): the server dies mid-run, the open-file limit
//! is too low, nothing completes, the model list is not JSON, the data file breaks mid-run.
//! Each ends on its own with one clear line and the documented exit code.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bench(args: &[&str]) -> Output {
    common::bench_command()
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("run bench")
}

fn tmp(name: &str) -> PathBuf {
    common::tmp("fail", name)
}

/// Runs `bench <args>` under an open-file limit of `limit` (`ulimit -n`), logs off.
fn under_open_file_limit(limit: u32, args: &str) -> Output {
    Command::new("bash")
        .args([
            "-c",
            &format!(
                "ulimit -n {limit} && exec {} {args}",
                env!("CARGO_BIN_EXE_bench")
            ),
        ])
        .current_dir(common::run_dir())
        .env("RUST_LOG", "off")
        .output()
        .expect("bash")
}

fn err_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("error"))
        .map(String::from)
        .collect()
}

/// Defect 3: a closed-loop run whose server is killed stops ~3 s later with exit 1 and says
/// why, after a bounded number of connection attempts (not a storm of 100,000 errors).
#[test]
fn a_server_killed_mid_run_ends_the_run_with_a_clear_message() {
    let (mut server, url) = common::mock_server(&["--port", "0", "--step-base-ms", "1"]);
    let json = tmp("gone").join("run.json");
    let run = common::bench_command()
        .args([
            "run",
            "--target",
            &url,
            "--rate-type",
            "concurrent",
            "--rate",
            "4",
            "--max-seconds",
            "60",
            "--data",
            "prompt_tokens=8,output_tokens=4",
            "--console",
            "none",
            "-q",
            "--output",
            json.to_str().expect("utf8"),
        ])
        .env("RUST_LOG", "off")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bench");
    std::thread::sleep(Duration::from_millis(1500));
    server.0.kill().expect("kill -9 the server");
    let _ = server.0.wait();
    let t0 = Instant::now();
    let out = run.wait_with_output().expect("wait");
    let took = t0.elapsed();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(20), "ended on its own: {took:?}");
    let e = err_lines(&out);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("stopped answering"), "{e:?}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let r = &run["benchmarks"][0]["requests"];
    let errored = r["errored"].as_u64().expect("errored");
    assert!(r["completed"].as_u64().expect("completed") > 0);
    // With the back-off: at most ~1 attempt/s/stream after a short ramp.
    assert!(
        errored < 200,
        "{errored} errored requests after the server died"
    );
}

/// Defect 3: a concurrency that cannot fit under the hard open-file limit is refused before
/// the run, naming the limit.
#[test]
fn a_concurrency_over_the_open_file_limit_is_refused_before_the_run() {
    let out = under_open_file_limit(
        256,
        "run --mock --rate-type concurrent --rate 1000 --max-seconds 1",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("RLIMIT_NOFILE") && err.contains("256"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Over HTTP/2 streams share one connection, so the same limit lets 8,000 streams at once go
/// on, and every request completes. 8,000 request bodies sent at once also outrun a 1 MiB
/// connection window (hyper's default): the client's h2 then splits them into small DATA
/// frames, and the simulator's h2 ended the connection with GOAWAY ENHANCE_YOUR_CALM
/// "too_many_data_frames" (10,719 of 16,000 requests errored) until its window was 64 MiB.
#[test]
fn http2_streams_share_a_connection_under_the_open_file_limit() {
    let dir = tmp("h2-nofile");
    let (json, cfg) = (dir.join("run.json"), dir.join("sim.yaml"));
    let zero = "step_base_ms: 0\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 0\n";
    std::fs::write(&cfg, zero).expect("config");
    let out = under_open_file_limit(
        256,
        &format!(
            "run --mock --mock-config {} --http2 --quiet --console none --rate-type concurrent \
             --rate 8000 --max-requests 16000 --data prompt_tokens=64,output_tokens=8 --output {}",
            cfg.display(),
            json.display()
        ),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = &run["benchmarks"][0];
    let r = &b["requests"];
    assert_eq!(
        (r["errored"].as_u64(), r["completed"].as_u64()),
        (Some(0), Some(16_000)),
        "{r} {}",
        b["errors"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An uncapped open-loop run whose requests pile up past the client's open-file limit (an
/// in-process simulator taking seconds per answer, `ulimit -n 200`): the run stops with one
/// line naming the client's limit and exit 1, not "the server stopped answering".
#[test]
fn running_out_of_file_descriptors_names_the_client_limit_not_the_server() {
    let d = tmp("emfile");
    let cfg = d.join("slow.yaml");
    // 50 tokens at 100 ms each: 5 s per request, so 400 req/s needs ~2,000 sockets.
    std::fs::write(&cfg, "step_base_ms: 100\n").expect("write");
    let json = d.join("run.json");
    let out = under_open_file_limit(
        200,
        &format!(
            "run --mock --mock-config {} --rate-type constant --rate 400 --max-seconds 30 \
             --data prompt_tokens=8,output_tokens=50 -q --console none --output {}",
            cfg.display(),
            json.display()
        ),
    );
    let e = err_lines(&out);
    assert_eq!(out.status.code(), Some(1), "{e:?}");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("ran out of file descriptors")
            && e[0].contains("ulimit -n")
            && e[0].contains("is 200"),
        "{e:?}"
    );
    assert!(!e[0].contains("server stopped answering"), "{e:?}");
    // Stopped, not run to its 30 s end; the benchmark is in the report.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = &run["benchmarks"][0];
    assert_eq!(b["stop_reason"], "interrupted", "{}", b["stop_reason"]);
}

/// Defect 7: a benchmark whose requests were all cut off (no error) fails the run with a line
/// that says so, and the report is still written; --allow-empty accepts it.
#[test]
fn a_benchmark_that_completed_nothing_fails_unless_allowed() {
    let d = tmp("empty");
    let cfg = d.join("slow.yaml");
    std::fs::write(&cfg, "step_base_ms: 500\n").expect("write");
    let json = d.join("run.json");
    let args = [
        "run",
        "--mock",
        "--mock-config",
        cfg.to_str().expect("utf8"),
        "--rate-type",
        "concurrent",
        "--rate",
        "2",
        "--max-seconds",
        "1",
        // Cut the requests in flight off at the deadline (no drain): nothing completes.
        "--drain-timeout",
        "0",
        "--data",
        "prompt_tokens=8,output_tokens=50",
        "-q",
        "--output",
        json.to_str().expect("utf8"),
    ];
    let out = bench(&args);
    assert_eq!(out.status.code(), Some(1));
    let e = err_lines(&out);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("no request completed")
            && e[0].contains("0 errored")
            && e[0].contains("run.json"),
        "{e:?}"
    );
    assert!(!e[0].contains("see the errors"), "{e:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Mean TTFT (ms):                          -"),
        "{stdout}"
    );
    assert!(json.exists());
    let mut allowed = args.to_vec();
    allowed.push("--allow-empty");
    assert_eq!(bench(&allowed).status.code(), Some(0));
}

/// A one-shot HTTP/1.1 server answering every request with `reply`.
fn canned(reply: &'static str) -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut c = c;
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(reply.as_bytes());
        }
    });
    url
}

/// Defect 10: a /v1/models that answers 200 with non-JSON is "not an LLM server", not "not
/// answering".
#[test]
fn a_model_list_that_is_not_json_is_named_as_such() {
    let url = canned(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 11\r\nconnection: close\r\n\r\n<html>hi</html>",
    );
    let out = bench(&[
        "run",
        "--target",
        &url,
        "--rate-type",
        "synchronous",
        "--max-requests",
        "1",
    ]);
    let e = err_lines(&out);
    assert_eq!(out.status.code(), Some(1), "{e:?}");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(!e[0].contains("not answering"), "{e:?}");
    assert!(e[0].contains("not with a JSON model list"), "{e:?}");
}

/// Runs bench on `data` against the simulator with its default logging; (exit code, stderr).
fn run_on_data(data: &std::path::Path) -> (Option<i32>, String) {
    let out = common::bench_command()
        .args([
            "run",
            "--mock",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "5",
        ])
        .args(["--data", data.to_str().expect("utf8"), "--console", "none"])
        .env_remove("RUST_LOG")
        .output()
        .expect("run bench");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 20: bytes that are not UTF-8 on line 3 of a `.txt` or `.csv` data file are bad input,
/// refused before anything is sent (exit 2), on one line naming the file and the line. (They
/// used to start the run and fail it mid-way with exit 1, printing the error twice.)
#[test]
fn a_data_file_with_bad_bytes_is_refused_before_the_run() {
    let d = tmp("data");
    for (name, head) in [
        ("prompts.txt", &b"one prompt\nanother prompt\n"[..]),
        ("prompts.csv", &b"prompt,output_tokens\nhello there,4\n"[..]),
    ] {
        let p = d.join(name);
        let mut bytes = head.to_vec();
        bytes.extend_from_slice(b"\xff\xfe broken,4\n");
        std::fs::write(&p, bytes).expect("write");
        let (code, err) = run_on_data(&p);
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err.matches("line 3").count(), 1, "said once: {err}");
        let line = err
            .lines()
            .find(|l| l.contains("line 3"))
            .expect("error line");
        assert!(
            line.starts_with("error: --data") && line.contains(name) && line.contains("not UTF-8"),
            "{line}"
        );
        assert!(!err.contains("benchmark"), "nothing ran: {err}");
    }
}

/// Defect 11: a data file that breaks in the middle of the run (a JSON array whose fourth
/// element is cut off: only the parse finds it) fails it with the usage exit code, naming the
/// file and the cause once, instead of reporting that the data ran out.
#[test]
fn a_data_file_broken_mid_run_fails_the_run_naming_it_once() {
    let p = tmp("data").join("prompts.json");
    std::fs::write(
        &p,
        r#"[{"prompt": "a"}, {"prompt": "b"}, {"prompt": "c"}, {"prompt": "#,
    )
    .expect("write");
    let (code, err) = run_on_data(&p);
    assert_eq!(code, Some(2), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("prompts.json")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].starts_with("error: the data stream broke during the run"),
        "{err}"
    );
}

/// Defect 4: a stream that stalls with only --max-requests set ends by the idle timeout (here
/// shortened with --idle-timeout) and the run says why, instead of waiting 300 s in silence.
#[test]
fn a_stalled_stream_ends_by_the_idle_timeout_and_says_so() {
    let d = tmp("stall");
    let cfg = d.join("stall.yaml");
    std::fs::write(&cfg, "step_base_ms: 1\nfaults:\n  stall: 1.0\n").expect("write");
    let t0 = Instant::now();
    let out = bench(&[
        "run",
        "--mock",
        "--mock-config",
        cfg.to_str().expect("utf8"),
        "--rate-type",
        "concurrent",
        "--rate",
        "2",
        "--max-requests",
        "2",
        "--idle-timeout",
        "1",
        "--data",
        "prompt_tokens=8,output_tokens=8",
        "-q",
        "--console",
        "none",
    ]);
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("2 request(s) ended by the idle timeout (--idle-timeout 1 s)")
            && err.contains("of silence in the middle of the stream"),
        "{err}"
    );
}

/// Issue 20: a server that answers every request `429` with `Retry-After: 1` (the simulator's
/// `faults.http_429`). Before, `concurrent@8` sent 535 requests in 3 s; now each stream waits
/// the second it was asked to, so 8 streams send at most 8 x 3 in 3 s, all counted as
/// `rate_limited`, and bench says so.
#[test]
fn rate_limited_streams_wait_as_retry_after_asks() {
    let d = tmp("limited");
    let cfg = d.join("limited.yaml");
    let log = d.join("log.jsonl");
    std::fs::write(
        &cfg,
        format!(
            "step_base_ms: 1\nlog_requests: {}\nfaults:\n  http_429: 1.0\n",
            log.display()
        ),
    )
    .expect("write");
    let json = d.join("run.json");
    let out = bench(&[
        "run",
        "--mock",
        "--mock-config",
        cfg.to_str().expect("utf8"),
        "--rate-type",
        "concurrent",
        "--rate",
        "8",
        "--max-seconds",
        "3",
        "--data",
        "prompt_tokens=8,output_tokens=8",
        "-q",
        "--console",
        "none",
        "--output",
        json.to_str().expect("utf8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "nothing completed: {err}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = &run["benchmarks"][0];
    let total = b["requests"]["total"].as_u64().expect("total");
    let logged = std::fs::read_to_string(&log).expect("log").lines().count() as u64;
    assert_eq!(total, logged, "bench's count is the simulator's");
    // Requests at 0, 1, 2 s on each stream (3 at most per stream, 24 in all; the pause after
    // a request is cut at the benchmark's end).
    assert!((8..=24).contains(&total), "{total} requests in 3 s");
    assert_eq!(
        b["errors"]["rate_limited"].as_u64(),
        Some(total),
        "{}",
        b["errors"]
    );
    assert!(
        err.contains(&format!(
            "concurrent@8: {total} request(s) were rate limited (HTTP 429, counted as rate_limited): \
             {total} carried Retry-After, and their streams paused that long (at most 60 s)"
        )),
        "{err}"
    );
}
