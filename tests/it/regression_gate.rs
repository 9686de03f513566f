//! The regression gate (`bench report BASE.json NEW.json --fail-on RULES`, docs/reports.md,
//! "The regression gate") on two saved sweeps of the simulator at different speeds: the same
//! engine with a decode step of 4 ms and of 6 ms (every rate about a third lower, every
//! inter-token gap half again as long). Against the fast run the slow one fails with exit 3,
//! one line per failure naming the benchmark, the figure, both values and both intervals; the
//! fast run against itself passes; the Markdown summary says the same.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

const RULES: &str = "requests_per_s<-5%,ttft_p99>+10%,itl_p50>+5%,capacity<-5%";

/// A sweep of the simulator with decode steps of `step_ms`, saved to `DIR/NAME.json`. The
/// capacity's precision makes the maximum's benchmark long enough to carry an interval.
fn sweep(dir: &Path, name: &str, step_ms: u32) -> PathBuf {
    let cfg = dir.join(format!("{name}.yaml"));
    std::fs::write(&cfg, format!("max_batch: 16\nstep_base_ms: {step_ms}\n")).expect("sim");
    let out = dir.join(format!("{name}.json"));
    let o = common::bench(&[
        "sweep",
        "--mock",
        "--mock-config",
        cfg.to_str().expect("path"),
        "--max-seconds",
        "4",
        "--sweep-size",
        "5",
        "--capacity-precision",
        "5%",
        "--data",
        "prompt_tokens=64,output_tokens=16",
        "--console",
        "none",
        "--quiet",
        "--output",
        out.to_str().expect("path"),
    ]);
    assert!(o.status.success(), "{}", common::text(&o.stderr));
    out
}

fn gate(base: &Path, new: &Path, md: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "report",
        base.to_str().expect("path"),
        new.to_str().expect("path"),
        "--fail-on",
        RULES,
        "--console",
        "none",
        "--output",
        md.to_str().expect("path"),
    ];
    args.extend_from_slice(extra);
    common::bench(&args)
}

/// The value and interval of a failure line's side: `12.86 (95% 12.75 to 12.97)`.
fn sides(line: &str) -> Vec<(f64, f64, f64)> {
    let tail = line.split_once("): ").expect("values").1;
    tail.split(" -> ")
        .map(|side| {
            let nums: Vec<f64> = side
                .replace("(95% ", " ")
                .replace([')', ','], " ")
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            assert_eq!(nums.len(), 3, "value, low, high in `{side}` of {line}");
            (nums[0], nums[1], nums[2])
        })
        .collect()
}

#[test]
fn a_slower_simulator_fails_the_gate_naming_its_figures_and_a_run_against_itself_passes() {
    let _one = common::serial();
    let dir = common::fresh("gate", "speeds");
    let fast = sweep(&dir, "fast", 4);
    let slow = sweep(&dir, "slow", 6);

    let md = dir.join("cmp.md");
    let o = gate(&fast, &slow, &md, &[]);
    let err = common::text(&o.stderr);
    eprintln!("{err}");
    assert_eq!(o.status.code(), Some(3), "{err}");
    let failures: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("regression: "))
        .collect();
    for want in [
        "synchronous: requests_per_s ",
        "synchronous: itl_p50 ",
        "capacity answer: capacity ",
    ] {
        assert!(
            failures.iter().any(|l| l.starts_with(want)),
            "no failure `{want}` in {failures:?}"
        );
    }
    for line in &failures {
        // Both values with their intervals, apart, and the change past the rule's threshold.
        let s = sides(line);
        let ((a, a_low, a_high), (b, b_low, b_high)) = (s[0], s[1]);
        assert!(
            a_high < b_low || b_high < a_low,
            "intervals overlap: {line}"
        );
        let pct = (b - a) / a * 100.0;
        let (rate, latency) = (line.contains("<-5%"), line.contains(">+"));
        assert!(
            (rate && pct < -5.0) || (latency && pct > 5.0),
            "{pct:.1}%: {line}"
        );
        assert!(line.ends_with("beyond the intervals"), "{line}");
    }
    // A third less throughput, half again the decode step: on every side of the closed form.
    let itl = failures
        .iter()
        .find(|l| l.starts_with("synchronous: itl_p50"))
        .expect("itl");
    let (s0, s1) = (sides(itl)[0].0, sides(itl)[1].0);
    assert!((s1 / s0 - 1.5).abs() < 0.1, "ITL {s0} -> {s1}: {itl}");
    assert!(err.contains(&format!("{} failed", failures.len())), "{err}");

    let summary = std::fs::read_to_string(&md).expect("cmp.md");
    assert!(
        summary.contains("### Regression gate: **failed**"),
        "{summary}"
    );
    assert!(
        summary.contains("| synchronous | `requests_per_s<-5%` |"),
        "{summary}"
    );
    assert!(summary.contains("### Changes against fast"), "{summary}");

    // The fast run against itself: every change 0, every rule passes.
    let o = gate(&fast, &fast, &md, &["--fail-on-unjudged"]);
    let err = common::text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("regression:"), "{err}");
    assert!(err.contains("check(s): 0 failed"), "{err}");
    let summary = std::fs::read_to_string(&md).expect("cmp.md");
    assert!(summary.contains("### Regression gate: passed"), "{summary}");
}
