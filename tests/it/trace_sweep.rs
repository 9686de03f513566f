//! A sweep over a trace against the simulator's engine model (docs/simulator.md): the
//! capacity it states as a multiple of the trace must be the closed-form capacity divided by
//! the trace's recorded mean rate, and the SLO multiple the closed-form SLO-limited rate
//! divided by it; every output format states the multiples.
//!
//! The trace: 400 rows 250 ms apart (recorded mean rate `R = 399 / 99.75 s = 4` req/s), each a
//! 16-token prompt of its own hash id (no sharing, and `prefill_rate: 0` makes prefill cost
//! independent of the cache anyway) and 24 output tokens; the engine is `batch8` of
//! `tests/capacity_sweep.rs`, whose SLO closed form the rate sweep is held to. Closed forms as in
//! `tests/capacity_sweep.rs` (`b` = step_base, `q` = step_per_seq, `B` = max_batch, `P` the
//! prefill, `n` output tokens): `S = b + q B`, `C = (ceil(P / S) + n - 1) S`, capacity `B / C`;
//! the rate at which mean TPOT reaches `X` is `(S* - b) / (q (S* (n - 1/2) + P))`,
//! `S* = X / (1 + 1 / (2 (n - 1)))`. Here `S` = 10 ms, `C` = 0.24 s, capacity 33.3 req/s, a
//! multiple of 8.33; the SLO rate 24.4 req/s, a multiple of 6.1.
//!
//! Tolerance 5%, as the rate sweep's SLO check and 2 points wider than its capacity check: the
//! capacity comes from the same planner and probes (the trace's prompts sent closed loop), and
//! a trace rate that kept up is evidence for the rate it offered, which over a window of this
//! evenly spaced trace is exactly `speedup x R`; the extra 2% covers the closed-loop probes'
//! known bias (a freed slot refills after the step boundary: `q B / (n (b + q B))` = 1.7% here)
//! on a machine too busy to hold the rest under 1%. Nothing depends on how fast the machine is,
//! only on the simulator's time model (the simulator catches up after a late wake-up).

use crate::common;

use common::{f, fresh, mock_report, serial, text, write_sim};

const ROWS: u64 = 400;
const GAP_MS: u64 = 250;
const MAX_BATCH: f64 = 8.0;
const STEP_BASE_MS: f64 = 6.0;
const STEP_PER_SEQ_MS: f64 = 0.5;
const PREFILL_MS: f64 = 2.0;
const TOKENS: f64 = 24.0;
/// S* of the SLO, ms.
const SLO_STEP_MS: f64 = 8.0;

fn recorded_rate() -> f64 {
    (ROWS - 1) as f64 / ((ROWS - 1) * GAP_MS) as f64 * 1e3
}

fn capacity() -> f64 {
    let s = (STEP_BASE_MS + STEP_PER_SEQ_MS * MAX_BATCH) / 1e3;
    let c = ((PREFILL_MS / 1e3 / s).ceil() + TOKENS - 1.0) * s;
    MAX_BATCH / c
}

fn tpot_bound_ms() -> f64 {
    SLO_STEP_MS * (1.0 + 1.0 / (2.0 * (TOKENS - 1.0)))
}

fn slo_rate() -> f64 {
    let (s, b, q, p) = (
        SLO_STEP_MS / 1e3,
        STEP_BASE_MS / 1e3,
        STEP_PER_SEQ_MS / 1e3,
        PREFILL_MS / 1e3,
    );
    (s - b) / (q * (s * (TOKENS - 0.5) + p))
}

fn write_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let body: String = (0..ROWS)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 16, \"output_length\": {TOKENS}, \"hash_ids\": [{i}]}}\n",
                i * GAP_MS
            )
        })
        .collect();
    let p = dir.join("trace.jsonl");
    std::fs::write(&p, body).expect("write trace");
    p
}

/// The rows of a CSV file, as cells (quoted cells may hold commas and line breaks; `""` is a
/// quote).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut cur, mut quoted) = (Vec::new(), Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => row.push(std::mem::take(&mut cur)),
            '\n' if !quoted => {
                row.push(std::mem::take(&mut cur));
                rows.push(std::mem::take(&mut row));
            }
            c => cur.push(c),
        }
    }
    rows
}

