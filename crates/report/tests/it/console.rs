//! Snapshot tests of the console formats on fixed record sets, and layout checks against the
//! real guidellm and vLLM outputs in `tests/seeds/`. Set `BLESS=1` to rewrite the expected
//! files after an intended change (then review the diff).

use crate::common;

use std::path::PathBuf;

use bench_report::{
    parse_metric_percentiles, parse_percentile_metrics, render_guidellm, render_vllm, Goodput,
    StatsOptions, VllmConsoleOptions, VllmLayout,
};

fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expected")
        .join(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, actual).expect("write expected file");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to create)", path.display()));
    if expected != actual {
        panic!(
            "{name} differs from {}:\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        );
    }
}

fn seed(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/seeds")
        .join(name);
    std::fs::read_to_string(&path).expect("seed file")
}

fn goodput_opts() -> StatsOptions {
    StatsOptions {
        goodput: Some(Goodput::parse("ttft:500 tpot:50 e2el:2000").expect("valid")),
        ..StatsOptions::default()
    }
}

#[test]
fn guidellm_console_piped() {
    let run = common::sample_run(&StatsOptions::default());
    check("guidellm-piped.txt", &render_guidellm(&run, None));
}

#[test]
fn guidellm_console_fitted_to_120_and_80_columns() {
    let run = common::sample_run(&StatsOptions::default());
    let text = render_guidellm(&run, Some(120));
    for line in text.lines() {
        assert!(line.chars().count() <= 120, "too wide: {line:?}");
    }
    check("guidellm-w120.txt", &text);
    let text = render_guidellm(&run, Some(80));
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "too wide: {line:?}");
    }
    check("guidellm-w80.txt", &text);
}

#[test]
fn vllm_console_default_layout_with_goodput() {
    let run = common::sample_run(&goodput_opts());
    check(
        "vllm-current-goodput.txt",
        &render_vllm(&run, &VllmConsoleOptions::default()),
    );
}

#[test]
fn vllm_console_all_metrics_p50_to_p99() {
    let run = common::sample_run(&StatsOptions::default());
    let opts = VllmConsoleOptions {
        percentile_metrics: parse_percentile_metrics("ttft,tpot,itl,e2el,token_latency")
            .expect("valid"),
        metric_percentiles: parse_metric_percentiles("50,75,90,95,99").expect("valid"),
        layout: VllmLayout::Classic,
    };
    check("vllm-classic-p50-p99.txt", &render_vllm(&run, &opts));
}

#[test]
fn vllm_console_cuts_unsaved_percentiles_from_histograms() {
    // p12.5 is not in the saved summaries: it must come from the serialized histogram and
    // lie between the saved min and median.
    let run = common::sample_run(&StatsOptions::default());
    let b = &run.benchmarks[1];
    let m = bench_report::Metric::Ttft;
    let p = b.percentile_ms(m, 12.5).expect("non-empty");
    assert!(p >= b.metric(m).min && p <= b.metric(m).median, "{p}");
    let opts = VllmConsoleOptions {
        percentile_metrics: vec![m],
        metric_percentiles: vec![12.5],
        layout: VllmLayout::Classic,
    };
    let text = render_vllm(&run, &opts);
    assert!(text.contains(&format!(
        "{:<40} {:<10}\n",
        "P12.5 TTFT (ms):",
        format!("{p:.2}")
    )));
}

/// The label column (before col 41) and the line widths of vLLM's blocks.
fn vllm_shape(block: &str) -> Vec<(String, usize)> {
    block
        .lines()
        .map(|l| {
            let label: String = l.chars().take(41).collect();
            (label.trim_end().to_string(), l.chars().count())
        })
        .collect()
}

fn first_block(text: &str) -> String {
    let start = text.find("============ Serving").expect("a result block");
    let rest = &text[start..];
    let end = rest
        .find("==================================================")
        .expect("block end")
        + 50;
    format!("{}\n", &rest[..end])
}

