//! The client's own cancellations as load (`--cancel-rate`, `--cancel-after`; docs/metrics.md,
//! "Cancellation"), end to end against the simulator: its request log shows the server saw
//! every cancelled request leave, and the requests that completed got the slots the
//! cancelled ones freed, as the engine's closed form says.
//!
//! Closed form (docs/simulator.md, "Steady-state capacity"): `B` closed-loop streams on a batch
//! of `B` slots never queue; a request is admitted at a step boundary and holds its slot
//! `C = (ceil(P / S) + n - 1) S`. A share `c` of the requests is cancelled `d` after its send
//! (`d < C`): the server frees its slot at its next step, and its stream sends the next request
//! at once. A stream's request waits for the next boundary: about a whole step `S` after a
//! completed request (it ended on one), half of one on average after a cancelled one, so
//! `w = S (1 - c / 2)`. Each stream's requests follow each other back to back, so the
//! completed requests leave at `X = B (1 - c) / ((1 - c)(C + w) + c d)`. Here (the small
//! simulator, 256/64 tokens: `S` = 8 ms, `P` = 13.8 ms, `C` = 520 ms), with a quarter cancelled
//! after 0.2 s: 26.95 req/s, against 30.3 with no cancellation, and 22.7 if the server kept
//! serving the cancelled requests to their end (a quarter of the slots held for nothing).

use crate::common;

use common::{f, fresh, mock_report, read_log, serial, write_sim};

const SIM: &str = "max_batch: 16\nstep_base_ms: 4\nstep_per_seq_ms: 0.25\nprefill_overhead_ms: 1\nprefill_rate: 20000\n";
const B: f64 = 16.0;
const N: f64 = 64.0;

/// The completed requests' rate (req/s) with a share `c` cancelled `d` seconds after sending.
fn completed_rate(c: f64, d: f64) -> f64 {
    let s = 4.0 + 0.25 * B;
    let p = 1.0 + 256.0 / 20_000.0 * 1e3;
    let hold = ((p / s).ceil() + N - 1.0) * s / 1e3;
    let wait = s * (1.0 - c / 2.0) / 1e3;
    B * (1.0 - c) / ((1.0 - c) * (hold + wait) + c * d)
}

#[test]
fn cancelled_requests_leave_the_server_and_free_their_slots_for_the_others() {
    let _one = serial();
    let dir = fresh("cancellation", "closed");
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, SIM, Some(&log));
    let (html, csv) = (dir.join("run.html"), dir.join("run.csv"));
    let run = mock_report(
        "run",
        "cancel",
        &dir,
        Some(&cfg),
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "16",
            "--max-seconds",
            "10",
            "--data",
            "prompt_tokens=256,output_tokens=64",
            "--cancel-rate",
            "25%",
            "--cancel-after",
            "200ms",
            "--output",
            html.to_str().expect("utf8"),
            "--output",
            csv.to_str().expect("utf8"),
        ],
    );
    let entries = read_log(&log);
    let (html, csv) = (
        std::fs::read_to_string(&html).expect("html"),
        std::fs::read_to_string(&csv).expect("csv"),
    );
    let _ = std::fs::remove_dir_all(&dir);
    let b = &run["benchmarks"][0];
    let r = &b["requests"];
    let (cancelled, total) = (f(r, &["cancelled"]), f(r, &["total"]));
    eprintln!("{r}");
    // Exactly every fourth request the benchmark sent (all of them measured: no warmup), each
    // its own outcome: none errored or cut off.
    assert_eq!(f(r, &["errored"]) + f(r, &["incomplete"]), 0.0, "{r}");
    assert!((cancelled - (total / 4.0).floor()).abs() <= 1.0, "{r}");
    assert_eq!(b["cancellation"]["share"], 0.25, "{}", b["cancellation"]);
    // The HTML's summary has a Cancelled column and the benchmark a line; the CSV the count.
    let n = cancelled.to_string();
    assert!(html.contains("<th>Cancelled</th>"), "html summary: {r}");
    assert!(
        html.contains(&format!("on purpose (<code>--cancel-rate</code>): {n} of")),
        "html line: {r}"
    );
    assert_eq!(common::csv_cell(&csv, "requests_cancelled"), n, "csv");
    // The server saw each of them leave, about 0.2 s after it arrived, before its last token.
    let gone: Vec<_> = entries
        .iter()
        .filter(|e| e["end"] == "client_gone")
        .collect();
    assert_eq!(gone.len() as f64, cancelled, "the simulator's log: {r}");
    assert_eq!(entries.len() as f64, total, "the simulator's log: {r}");
    for e in &gone {
        let out = e["output_tokens"].as_u64().expect("output_tokens");
        let held = (e["last_token_unix_ns"].as_u64().unwrap_or(0) as f64
            - e["arrival_unix_ns"].as_u64().expect("arrival") as f64)
            / 1e9;
        assert!(out > 0 && (out as f64) < N, "{e}");
        assert!(held < 0.2 + 0.05, "{e}");
    }
    // The others got the slots the cancelled ones freed.
    let (got, want) = (
        f(b, &["rates", "requests_per_s"]),
        completed_rate(0.25, 0.2),
    );
    eprintln!(
        "completed {got:.2} req/s, closed form {want:.2} (none cancelled {:.2})",
        completed_rate(0.0, 0.0)
    );
    assert!((got - want).abs() <= 0.03 * want, "{got} vs {want}");
}

