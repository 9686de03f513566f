//! Issue 23, reasoning and `--no-stream`, end to end: the real `bench` binary against its
//! in-process simulator serving a reasoning phase (`reasoning_tokens`, docs/simulator.md),
//! with the figures of its JSON report checked against the simulator's closed form and its
//! request log, and the consoles showing the reasoning figures only when there was reasoning.

use crate::common;

use common::{bench, f, fresh, serial, text, write_sim};
use serde_json::Value;

const R: u64 = 5; // reasoning tokens per response
const N: u64 = 16; // output tokens per response
const REQUESTS: u64 = 6;
const STEP_MS: f64 = 4.0;

fn sim() -> String {
    format!("reasoning_tokens: {R}\nstep_base_ms: {STEP_MS}\nstep_per_seq_ms: 0\nprefill_overhead_ms: 2\nprefill_rate: 0\n")
}

fn run(name: &str, args: &[&str]) -> (Value, Vec<Value>) {
    let data = format!("prompt_tokens=32,output_tokens={N}");
    common::logged_synchronous_run(
        "reasoning",
        name,
        &sim(),
        "openai-chat",
        REQUESTS,
        &data,
        args,
    )
}

#[test]
fn reasoning_figures_equal_the_closed_form_and_the_log() {
    let _one = serial();
    let (b, log) = run("streamed", &[]);
    assert_eq!(f(&b, &["requests", "completed"]), REQUESTS as f64);
    assert_eq!(log.len() as u64, REQUESTS);
    for e in &log {
        assert_eq!(e["reasoning_tokens"].as_u64(), Some(R));
        assert_eq!(e["planned_tokens"].as_u64(), Some(N));
    }
    // Tokens: usage's reasoning count, the rest answer.
    let t = &b["tokens"];
    assert_eq!(
        f(t, &["reasoning", "completed", "total"]),
        (REQUESTS * R) as f64
    );
    assert_eq!(
        f(t, &["answer", "completed", "total"]),
        (REQUESTS * (N - R)) as f64
    );
    assert_eq!(t["reasoning"]["sources"]["usage"].as_u64(), Some(REQUESTS));
    // Counts of each figure: one TTFO and one reasoning time per request; R - 1 reasoning
    // gaps and N - R - 1 answer gaps per request.
    let m = &b["metrics"];
    assert_eq!(f(m, &["ttfo_ms", "count"]), REQUESTS as f64);
    assert_eq!(f(m, &["reasoning_time_ms", "count"]), REQUESTS as f64);
    assert_eq!(
        f(m, &["reasoning_itl_ms", "count"]),
        (REQUESTS * (R - 1)) as f64
    );
    assert_eq!(
        f(m, &["answer_itl_ms", "count"]),
        (REQUESTS * (N - R - 1)) as f64
    );
    // Timing: the reasoning phase is R decode steps (closed form), TTFO = TTFT + that. The
    // bounds are generous: the machine is shared.
    let reasoning = f(m, &["reasoning_time_ms", "median"]);
    assert!((reasoning - R as f64 * STEP_MS).abs() < 10.0, "{reasoning}");
    let (ttft, ttfo) = (f(m, &["ttft_ms", "mean"]), f(m, &["ttfo_ms", "mean"]));
    let diff = ttfo - ttft - f(m, &["reasoning_time_ms", "mean"]);
    assert!(
        diff.abs() < 0.1,
        "TTFO = TTFT + reasoning time: {ttft} {ttfo} {diff}"
    );
    let itl = f(m, &["reasoning_itl_ms", "median"]);
    assert!((itl - STEP_MS).abs() < 5.0, "{itl}");
}

#[test]
fn no_stream_reports_latency_and_usage_without_ttft() {
    let _one = serial();
    let (b, log) = run("unstreamed", &["--no-stream"]);
    assert_eq!(f(&b, &["requests", "completed"]), REQUESTS as f64);
    for e in &log {
        assert_eq!(e["stream"].as_bool(), Some(false));
    }
    let m = &b["metrics"];
    assert_eq!(
        f(m, &["ttft_ms", "count"]),
        0.0,
        "TTFT absent, not invented"
    );
    assert_eq!(f(m, &["ttfo_ms", "count"]), 0.0);
    assert_eq!(f(m, &["itl_ms", "count"]), 0.0);
    assert_eq!(f(m, &["e2el_ms", "count"]), REQUESTS as f64);
    // The simulator decodes N tokens before it writes the reply.
    assert!(
        f(m, &["e2el_ms", "min"]) >= N as f64 * STEP_MS,
        "{}",
        m["e2el_ms"]
    );
    let t = &b["tokens"];
    assert_eq!(
        f(t, &["output", "completed", "total"]),
        (REQUESTS * N) as f64
    );
    assert_eq!(t["output"]["sources"]["usage"].as_u64(), Some(REQUESTS));
    assert_eq!(
        f(t, &["reasoning", "completed", "total"]),
        (REQUESTS * R) as f64
    );
}

#[test]
fn consoles_show_reasoning_only_when_there_was_some_and_bad_flags_are_usage_errors() {
    let _one = serial();
    let dir = fresh("reasoning", "console");
    let cfg = write_sim(&dir, "reasoning_tokens: 3\n", None);
    let cfg = cfg.to_str().expect("utf8");
    let common_args = [
        "run",
        "--mock",
        "--quiet",
        "--rate-type",
        "synchronous",
        "--max-requests",
        "3",
        "--data",
        "prompt_tokens=16,output_tokens=8",
    ];
    let with = |extra: &[&str]| bench(&[&common_args[..], extra].concat());
    let out = with(&["--mock-config", cfg, "--backend", "openai-chat"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let console = text(&out.stdout);
    assert!(console.contains("Reasoning tokens:"), "{console}");
    assert!(console.contains("Mean TTFO (ms):"), "{console}");
    let out = with(&[
        "--mock-config",
        cfg,
        "--backend",
        "openai-chat",
        "--console",
        "guidellm",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let console = text(&out.stdout);
    assert!(console.contains("Reasoning Stats"), "{console}");
    let out = with(&["--backend", "openai-chat"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("Reasoning"),
        "{}",
        text(&out.stdout)
    );
    let out = with(&["--backend", "tgi", "--no-stream"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("--no-stream") && err.lines().count() <= 2,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