#[test]
fn vllm_blocks_have_the_seeds_layout() {
    let run = common::sample_run(&StatsOptions::default());
    let cases: [(&str, &str, &str); 4] = [
        ("tgi-book-num-prompts-sweep.txt", "ttft,tpot,itl", "99"),
        (
            "vllm-num-prompts-sweep-seq80-10000-128k.txt",
            "ttft,tpot,itl",
            "99",
        ),
        (
            "vllm-percentiles-p50-p99.txt",
            "ttft,tpot,itl,e2el",
            "50,75,90,95,99",
        ),
        (
            "vllm-poisson-rate4-sharegpt.txt",
            "ttft,tpot,itl,e2el,token_latency",
            "99",
        ),
    ];
    for (file, metrics, percentiles) in cases {
        let opts = VllmConsoleOptions {
            percentile_metrics: parse_percentile_metrics(metrics).expect("valid"),
            metric_percentiles: parse_metric_percentiles(percentiles).expect("valid"),
            layout: VllmLayout::Classic,
        };
        let ours = first_block(&render_vllm(&run, &opts));
        let theirs = first_block(&seed(file));
        assert_eq!(
            vllm_shape(&ours),
            vllm_shape(&theirs),
            "layout differs from {file}"
        );
    }
}

/// Column names of a guidellm table, read from the header line that starts with "Benchmark"
/// (after undoing the seed's 120-column wrapping).
fn seed_columns(section: &str) -> Vec<String> {
    let text = seed("guidellm-sweep-console.txt");
    let start = text.find(section).expect("section");
    let lines: Vec<&str> = text[start..].lines().collect();
    // The seed wraps every table line at 120 columns: join each pair.
    let header = format!("{}{}", lines[5].trim_end(), lines[6].trim());
    header.split('|').map(|s| s.trim().to_string()).collect()
}

fn our_columns(text: &str, section: &str) -> Vec<String> {
    let start = text.find(section).expect("section");
    let lines: Vec<&str> = text[start..].lines().collect();
    // Line 2 holds group titles, line 3 the column names.
    lines[3].split('|').map(|s| s.trim().to_string()).collect()
}

#[test]
fn guidellm_tables_have_the_seeds_columns() {
    let run = common::sample_run(&StatsOptions::default());
    let text = render_guidellm(&run, None);
    for section in ["Benchmarks Info:", "Benchmarks Stats:"] {
        assert_eq!(
            our_columns(&text, section),
            seed_columns(section),
            "{section}"
        );
    }
    for label in [
        "synchronous",
        "throughput",
        "constant@4.00",
        "constant@8.00",
    ] {
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with(&format!("{label}|")))
                .count(),
            2,
            "row {label} in both tables"
        );
    }
    assert!(text.contains("    Run id:93e36b31-b454-471d-ba62-6b2671585485\n"));
}

#[test]
fn server_metrics_show_in_both_consoles_and_the_html_only_when_scraped() {
    let plain = common::sample_run(&StatsOptions::default());
    let run = common::with_server_metrics(plain.clone());
    let b = run.benchmarks[0]
        .server_metrics
        .as_ref()
        .expect("summarized");
    // Synthetic scrapes: 4 running at every periodic scrape, 500 tokens over the benchmark,
    // TTFT buckets: 10 at <= 50 ms, 10 more at <= 100 ms -> p50 = 50 ms.
    let s = &b.summary;
    assert_eq!(s.running.map(|g| (g.mean, g.max)), Some((4.0, 4.0)));
    assert_eq!(
        s.waiting.map(|g| (g.mean, g.max, g.last)),
        Some((2.5, 4.0, 4.0))
    );
    assert_eq!(s.generation_tokens.map(|c| c.delta), Some(500.0));
    let ttft = s.ttft_ms.as_ref().expect("ttft");
    assert_eq!((ttft.count, ttft.p50), (20.0, 50.0));
    assert!(
        b.metrics.contains_key("some_other_gauge"),
        "unknown metrics kept"
    );

    let g = render_guidellm(&run, None);
    assert!(
        g.contains("Server Metrics:") && g.contains("Server TTFT (ms)"),
        "{g}"
    );
    let v = render_vllm(&run, &VllmConsoleOptions::default());
    assert!(
        v.contains("Mean running requests:                   4.00"),
        "{v}"
    );
    assert!(v.contains("P99 server TTFT (ms):"), "{v}");
    let h = bench_report::render_html(&run);
    for want in [
        "Server queue vs request rate",
        "TTFT: server vs client",
        "server queue over the benchmark",
        "<code>some_other_gauge</code>",
    ] {
        assert!(h.contains(want), "{want} missing");
    }
    // Without server metrics nothing changes.
    assert!(!render_guidellm(&plain, None).contains("Server Metrics"));
    assert!(!render_vllm(&plain, &VllmConsoleOptions::default()).contains("Server metrics"));
    assert!(!bench_report::render_html(&plain).contains("Server side"));
}