/// Bad values are one line naming the flag or key, exit 2; AIPerf's spellings and the profile
/// keys set the same cancellation, and `--show-config` writes it back.
#[test]
fn bad_cancellations_are_usage_errors_and_every_spelling_sets_one() {
    use common::{bench, text};
    let run = [
        "run",
        "--mock",
        "--rate-type",
        "constant",
        "--rate",
        "5",
        "--max-seconds",
        "1",
    ];
    for (extra, culprit) in [
        (&["--cancel-rate", "0"][..], "--cancel-rate"),
        (&["--cancel-rate", "150%"][..], "--cancel-rate"),
        (&["--cancel-rate", "often"][..], "--cancel-rate"),
        (
            &["--cancel-rate", "10%", "--cancel-after", "-1"][..],
            "--cancel-after",
        ),
        (
            &["--cancel-rate", "10%", "--cancel-after", "soon"][..],
            "--cancel-after",
        ),
        (&["--cancel-after", "1s"][..], "--cancel-after"),
        (
            &["--request-cancellation-rate", "0"][..],
            "--request-cancellation-rate",
        ),
        (
            &["--cancel-rate", "10%", "--request-cancellation-rate", "10"][..],
            "--request-cancellation-rate",
        ),
        (
            &[
                "--cancel-rate",
                "10%",
                "--data",
                "turns=2,prompt_tokens=8,output_tokens=4",
            ][..],
            "sessions",
        ),
    ] {
        let out = bench(&[&run[..], extra].concat());
        common::usage_error(&out, culprit, &format!("{extra:?}"));
    }
    let dir = fresh("cancellation", "keys");
    let profile = dir.join("p.yaml");
    std::fs::write(
        &profile,
        "mock: true\nrate_type: constant\nrate: 5\nmax_seconds: 1\nrequest_cancellation_rate: 25\nrequest_cancellation_delay: 0.25\n",
    )
    .expect("write profile");
    let shown = |args: &[&str]| {
        let out = bench(&[&["run", "--show-config"][..], args].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let from_keys = shown(&["--profile", profile.to_str().expect("utf8")]);
    let aiperf = [
        "--request-cancellation-rate",
        "25",
        "--request-cancellation-delay",
        "250ms",
    ];
    let from_flags = shown(&[&run[1..], &aiperf[..]].concat());
    for s in [&from_keys, &from_flags] {
        assert!(
            s.contains("cancel_rate: 0.25") && s.contains("cancel_after: 0.25"),
            "{s}"
        );
    }
    // What --show-config wrote loads back to the same settings.
    std::fs::write(&profile, &from_flags).expect("write profile");
    assert_eq!(
        shown(&["--profile", profile.to_str().expect("utf8")]),
        from_flags
    );
    let _ = std::fs::remove_dir_all(&dir);
}
