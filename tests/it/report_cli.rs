//! `bench report` end to end: the real binary re-renders a saved run exactly as the run
//! printed it (the expected texts were rendered from the in-memory run before it was saved),
//! writes other formats, compares runs, and rejects bad input with exit code 2.

use crate::common;

use std::path::PathBuf;
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sample() -> PathBuf {
    root().join("crates/report/tests/data/sample-run.json")
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(root().join("crates/report/tests/expected").join(name))
        .expect("expected file")
}

fn bench(args: &[&str]) -> Output {
    common::bench_command()
        .args(args)
        .output()
        .expect("run bench")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

#[test]
fn report_reproduces_the_original_guidellm_console() {
    let s = sample();
    let out = bench(&["report", s.to_str().expect("path")]);
    assert_eq!(stdout(&out), expected("guidellm-piped.txt"));
}

#[test]
fn report_reproduces_the_original_vllm_console() {
    let s = sample();
    let out = bench(&["report", s.to_str().expect("path"), "--console", "vllm"]);
    assert_eq!(stdout(&out), expected("vllm-current-goodput.txt"));
    let both = bench(&["report", s.to_str().expect("path"), "--console", "both"]);
    assert_eq!(
        stdout(&both),
        format!(
            "{}\n{}",
            expected("guidellm-piped.txt"),
            expected("vllm-current-goodput.txt")
        )
    );
    let none = bench(&["report", s.to_str().expect("path"), "--console", "none"]);
    assert_eq!(stdout(&none), "");
}

#[test]
fn report_writes_other_formats_and_compares_runs() {
    let dir = common::fresh("report-cli", "runs");
    let s = sample();
    let (json, html, csv) = (dir.join("b.json"), dir.join("r.html"), dir.join("r.csv"));
    let out = bench(&[
        "report",
        s.to_str().expect("path"),
        "--console",
        "none",
        "--output",
        json.to_str().expect("path"),
        "-o",
        html.to_str().expect("path"),
        "--output",
        csv.to_str().expect("path"),
    ]);
    stdout(&out);
    assert!(
        std::fs::read_to_string(&json).expect("json")
            == std::fs::read_to_string(&s).expect("sample"),
        "re-written JSON differs from the saved run"
    );
    assert!(std::fs::read_to_string(&html)
        .expect("html")
        .contains("<svg"));
    assert_eq!(
        std::fs::read_to_string(&csv).expect("csv").lines().count(),
        5
    );
    let cmp_html = dir.join("cmp.html");
    let cmp = stdout(&bench(&[
        "report",
        s.to_str().expect("path"),
        json.to_str().expect("path"),
        "--output",
        cmp_html.to_str().expect("path"),
    ]));
    assert!(cmp.starts_with("Runs compared:\n"), "{cmp}");
    // Overlaid by rate: every benchmark of both runs, ordered by its rate.
    let rates: Vec<f64> = cmp
        .lines()
        .filter_map(|l| l.split('|').next()?.trim().parse().ok())
        .collect();
    assert_eq!(rates.len(), 8, "{cmp}");
    assert!(rates.windows(2).all(|w| w[0] <= w[1]), "{rates:?}\n{cmp}");
    for label in [
        "synchronous",
        "throughput",
        "constant@4.00",
        "constant@8.00",
    ] {
        assert_eq!(cmp.matches(label).count(), 2, "{label} in {cmp}");
    }
    let page = std::fs::read_to_string(&cmp_html).expect("comparison html");
    assert!(page.contains("bench comparison of 2 runs") && page.contains("class=\"curve\""));
    let bad = bench(&[
        "report",
        s.to_str().expect("path"),
        json.to_str().expect("path"),
        "--output",
        "/tmp/cmp.csv",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_usage_errors_exit_2_naming_the_culprit() {
    let s = sample();
    let s = s.to_str().expect("path");
    for (args, culprit) in [
        (
            vec!["report", "/nonexistent/run.json"],
            "/nonexistent/run.json",
        ),
        (
            vec!["report", s, "--metric-percentiles", "0,101"],
            "--metric-percentiles",
        ),
        (
            vec!["report", s, "--percentile-metrics", "ttft,nope"],
            "nope",
        ),
        (vec!["report", s, "--output", "/tmp/x.docx"], "x.docx"),
        (vec!["report", s, s, "--output", "/tmp/x.json"], "--output"),
        (vec!["report", s, "--console", "fancy"], "fancy"),
    ] {
        let o = bench(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(culprit), "{args:?}: {err}");
    }
}