#[test]
fn a_sweep_over_a_trace_states_the_closed_form_capacity_as_a_multiple_of_the_trace() {
    let _one = serial();
    let dir = fresh("trace-sweep", "closed-form");
    let trace = write_trace(&dir);
    let sim = write_sim(
        &dir,
        &format!(
            "max_batch: {MAX_BATCH}\nstep_base_ms: {STEP_BASE_MS}\nstep_per_seq_ms: {STEP_PER_SEQ_MS}\nprefill_overhead_ms: {PREFILL_MS}\nprefill_rate: 0\nignore_eos: true\n"
        ),
        None,
    );
    let data = format!("trace={},block_size=16", trace.display());
    let slo = format!("tpot_mean={:.4}", tpot_bound_ms());
    let (csv, html) = (dir.join("run.csv"), dir.join("run.html"));
    let run = mock_report(
        "sweep",
        "trace sweep",
        &dir,
        Some(&sim),
        &[
            "--data",
            &data,
            "--max-seconds",
            "3",
            "--warmup",
            "0.2",
            "--sweep-size",
            "5",
            "--slo",
            &slo,
            "--slo-tolerance",
            "0.02",
            "--output",
            csv.to_str().expect("utf8"),
            "--output",
            html.to_str().expect("utf8"),
        ],
    );
    let cap = &run["capacity"];
    let t = &cap["trace"];
    let r = recorded_rate();
    assert!((r - 4.0).abs() < 1e-12);
    assert!(
        (f(t, &["recorded_requests_per_s"]) - r).abs() < 1e-9,
        "{cap}"
    );
    // The multiples are the answer's rates over the recorded rate.
    let max = f(cap, &["max_requests_per_s"]);
    let slo_max = f(cap, &["slo_max_requests_per_s"]);
    assert!((f(t, &["max_multiple"]) - max / r).abs() < 1e-9, "{cap}");
    assert!(
        (f(t, &["slo_max_multiple"]) - slo_max / r).abs() < 1e-9,
        "{cap}"
    );
    if let Some(k) = cap["knee_requests_per_s"].as_f64() {
        assert!((f(t, &["knee_multiple"]) - k / r).abs() < 1e-9, "{cap}");
    }
    // ... and the closed form's.
    let (want, want_slo) = (capacity() / r, slo_rate() / r);
    let (got, got_slo) = (f(t, &["max_multiple"]), f(t, &["slo_max_multiple"]));
    eprintln!("multiple {got:.3} vs {want:.3}, SLO multiple {got_slo:.3} vs {want_slo:.3}; {cap}");
    assert!(
        (got - want).abs() <= 0.05 * want,
        "capacity multiple {got} vs {want}"
    );
    assert!(
        (got_slo - want_slo).abs() <= 0.05 * want_slo,
        "SLO multiple {got_slo} vs {want_slo}"
    );

    // The open-loop benchmarks are the trace at speed-ups: each offers speedup x R, the
    // sweep's rates ascend, and the top one passes the capacity.
    let speedups: Vec<f64> = run["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .filter(|b| b["strategy"]["kind"] == "trace")
        .map(|b| {
            let s = &b["strategy"];
            assert_eq!(f(s, &["recorded_rate"]), r, "{s}");
            assert_eq!(b["label"], format!("trace@{:.2}x", f(s, &["speedup"])));
            f(s, &["speedup"])
        })
        .collect();
    assert!(speedups.len() >= 3, "{speedups:?}");
    assert!(
        speedups[..3].windows(2).all(|w| w[1] > w[0]),
        "{speedups:?}"
    );
    assert!(speedups[2] >= 1.1 * got, "{speedups:?}");

    // Every format states the multiple.
    let csv = std::fs::read_to_string(&csv).expect("csv");
    let rows = csv_rows(&csv);
    let col = rows[0]
        .iter()
        .position(|c| c == "capacity_trace_max_multiple")
        .expect("column");
    let cell: f64 = rows[1][col].parse().expect("number");
    assert!((cell - got).abs() < 1e-6 * got, "{cell} vs {got}");
    let html = std::fs::read_to_string(&html).expect("html");
    assert!(
        html.contains(&format!(
            "<p id=\"trace-multiple\">Trace: this deployment carries {got:.2}x the trace"
        )),
        "no trace multiple in the HTML"
    );
    for (console, want_line) in [
        (
            "guidellm",
            format!("Trace multiple: this deployment carries {got:.2}x the trace (recorded mean rate 4.000 req/s)"),
        ),
        ("vllm", format!("Max trace multiple:                      {got:.2}x")),
    ] {
        let out = common::bench(&[
            "report",
            dir.join("run.json").to_str().expect("utf8"),
            "--console",
            console,
        ]);
        let s = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(s.contains(&want_line), "{console}: {s}");
        assert!(s.contains(&format!("SLO holds up to {got_slo:.2}x")) || console == "vllm", "{s}");
    }
}