/// A benchmark without samples shows a dash for its latencies in both consoles, never a
/// made-up 0.00 (issue 13, defect 7).
#[test]
fn benchmark_without_samples_shows_dashes_not_zeros() {
    let mut run = common::sample_run(&StatsOptions::default());
    let empty = bench_report::Accumulator::new(&StatsOptions::default()).finish(
        bench_report::BenchmarkMeta::new(
            bench_core::Strategy::Synchronous,
            0,
            1_000_000_000,
            std::time::SystemTime::UNIX_EPOCH,
        ),
    );
    run.benchmarks = vec![empty];
    let v = render_vllm(&run, &VllmConsoleOptions::default());
    for line in v
        .lines()
        .filter(|l| l.contains("TTFT") || l.contains("ITL"))
    {
        if line.contains("(ms):") {
            assert!(line.trim_end().ends_with(" -"), "{line}\n{v}");
        }
    }
    assert!(
        !v.contains("TTFT (ms):                          0.00"),
        "{v}"
    );
    let g = render_guidellm(&run, None);
    // The stats row: the four latency metrics' mean / median / p99 are all dashes.
    let row = g
        .lines()
        .rfind(|l| l.trim_start().starts_with("synchronous|"))
        .expect("stats row");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert!(cells.len() >= 12, "{row}");
    assert!(cells[cells.len() - 12..].iter().all(|c| *c == "-"), "{row}");
}

/// Sessions: a "Sessions" and a "Per-Turn Stats" table after the usual ones (guidellm), a
/// "Sessions" and a "Per turn" section in the vLLM block, HTML tables and CSV columns; nothing
/// of it for benchmarks without sessions.
#[test]
fn sessions_show_per_turn_in_both_consoles_html_and_csv_only_when_used() {
    let run = common::session_run(&StatsOptions::default());
    let s = run.benchmarks[0].sessions.as_ref().expect("sessions");
    // The fixture by hand: 8 sessions; turn 1 of each completed (8), turn 2 of 7 (session 7
    // cut), turn 3 of 6 (session 5 errored), turn 4 of 6.
    let done: Vec<u64> = s.turns.iter().map(|t| t.requests.completed).collect();
    assert_eq!(done, vec![8, 7, 6, 6]);
    assert_eq!(
        (s.turns[1].requests.incomplete, s.turns[2].requests.errored),
        (1, 1)
    );
    let prompts: Vec<f64> = s.turns.iter().map(|t| t.prompt_tokens.mean).collect();
    assert_eq!(prompts, vec![128.0, 272.0, 416.0, 560.0]);
    assert!(s.turns[0].ttft_ms.mean > 2.0 * s.turns[1].ttft_ms.mean);
    assert_eq!(s.duration_ms.count, 6);

    let g = render_guidellm(&run, Some(120));
    for line in g.lines() {
        assert!(line.chars().count() <= 120, "too wide: {line:?}");
    }
    check("guidellm-sessions-w120.txt", &g);
    let stats = g.find("Benchmarks Stats:").expect("stats");
    let turns = g.find("Per-Turn Stats:").expect("per-turn table");
    assert!(stats < g.find("Sessions:").expect("sessions table") && stats < turns);
    let v = render_vllm(&run, &VllmConsoleOptions::default());
    check("vllm-sessions.txt", &v);
    assert!(
        v.contains("Sessions cut (by the benchmark's end):   1"),
        "{v}"
    );
    let h = bench_report::render_html(&run);
    assert!(h.contains("<table class=\"turns\">") && h.contains("<h3>Sessions</h3>"));
    let csv = bench_report::render_csv(&run);
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header = r.headers().expect("header").clone();
    let row = r.records().next().expect("row").expect("valid");
    let col = |name: &str| &row[header.iter().position(|x| x == name).expect(name)];
    assert_eq!(
        (
            col("sessions_started"),
            col("sessions_cut"),
            col("sessions_errored")
        ),
        ("8", "1", "1")
    );
    assert!(!col("session_duration_ms_mean").is_empty());

    let plain = common::sample_run(&StatsOptions::default());
    assert!(!render_guidellm(&plain, None).contains("Per-Turn"));
    assert!(!render_vllm(&plain, &VllmConsoleOptions::default()).contains("Sessions"));
    assert!(!bench_report::render_html(&plain).contains("class=\"turns\""));
}
