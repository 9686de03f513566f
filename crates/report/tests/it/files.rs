//! Report files: JSON round trips (consoles re-rendered from a saved run are identical),
//! the JSON Schema, YAML, CSV, atomic incremental writes, and bad input.

use crate::common;

use std::path::{Path, PathBuf};

use bench_report::{
    parse_metric_percentiles, parse_percentile_metrics, read_run, render_capacity,
    render_capacity_vllm, render_csv, render_guidellm, render_html, render_json, render_vllm,
    write_outputs, Goodput, RunReport, StatsOptions, VllmConsoleOptions, VllmLayout,
};

fn opts() -> StatsOptions {
    StatsOptions {
        goodput: Some(Goodput::parse("ttft:500 tpot:50 e2el:2000").expect("valid")),
        ..StatsOptions::default()
    }
}

fn tmpdir(name: &str) -> PathBuf {
    bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), &format!("report-{name}"))
}

fn consoles(run: &RunReport) -> Vec<String> {
    let all = VllmConsoleOptions {
        percentile_metrics: parse_percentile_metrics(
            "ttft,tpot,itl,e2el,token_latency,itl_per_request,ttft_from_scheduled,e2el_from_scheduled,queue,dispatch_delay",
        )
        .expect("valid"),
        // 12.5 and 99.99 are not saved in the summaries: cut from the histograms.
        metric_percentiles: parse_metric_percentiles("12.5,50,90,99,99.99").expect("valid"),
        layout: VllmLayout::Current,
    };
    vec![
        render_guidellm(run, None),
        render_guidellm(run, Some(100)),
        render_vllm(run, &VllmConsoleOptions::default()),
        render_vllm(run, &all),
        bench_report::render_comparison(
            &[run.clone(), run.clone()],
            &["a".into(), "b".into()],
            None,
        ),
    ]
}

