//! The server-fault matrix (issue 13): every simulator fault kind x completions / chat / TGI
//! x HTTP/1.1 / HTTP/2, through the real `bench` binary against its in-process simulator with
//! a request log. In every case bench's counts equal the simulator's log (nothing lost,
//! nothing invented), the exit code is the documented one, and nothing panics.

use crate::common;

use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const FAULTS: &[&str] = &[
    "http_429",
    "http_500",
    "http_503",
    "reset",
    "malformed",
    "stream_error",
    "stall",
    "slow_headers",
];
const BACKENDS: &[&str] = &["openai-completions", "openai-chat", "tgi"];
const REQUESTS: u64 = 24;

struct Case {
    fault: &'static str,
    backend: &'static str,
    http2: bool,
    /// Fraction of requests with the fault.
    rate: f64,
}

fn dir() -> PathBuf {
    common::tmp("fault-matrix", "runs")
}

fn log_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("log line is JSON"))
        .collect()
}

/// Runs one case; `Err` says what was wrong.
fn check(c: &Case, dir: &Path, i: usize) -> Result<(), String> {
    let log = dir.join(format!("log-{i}.jsonl"));
    let cfg = dir.join(format!("sim-{i}.yaml"));
    let json = dir.join(format!("run-{i}.json"));
    let extra = match c.fault {
        "stall" => "  stall_ms: 50\n",
        "slow_headers" => "  slow_headers_ms: 50\n",
        _ => "",
    };
    std::fs::write(
        &cfg,
        format!(
            "step_base_ms: 0.5\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 0\nseed: {i}\nlog_requests: {}\nfaults:\n  {}: {}\n{extra}",
            log.display(),
            c.fault,
            c.rate
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut args = vec![
        "run".to_string(),
        "--mock".into(),
        "--mock-config".into(),
        cfg.display().to_string(),
        "--backend".into(),
        c.backend.into(),
        "--rate-type".into(),
        "concurrent".into(),
        "--rate".into(),
        "4".into(),
        "--max-requests".into(),
        REQUESTS.to_string(),
        "--data".into(),
        "prompt_tokens=16,output_tokens=6".into(),
        "--console".into(),
        "none".into(),
        "-q".into(),
        "--output".into(),
        json.display().to_string(),
    ];
    if c.http2 {
        args.push("--http2".into());
    }
    let out = common::bench_command()
        .args(&args)
        .env("RUST_LOG", "error")
        .output()
        .map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let name = format!(
        "{} x {} x {} @ {}",
        c.fault,
        c.backend,
        if c.http2 { "h2" } else { "h1" },
        c.rate
    );
    if err.contains("panicked") {
        return Err(format!("{name}: PANIC\n{err}"));
    }
    let run: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).map_err(|e| format!("{name}: no report: {e}\n{err}"))?,
    )
    .map_err(|e| format!("{name}: report: {e}"))?;
    let r = &run["benchmarks"][0]["requests"];
    let n = |k: &str| r[k].as_u64().unwrap_or(u64::MAX);
    let (completed, incomplete, errored, total) =
        (n("completed"), n("incomplete"), n("errored"), n("total"));
    let seen = log_lines(&log);
    let failed_in_log = seen
        .iter()
        .filter(|e| e["status"] != 200 || e["end"] != "completed")
        .count() as u64;
    let mut problems = Vec::new();
    if completed + incomplete + errored != total {
        problems.push(format!(
            "{completed}+{incomplete}+{errored} != total {total}"
        ));
    }
    if total != REQUESTS {
        problems.push(format!("total {total}, asked for {REQUESTS}"));
    }
    if seen.len() as u64 != total {
        problems.push(format!(
            "simulator logged {}, bench counted {total}",
            seen.len()
        ));
    }
    // Malformed events are skipped by the stream (the rest of it completes), so only the
    // log's failures count as failures; every other fault fails the request it hits.
    if c.fault != "malformed" && errored + incomplete != failed_in_log {
        problems.push(format!(
            "bench: {errored} errored + {incomplete} incomplete; log: {failed_in_log} failed"
        ));
    }
    let want_code = if completed == 0 { 1 } else { 0 };
    if out.status.code() != Some(want_code) {
        problems.push(format!(
            "exit {:?}, documented {want_code}",
            out.status.code()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}: {}\n{err}", problems.join("; ")))
    }
}

#[test]
fn every_simulator_fault_on_every_backend_and_http_version_is_accounted_for() {
    let mut cases = Vec::new();
    for &fault in FAULTS {
        for &backend in BACKENDS {
            for http2 in [false, true] {
                cases.push(Case {
                    fault,
                    backend,
                    http2,
                    rate: 0.3,
                });
            }
        }
    }
    // Every request failing: nothing completes, and the run says so with exit 1.
    for fault in ["http_500", "reset", "stream_error"] {
        for &backend in BACKENDS {
            cases.push(Case {
                fault,
                backend,
                http2: false,
                rate: 1.0,
            });
        }
    }
    let n = cases.len();
    let d = dir();
    let cases = Arc::new(cases);
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (cases, next, d) = (cases.clone(), next.clone(), d.clone());
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(c) = cases.get(i) else { break };
                    if let Err(e) = check(c, &d, i) {
                        failures.push(e);
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("fault matrix: {n} cases");
}
