//! Speculative decoding end to end (docs/metrics.md, "Speculative decoding"; docs/simulator.md,
//! "Speculative decoding"), against the simulator drafting `k = 4` tokens a step, each
//! accepted with probability `a = 0.7` up to the first rejection.
//!
//! Closed form of the server's figures: with `A` a step's accepted drafts, `P(A >= i) = a^i`,
//! so `E[A] = a + a^2 + ... + a^k` and `E[A^2] = sum (2i - 1) a^i`; acceptance rate `E[A] / k`
//! (44.33%), acceptance length `1 + E[A] = (1 - a^(k+1)) / (1 - a)` (2.77), position `i`'s
//! rate `a^(i+1)`. Over `d` drafts the measured mean of `A` has the standard error
//! `sqrt((E[A^2] - E[A]^2) / d)`: the tolerances are four of them.
//!
//! Ground truth of the client's figures: the simulator's request log. A step's tokens reach
//! the client in one event, so a response has `1 + spec_drafts` content chunks (`itl_ms` has
//! `spec_drafts` gaps per request, each one step), while TPOT divides by the tokens. Unloaded
//! (one stream) with a free prefill, the first decode step starts as the first token is
//! released, so every gap is one step `S` on the engine's schedule and a request's TPOT is
//! `S x spec_drafts / (n - 1)`.

use crate::common;

use common::{bench, f, fresh, logged_synchronous_run, mock_report, serial, text};
use serde_json::Value;

const K: i32 = 4;
const A: f64 = 0.7;
const N: f64 = 64.0;

/// The simulator: 16 slots, steps of `step_ms` whatever the batch, a free prefill, `k` and `a`.
fn sim(step_ms: f64) -> String {
    format!("max_batch: 16\nstep_base_ms: {step_ms}\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 0\nspec_tokens: 4\nspec_accept: 0.7\nseed: 5\n")
}

/// `(E[A], E[A^2])` of a step's accepted drafts.
fn moments() -> (f64, f64) {
    (1..=K).fold((0.0, 0.0), |(m1, m2), i| {
        let p = A.powi(i);
        (m1 + p, m2 + f64::from(2 * i - 1) * p)
    })
}

#[test]
fn acceptance_is_the_closed_form_in_every_output() {
    let _one = serial();
    let dir = fresh("spec", "acceptance");
    let cfg = common::write_sim(&dir, &sim(10.0), None);
    let (html, csv) = (dir.join("run.html"), dir.join("run.csv"));
    let run = mock_report(
        "run",
        "spec",
        &dir,
        Some(&cfg),
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "16",
            "--max-seconds",
            "6",
            "--data",
            "prompt_tokens=128,output_tokens=64",
            "--output",
            html.to_str().expect("utf8"),
            "--output",
            csv.to_str().expect("utf8"),
        ],
    );
    let (html, csv) = (
        std::fs::read_to_string(&html).expect("html"),
        std::fs::read_to_string(&csv).expect("csv"),
    );
    let _ = std::fs::remove_dir_all(&dir);
    let b = &run["benchmarks"][0];
    let s = &b["server_metrics"]["summary"]["spec_decode"];
    eprintln!("{s}");
    assert_eq!(
        s["counted_over"], "window",
        "counted over the steady window"
    );
    let d = f(s, &["drafts"]);
    let mean = f(s, &["accepted_tokens"]) / d;
    let (m1, m2) = moments();
    let se = ((m2 - m1 * m1) / d).sqrt();
    eprintln!("E[A] {mean:.4}, closed form {m1:.4} (se {se:.4}, {d} drafts)");
    assert!((mean - m1).abs() <= 4.0 * se, "{mean} vs {m1}");
    assert_eq!(f(s, &["draft_tokens"]), 4.0 * d);
    assert!((f(s, &["acceptance_rate"]) - mean / 4.0).abs() < 1e-12);
    assert!((f(s, &["acceptance_length"]) - (1.0 + mean)).abs() < 1e-12);
    let positions = s["per_position"].as_array().expect("per position");
    assert_eq!(positions.len(), 4);
    for (i, p) in positions.iter().enumerate() {
        let q = A.powi(i as i32 + 1);
        let got = p.as_f64().expect("rate");
        assert!(
            (got - q).abs() <= 4.0 * (q * (1.0 - q) / d).sqrt(),
            "position {i}: {got} vs {q}"
        );
    }
    // The steady window is shorter than the benchmark: the counters' span is inside it.
    assert!(f(s, &["span_s"]) < f(b, &["server_metrics", "duration_s"]));
    // Every output shows it.
    assert!(
        html.contains("<h3>Speculative decoding (server)</h3>"),
        "html"
    );
    let cell: f64 = common::csv_cell(&csv, "spec_acceptance_rate")
        .parse()
        .expect("a number");
    // The CSV writes 6 decimals.
    assert!((cell - mean / 4.0).abs() < 1e-6, "csv {cell}");
}

/// A log line's number.
fn n(e: &Value, k: &str) -> f64 {
    e[k].as_f64().unwrap_or(0.0)
}