#[test]
fn saved_run_rerenders_every_console_exactly() {
    let run = common::sample_run(&opts());
    let dir = tmpdir("rerender");
    let json = dir.join("run.json");
    let yaml = dir.join("run.yaml");
    write_outputs(&run, &[json.clone(), yaml.clone()]).expect("write");
    let from_json = read_run(&json).expect("read json");
    let from_yaml = read_run(&yaml).expect("read yaml");
    let original = consoles(&run);
    assert_eq!(consoles(&from_json), original);
    assert_eq!(consoles(&from_yaml), original);
    assert_eq!(from_json, run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A ramp-up's record (docs/metrics.md, "Ramp-up") validates against the schema, round-trips
/// through JSON and YAML, and the console says it.
#[test]
fn a_ramp_up_is_in_the_files_and_the_console() {
    use bench_core::{Ramp, RampOver, RampRecord, RampShape, RateChange};
    let validator = common::schema_validator();
    let mut run = common::sample_run(&opts());
    let changes = vec![
        RateChange {
            at_s: 0.0,
            rate: 1.0,
        },
        RateChange {
            at_s: 1.5,
            rate: 2.0,
        },
    ];
    for (b, over) in run.benchmarks.iter_mut().zip(
        [RampOver::Seconds(3.0), RampOver::Requests]
            .into_iter()
            .cycle(),
    ) {
        b.ramp = Some(RampRecord {
            ramp: Ramp {
                shape: RampShape::Linear,
                over,
                from_rps: 0.5,
                in_window: over == RampOver::Requests,
            },
            to: 2.0,
            changes: changes.clone(),
        });
    }
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&run).expect("json")).expect("parse");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(json["benchmarks"][0]["ramp"]["over"]["seconds"], 3.0);
    assert_eq!(json["benchmarks"][1]["ramp"]["over"], "requests");
    let dir = tmpdir("ramp");
    let (j, y) = (dir.join("r.json"), dir.join("r.yaml"));
    write_outputs(&run, &[j.clone(), y.clone()]).expect("write");
    assert_eq!(read_run(&j).expect("json"), run);
    assert_eq!(read_run(&y).expect("yaml"), run);
    let lines = bench_report::ramp_notes(&run);
    assert_eq!(lines.len(), run.benchmarks.len());
    assert!(
        lines[0].contains("linear 1 to 2 streams over 3 s"),
        "{}",
        lines[0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_run_round_trips_through_json_and_yaml() {
    let run = common::session_run(&opts());
    let dir = tmpdir("sessions");
    let (json, yaml) = (dir.join("s.json"), dir.join("s.yaml"));
    write_outputs(&run, &[json.clone(), yaml.clone()]).expect("write");
    let (from_json, from_yaml) = (
        read_run(&json).expect("json"),
        read_run(&yaml).expect("yaml"),
    );
    assert_eq!(from_json, run);
    assert_eq!(from_yaml, run);
    assert_eq!(consoles(&from_json), consoles(&run));
    // The counts sit beside the turns (flattened), as before per-turn figures existed.
    let v: serde_json::Value =
        serde_json::from_str(&render_json(&run).expect("json")).expect("parse");
    let s = &v["benchmarks"][0]["sessions"];
    assert_eq!(
        (s["started"].as_u64(), s["cut"].as_u64()),
        (Some(8), Some(1))
    );
    assert_eq!(s["turns"][1]["turn"].as_u64(), Some(2));
    // A run saved before the per-turn figures (counts only) still reads.
    let mut old = v.clone();
    if let Some(o) = old["benchmarks"][0]["sessions"].as_object_mut() {
        o.remove("turns");
        o.remove("duration_ms");
    }
    let back: RunReport = serde_json::from_value(old).expect("old form reads");
    let s = back.benchmarks[0].sessions.as_ref().expect("sessions");
    assert_eq!((s.counts.started, s.turns.len()), (8, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn committed_sample_run_is_current() {
    // tests/data/sample-run.json feeds the CLI tests and the HTML check script; it must be
    // what the fixture produces today.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample-run.json");
    let fresh = render_json(&common::sample_run(&opts())).expect("json");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write");
    }
    let committed = std::fs::read_to_string(&path).expect("BLESS=1 creates it");
    assert_eq!(committed, fresh);
}

#[test]
fn json_validates_against_the_published_schema() {
    let validator = common::schema_validator();
    let mut keep = opts();
    keep.keep_records = true;
    let mut with_capacity = common::sample_run(&opts());
    with_capacity.capacity = Some(bench_core::Capacity {
        slo: Some("ttft_p99=200".parse().expect("slo")),
        slo_max_requests_per_s: Some(4.0),
        slo_bracket: Some(common::bracket(Some(4.0), None, 2)),
        ..bench_core::Capacity::measured(9.5, 152.0, "concurrent@8".into())
    });
    // The answer is in JSON, YAML (round trip) and CSV columns.
    let dir = tmpdir("capacity");
    let (json, yaml) = (dir.join("c.json"), dir.join("c.yaml"));
    write_outputs(&with_capacity, &[json.clone(), yaml.clone()]).expect("write");
    assert_eq!(read_run(&json).expect("json"), with_capacity);
    assert_eq!(read_run(&yaml).expect("yaml"), with_capacity);
    let csv = render_csv(&with_capacity);
    // A real CSV reader: provenance cells (the data spec) hold quoted commas.
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    let row = reader.records().next().expect("row").expect("valid row");
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(&row[col("capacity_max_requests_per_s")], "9.5");
    assert_eq!(&row[col("capacity_slo_max_requests_per_s")], "4");
    assert_eq!(&row[col("capacity_knee_requests_per_s")], "");
    assert_eq!(&row[col("capacity_max_is_lower_bound")], "false");
    // A capacity no rate crossed says "at least" in every output.
    let mut lower = with_capacity.clone();
    if let Some(c) = lower.capacity.as_mut() {
        c.max_is_lower_bound = true;
    }
    let at_least = "at least 9.50 req/s";
    assert!(render_capacity(&lower).contains(at_least));
    assert!(render_html(&lower).contains(at_least));
    assert!(render_capacity_vllm(&lower).contains("Max is a lower bound:"));
    assert!(!render_capacity(&with_capacity).contains("at least"));
    assert!(!render_capacity_vllm(&with_capacity).contains("lower bound"));
    let csv = render_csv(&lower);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let row = reader.records().next().expect("row").expect("valid row");
    assert_eq!(&row[col("capacity_max_is_lower_bound")], "true");
    // A run with --precision: its verdict validates and round-trips.
    let mut with_precision = common::sample_run(&opts());
    for b in &mut with_precision.benchmarks {
        let p = bench_core::Precision {
            target: 0.05,
            budget_s: 60.0,
        };
        b.precision = Some(bench_report::judge_precision(b, &p));
        b.stop_reason = "precise".into();
    }
    let (pj, py) = (dir.join("p.json"), dir.join("p.yaml"));
    write_outputs(&with_precision, &[pj.clone(), py.clone()]).expect("write");
    assert_eq!(read_run(&pj).expect("json"), with_precision);
    assert_eq!(read_run(&py).expect("yaml"), with_precision);
    for run in [
        with_precision,
        common::sample_run(&opts()),
        common::sample_run(&keep),
        common::sample_run(&StatsOptions::default()),
        with_capacity,
        common::with_server_metrics(common::sample_run(&opts())),
        with_gpus(common::sample_run(&opts())),
        common::session_run(&opts()),
        common::session_run(&keep),
    ] {
        let value: serde_json::Value =
            serde_json::from_str(&render_json(&run).expect("json")).expect("parse");
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    // The schema is strict enough to catch a broken report.
    let mut value: serde_json::Value =
        serde_json::from_str(&render_json(&common::sample_run(&opts())).expect("json"))
            .expect("parse");
    value["benchmarks"][0]["rates"]["requests_per_s"] = serde_json::json!("fast");
    assert!(!validator.is_valid(&value));
    let mut value2: serde_json::Value =
        serde_json::from_str(&render_json(&common::sample_run(&opts())).expect("json"))
            .expect("parse");
    if let Some(o) = value2["benchmarks"][0]["metrics"].as_object_mut() {
        o.remove("ttft_ms");
    }
    assert!(!validator.is_valid(&value2));
    // ... and a broken per-turn row.
    let mut value3: serde_json::Value =
        serde_json::from_str(&render_json(&common::session_run(&opts())).expect("json"))
            .expect("parse");
    assert!(validator.is_valid(&value3));
    if let Some(o) = value3["benchmarks"][0]["sessions"]["turns"][1].as_object_mut() {
        o.remove("ttft_ms");
    }
    assert!(!validator.is_valid(&value3));
}

#[test]
fn csv_has_one_row_per_benchmark() {
    let run = common::sample_run(&opts());
    let csv = render_csv(&run);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + run.benchmarks.len());
    let n = lines[0].split(',').count();
    let mut fields = csv::Reader::from_reader(csv.as_bytes());
    for row in fields.records() {
        assert_eq!(row.expect("row").len(), n, "every row has every column");
    }
    assert!(lines[1].contains(",synchronous,synchronous,"));
    assert!(lines[0].contains("ttft_ms_p99"));
    // Provenance columns: which run, target, model, backend, data, load kind.
    assert!(lines[0].starts_with("run_id,created,target,model,backend,data,rate_type,label,"));
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let h = r.headers().expect("header").clone();
    let col = |row: &csv::StringRecord, name: &str| {
        row.get(h.iter().position(|x| x == name).expect(name))
            .unwrap_or("")
            .to_string()
    };
    for row in r.records() {
        let row = row.expect("row");
        assert_eq!(col(&row, "run_id"), run.run_id);
        assert_eq!(col(&row, "target"), run.environment.target);
        assert_eq!(col(&row, "model"), run.environment.model);
        assert_eq!(col(&row, "backend"), run.environment.backend);
        assert_eq!(col(&row, "data"), "prompt_tokens=128,output_tokens=16");
        assert!(!col(&row, "target").is_empty() && !col(&row, "model").is_empty());
    }
}

#[test]
fn unknown_extension_writes_nothing() {
    let run = common::sample_run(&opts());
    let dir = tmpdir("ext");
    let good = dir.join("a.json");
    let err = write_outputs(&run, &[good.clone(), dir.join("a.txt")]).expect_err("refused");
    assert!(err.to_string().contains("a.txt"), "{err}");
    assert!(!good.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_saved_runs_are_errors_not_panics() {
    let dir = tmpdir("bad");
    assert!(read_run(&dir.join("missing.json")).is_err());
    for (name, text) in [
        ("garbage.json", "not json"),
        ("empty.json", ""),
        ("noversion.json", "{}"),
        ("newer.json", "{\"schema_version\": 999}"),
        ("wrongtype.json", "{\"schema_version\": 1, \"run_id\": 5}"),
        ("bad.yaml", "- [unbalanced"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        let err = read_run(&p).expect_err(name);
        assert!(err.to_string().contains(name), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Child half of `killed_run_leaves_a_valid_file`: writes three benchmarks one by one, then
/// keeps rewriting the file until it is killed (so the kill lands mid-write).
#[test]
fn child_writer() {
    let Some(path) = std::env::var_os("BENCH_REPORT_CHILD_WRITER") else {
        return;
    };
    let path = PathBuf::from(path);
    let full = common::sample_run(&opts());
    let mut run = full.clone();
    run.benchmarks.clear();
    for b in full.benchmarks.iter().take(3) {
        run.benchmarks.push(b.clone());
        write_outputs(
            &run,
            &[
                path.clone(),
                path.with_extension("html"),
                path.with_extension("csv"),
            ],
        )
        .expect("write");
    }
    loop {
        write_outputs(
            &run,
            &[
                path.clone(),
                path.with_extension("html"),
                path.with_extension("csv"),
            ],
        )
        .expect("write");
    }
}

fn count_benchmarks(path: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    // A partial file would fail to parse here: every read must see a whole file.
    let run: RunReport = serde_json::from_str(&text).expect("never a partial file");
    Some(run.benchmarks.len())
}

#[test]
fn killed_run_leaves_a_valid_file_with_every_finished_benchmark() {
    let dir = tmpdir("kill");
    let path = dir.join("run.json");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "files::child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BENCH_REPORT_CHILD_WRITER", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    // Wait (generously: shared CI machine) until the third benchmark is on disk, reading the
    // file all the while.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        // The CSV is written last of the three: once it has three rows, all files do.
        let csv_rows = std::fs::read_to_string(path.with_extension("csv"))
            .map(|c| c.lines().count())
            .unwrap_or(0);
        if count_benchmarks(&path) == Some(3) && csv_rows == 4 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "child never wrote 3 benchmarks"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Let it rewrite a few times, then kill it hard, likely mid-write.
    std::thread::sleep(std::time::Duration::from_millis(50));
    child.kill().expect("kill");
    let _ = child.wait();
    let run = read_run(&path).expect("valid after the kill");
    assert_eq!(run.benchmarks.len(), 3);
    let html = std::fs::read_to_string(path.with_extension("html")).expect("html");
    assert!(html.trim_end().ends_with("</html>"));
    let csv = std::fs::read_to_string(path.with_extension("csv")).expect("csv");
    assert_eq!(csv.lines().count(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_is_self_contained_with_charts() {
    let run = common::sample_run(&opts());
    let html = bench_report::render_html(&run);
    let lower = html.to_ascii_lowercase();
    // Nothing that could load anything: no script, no stylesheet link, no src/href, no CSS
    // url() or @import, no external namespace fetches.
    for needle in [
        "<script", "<link", " src=", "href=", "url(", "@import", "<iframe", "<object", "<embed",
        "<img",
    ] {
        assert!(!lower.contains(needle), "found {needle}");
    }
    // Sweep charts (4 latency + throughput + concurrency) and 3 distributions per benchmark.
    assert_eq!(html.matches("<svg").count(), 6 + 3 * run.benchmarks.len());
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert!(html.matches("<polyline").count() >= 6 + 3 * run.benchmarks.len());
    for b in &run.benchmarks {
        assert!(html.contains(&format!("<summary>{} &mdash;", b.label)));
    }
    assert!(!html.contains("NaN") && !html.contains("inf\""));
}

#[test]
fn capacity_blocks_follow_both_consoles_and_the_knee_needs_a_rise() {
    let mut run = common::sample_run(&opts());
    assert!(!render_guidellm(&run, None).contains("Capacity"));
    // The sample's two rates (4 and 8 req/s) stay on the plateau: no knee within them.
    assert_eq!(bench_report::knee(&run), None);
    assert_eq!(bench_report::knee_threshold_ms(20.0), 50.0);
    // A rate that did not keep up (completed under 95% of it) is past the knee, whatever its
    // TTFT: a short benchmark can end before the queue doubles the median.
    let mut kept = run.clone();
    let rate_of = |label: &str| kept.benchmarks.iter().position(|b| b.label == label);
    let (four, eight) = (
        rate_of("constant@4.00").expect("4"),
        rate_of("constant@8.00").expect("8"),
    );
    kept.benchmarks[four].rates.requests_per_s = 4.0;
    kept.benchmarks[eight].rates.requests_per_s = 7.5;
    assert_eq!(bench_report::knee(&kept), Some(4.0));
    kept.benchmarks[eight].rates.requests_per_s = 7.7;
    assert_eq!(
        bench_report::knee(&kept),
        None,
        "both kept up and stayed on the plateau"
    );
    run.capacity = Some(bench_core::Capacity {
        knee_requests_per_s: Some(4.0),
        slo: Some("ttft_p99=200".parse().expect("slo")),
        slo_max_requests_per_s: Some(4.0),
        slo_bracket: Some(common::bracket(Some(4.0), Some(4.1), 3)),
        ..bench_core::Capacity::measured(9.5, 152.0, "concurrent@8".into())
    });
    let g = render_guidellm(&run, None);
    let tail = &g[g.find("Benchmarks Stats:").expect("stats")..];
    assert!(tail.contains("Capacity:"), "after the tables: {g}");
    assert!(tail.contains("9.50 req/s, 152.0 output tok/s (measured by concurrent@8)"));
    assert!(
        tail.contains(
            // The sample's 4 req/s completed under 95% of it: not served, it meets no SLO.
            "Max rate meeting ttft_p99=200: 4.00 req/s (95%: 0.00-4.00) (bracket 4.00 to 4.10"
        ),
        "{tail}"
    );
    let v = render_vllm(&run, &VllmConsoleOptions::default());
    let last = v.rfind("Serving Benchmark Result").expect("blocks");
    let cap = v
        .find("==================== Capacity ====================")
        .expect("block");
    assert!(cap > last, "after the vLLM blocks");
    assert!(v.contains("Max request throughput (req/s):          9.50"));
    assert!(v.contains("Max rate meeting the SLO (req/s):        4.00"));
}

/// A sweep over a trace: its multiples (docs/metrics.md, "Trace sweep") validate against the
/// schema, round-trip through JSON and YAML, fill the CSV's trace columns and are said by both
/// consoles and the HTML.
#[test]
fn a_trace_sweeps_multiples_are_in_every_output() {
    let validator = common::schema_validator();
    let mut run = common::sample_run(&opts());
    let mut c = bench_core::Capacity {
        knee_requests_per_s: Some(5.0),
        slo: Some("ttft_p99=200".parse().expect("slo")),
        slo_max_requests_per_s: Some(4.0),
        slo_bracket: Some(common::bracket(Some(4.0), Some(4.2), 2)),
        ..bench_core::Capacity::measured(9.5, 152.0, "concurrent@8".into())
    };
    c.set_trace_multiples(2.5);
    let t = c.trace.expect("multiples");
    assert_eq!(
        (t.max_multiple, t.knee_multiple, t.slo_max_multiple),
        (3.8, Some(2.0), Some(1.6))
    );
    run.capacity = Some(c);
    let value: serde_json::Value =
        serde_json::from_str(&render_json(&run).expect("json")).expect("parse");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(value["capacity"]["trace"]["max_multiple"], 3.8);
    let dir = tmpdir("trace-capacity");
    let (json, yaml) = (dir.join("c.json"), dir.join("c.yaml"));
    write_outputs(&run, &[json.clone(), yaml.clone()]).expect("write");
    assert_eq!(read_run(&json).expect("json"), run);
    assert_eq!(read_run(&yaml).expect("yaml"), run);
    let csv = render_csv(&run);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    let row = reader.records().next().expect("row").expect("valid row");
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(&row[col("capacity_trace_recorded_requests_per_s")], "2.5");
    assert_eq!(&row[col("capacity_trace_max_multiple")], "3.8");
    assert_eq!(&row[col("capacity_trace_knee_multiple")], "2");
    assert_eq!(&row[col("capacity_trace_slo_max_multiple")], "1.6");
    let said = "this deployment carries 3.80x the trace (recorded mean rate 2.500 req/s); latency leaves its plateau above 2.00x; its ttft_p99=200 SLO holds up to 1.60x";
    assert!(render_capacity(&run).contains(&format!("Trace multiple: {said}")));
    assert!(render_html(&run).contains(said));
    let vllm = render_capacity_vllm(&run);
    assert!(
        vllm.contains("Max trace multiple:                      3.80x"),
        "{vllm}"
    );
    assert!(
        vllm.contains("Max trace multiple meeting the SLO:      1.60x"),
        "{vllm}"
    );
    // Without an SLO there is no SLO multiple to state.
    let mut no_slo = run.clone();
    if let Some(c) = no_slo.capacity.as_mut() {
        (c.slo, c.slo_bracket, c.slo_max_requests_per_s) = (None, None, None);
        c.refresh_trace_multiples();
    }
    assert!(!render_capacity_vllm(&no_slo).contains("meeting the SLO"));
    assert!(!render_capacity(&no_slo).contains("SLO holds"));
    // Other sweeps say nothing of a trace.
    run.capacity.as_mut().expect("capacity").trace = None;
    assert!(!render_capacity(&run).contains("Trace multiple"));
    assert!(!render_capacity_vllm(&run).contains("trace"));
    let csv = render_csv(&run);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let row = reader.records().next().expect("row").expect("valid row");
    assert_eq!(&row[col("capacity_trace_max_multiple")], "");
}

/// Issue 22 point 5, for the capacity: `bench report a.json b.json` says whether the two runs'
/// capacities differ beyond their 95% intervals or within noise; the capacity lines and the
/// HTML answer carry the interval.
#[test]
fn a_comparison_says_whether_capacities_differ_beyond_their_intervals() {
    let mut a = common::sample_run(&opts());
    let first = &a.benchmarks[0];
    a.capacity = Some(bench_core::Capacity::measured(
        first.rates.requests_per_s,
        first.rates.output_tokens_per_s,
        first.label.clone(),
    ));
    let iv = bench_report::capacity_interval(&a).expect("the synchronous benchmark has one");
    assert!(iv.low < iv.high);
    let line = format!("(95% interval {:.2} to {:.2})", iv.low, iv.high);
    assert!(bench_report::render_capacity(&a).contains(&line));
    assert!(bench_report::render_html(&a).contains(&line));
    let names = ["a".to_string(), "b".to_string()];
    let same = bench_report::render_comparison(&[a.clone(), a.clone()], &names, None);
    assert!(same.contains("(+0.0 %, within noise)"), "{same}");
    // Run b measured 3x the rate with the same relative spread: its interval (3x that of a,
    // 0.74-1.74 req/s) no longer meets a's. At 2x they still overlap: within noise.
    let scaled = |k: f64| {
        let mut b = a.clone();
        let c = b.capacity.as_mut().expect("capacity");
        c.max_requests_per_s *= k;
        let m = &mut b.benchmarks[0];
        m.rates.requests_per_s *= k;
        let r = &mut m.intervals.as_mut().expect("intervals").requests_per_s;
        (r.low, r.high) = (k * r.low, k * r.high);
        bench_report::render_comparison(&[a.clone(), b], &names, None)
    };
    let near = scaled(2.0);
    assert!(near.contains("(+100.0 %, within noise)"), "{near}");
    let apart = scaled(3.0);
    assert!(
        apart.contains("(+200.0 %, beyond the intervals)"),
        "{apart}"
    );
}

#[test]
fn a_run_over_two_targets_counts_each_validates_and_round_trips() {
    use bench_core::{Outcome, Strategy};
    use bench_report::{Accumulator, BenchmarkMeta};
    use common::MS;
    let urls = [
        "http://10.0.0.1:8000/v1/completions".to_string(),
        "http://10.0.0.2:8000/v1/completions".to_string(),
    ];
    let mut keep = opts();
    keep.keep_records = true;
    let mut acc = Accumulator::new(&keep).with_targets(&urls);
    for i in 0..10u64 {
        let sent = i * 100 * MS;
        let outcome = if i == 7 {
            Outcome::Http {
                status: 503,
                body: "overloaded".into(),
                retry_after_ms: None,
            }
        } else {
            Outcome::Completed
        };
        let (ttft, gaps) = if i == 7 {
            (None, &[][..])
        } else {
            (Some(20 * MS), &[5 * MS; 3][..])
        };
        let mut r = common::record(i, sent, sent, sent, ttft, gaps, MS, 100, outcome);
        r.target = Some((i % 2) as u32);
        acc.add(r);
    }
    let meta = BenchmarkMeta::new(
        Strategy::Synchronous,
        0,
        1_100 * MS,
        std::time::SystemTime::UNIX_EPOCH,
    );
    let b = acc.finish(meta);
    let t = b.targets.clone().expect("two targets are counted");
    let row = |i: usize| {
        (
            t[i].url.as_str(),
            t[i].requests,
            t[i].completed,
            t[i].errored,
            t[i].output_tokens,
        )
    };
    // Every completed request carries 4 tokens; the errored one (target 1) none.
    assert_eq!(row(0), (urls[0].as_str(), 5, 5, 0, 20));
    assert_eq!(row(1), (urls[1].as_str(), 5, 4, 1, 16));
    let mut run = common::sample_run(&opts());
    run.benchmarks = vec![b];
    let dir = tmpdir("targets");
    let (json, yaml) = (dir.join("t.json"), dir.join("t.yaml"));
    write_outputs(&run, &[json.clone(), yaml.clone()]).expect("write");
    assert_eq!(read_run(&json).expect("json"), run);
    assert_eq!(read_run(&yaml).expect("yaml"), run);
    let validator = common::schema_validator();
    let mut value: serde_json::Value =
        serde_json::from_str(&render_json(&run).expect("json")).expect("parse");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(value["benchmarks"][0]["records"][3]["target"], 1);
    value["benchmarks"][0]["targets"][0]["sent"] = serde_json::json!(5);
    assert!(!validator.is_valid(&value), "an unknown field is refused");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run` with every benchmark's GPU figures from two DCGM exporters (`--gpu-metrics`).
fn with_gpus(mut run: bench_report::RunReport) -> bench_report::RunReport {
    use bench_servermetrics::gpu::{combine, GpuNode};
    let g = |mean: f64| {
        Some(bench_servermetrics::GaugeSummary {
            mean,
            max: mean + 10.0,
            last: mean,
        })
    };
    let node = |url: &str| GpuNode {
        url: url.into(),
        gpus: 4,
        power_w: g(1600.0),
        utilization_pct: g(75.0),
        memory_used_mib: g(300_000.0),
        energy_j: Some(16_000.0),
    };
    for b in &mut run.benchmarks {
        b.gpu_metrics = combine(
            vec![node("http://a:9400/metrics"), node("http://b:9400/metrics")],
            64_000,
            500,
        );
    }
    run
}