/// Steps of 20 ms: a request's 23 steps span 0.46 s, so a last token written late by a busy
/// machine (its first is written on arrival, with no timer) moves its TPOT by little.
#[test]
fn multi_token_chunks_count_per_chunk_and_per_token() {
    const STEP_MS: f64 = 20.0;
    const REQUESTS: u64 = 20;
    let r = REQUESTS as f64;
    let _one = serial();
    let (b, log) = logged_synchronous_run(
        "spec",
        "chunks",
        &sim(STEP_MS),
        "openai-chat",
        REQUESTS,
        "prompt_tokens=32,output_tokens=64",
        &[],
    );
    let m = &b["metrics"];
    assert_eq!(f(&b, &["requests", "completed"]), r);
    assert_eq!(log.len() as f64, r);
    let drafts: f64 = log.iter().map(|e| n(e, "spec_drafts")).sum();
    let tokens: f64 = log.iter().map(|e| n(e, "output_tokens")).sum();
    assert_eq!(tokens, r * N);
    assert_eq!(f(&b, &["tokens", "output", "completed", "total"]), tokens);
    // Per chunk: one gap per step, exactly the log's count (the worker reads each event as
    // its chunk, even when a late write carried two steps at once); their mean is the step,
    // the schedule being absolute (single gaps move with late timer wake-ups on a busy
    // machine, both ways).
    assert_eq!(f(m, &["itl_ms", "count"]), drafts, "a chunk per step");
    let itl = f(m, &["itl_ms", "mean"]);
    assert!((itl - STEP_MS).abs() <= 0.03 * STEP_MS, "ITL mean {itl}");
    // Per token: each request's TPOT is S x its steps / (n - 1) on the engine's schedule; the
    // log's write times and the client's arrivals both within 3% of it.
    let model: Vec<f64> = log
        .iter()
        .map(|e| STEP_MS * n(e, "spec_drafts") / (N - 1.0))
        .collect();
    let model_mean = model.iter().sum::<f64>() / r;
    let logged_mean = log
        .iter()
        .map(|e| (n(e, "last_token_unix_ns") - n(e, "first_token_unix_ns")) / 1e6 / (N - 1.0))
        .sum::<f64>()
        / r;
    let tpot = f(m, &["tpot_ms", "mean"]);
    eprintln!(
        "TPOT {tpot:.4} ms, log {logged_mean:.4}, model {model_mean:.4}; ITL {:.3} ms, {drafts} steps",
        f(m, &["itl_ms", "mean"])
    );
    assert!((logged_mean - model_mean).abs() <= 0.03 * model_mean);
    assert!((tpot - model_mean).abs() <= 0.03 * model_mean, "{tpot}");
    // guidellm's token-weighted ITL: the steps' time over the tokens after the first.
    let per_token = STEP_MS * drafts / (r * (N - 1.0));
    let got = f(m, &["itl_per_request_ms", "mean"]);
    assert!((got - per_token).abs() <= 0.03 * per_token, "{got}");
    // The chunks are several tokens each: per chunk is well above per token.
    assert!(f(m, &["itl_ms", "mean"]) > 2.0 * tpot);
}

/// Bad settings are one line naming the key or flag, exit 2, in the simulator's flags and in a
/// `--mock-config` file; the vLLM console prints vLLM's own section.
#[test]
fn bad_settings_are_usage_errors_and_the_vllm_console_shows_the_section() {
    for (args, culprit) in [
        (&["--spec-tokens", "33"][..], "`spec_tokens`"),
        (&["--spec-accept", "1.5"][..], "`spec_accept`"),
        (&["--spec-accept", "-0.1"][..], "`spec_accept`"),
        (&["--spec-tokens", "x"][..], "--spec-tokens"),
    ] {
        let out = bench(&[&["mock-server", "--port", "0"][..], args].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(culprit), "{args:?}: {err}");
    }
    let _one = serial();
    let dir = fresh("spec", "console");
    let bad = common::write_sim(&dir, "spec_accept: 2\n", None);
    let out = bench(&[
        "run",
        "--mock",
        "--mock-config",
        bad.to_str().expect("utf8"),
        "--rate-type",
        "synchronous",
        "--max-requests",
        "1",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`spec_accept`") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    let cfg = common::write_sim(&dir, &sim(10.0), None);
    let out = bench(&[
        "run",
        "--mock",
        "--mock-config",
        cfg.to_str().expect("utf8"),
        "--rate-type",
        "concurrent",
        "--rate",
        "4",
        "--max-seconds",
        "3",
        "--console",
        "vllm",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for line in [
        "---------------Speculative Decoding---------------",
        "Acceptance rate (%):",
        "Per-position acceptance (%):",
        "  Position 3:",
    ] {
        assert!(stdout.contains(line), "{line} in {stdout}");
    }
    // No section against a server that does not draft.
    let out = bench(&[
        "run",
        "--mock",
        "--rate-type",
        "synchronous",
        "--max-requests",
        "3",
        "--console",
        "vllm",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("Speculative"));
}
