//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `.ci/setup`) loads the page with every network request routed to a loopback proxy that
//! records them, logs console messages, and takes a screenshot (kept under the target dir for
//! a human to look at). A negative control page proves the detectors work.
//!
//! Without Chromium the test is skipped locally and fails under CI (`CI` set).

use crate::common;

use crate::chromium::{chromium_or_skip, dump_dom, visit};

#[test]
fn html_report_renders_in_chromium_offline_without_errors() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let work = bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), "html-chromium");

    // Negative control: an external image and a script error must both be caught.
    let bad = work.join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\"><script>console.error('boom')</script></body></html>",
    )
    .expect("write");
    let v = visit(&chromium, &bad, &work, &work.join("bad.png"), "1300,2400");
    assert!(
        v.page_requests
            .iter()
            .any(|l| l.contains("example.invalid")),
        "proxy saw {:?}",
        v.page_requests
    );
    assert!(
        v.console.iter().any(|l| l.contains("boom")),
        "{:?}",
        v.console
    );

    let mut run =
        common::with_server_metrics(common::sample_run(&bench_report::StatsOptions::default()));
    run.capacity = Some(sample_capacity());
    run.benchmarks.extend(
        common::session_run(&bench_report::StatsOptions::default())
            .benchmarks
            .into_iter()
            .map(|mut b| {
                b.label = "sessions".into();
                b
            }),
    );
    let page = work.join("report.html");
    bench_report::write_outputs(&run, std::slice::from_ref(&page)).expect("write html");
    let shot = work.join("report.png");
    let v = visit(&chromium, &page, &work, &shot, "1300,2400");
    assert!(
        v.page_requests.is_empty(),
        "network requests: {:?}",
        v.page_requests
    );
    assert!(v.console.is_empty(), "console messages: {:?}", v.console);
    assert!(
        v.screenshot.starts_with(b"\x89PNG\r\n\x1a\n"),
        "no screenshot: {}",
        v.diagnostics
    );
    // A blank page compresses to a few KB; charts and tables make it far larger.
    assert!(
        v.screenshot.len() > 50_000,
        "screenshot only {} bytes",
        v.screenshot.len()
    );
    eprintln!("screenshot: {}", shot.display());
    // The DOM Chromium built holds the answer, the curves, the probes and the lines.
    let dom = dump_dom(&chromium, &page, &work, "1300,2400");
    for want in [
        "id=\"capacity\"",
        "Capacity: 9.50 req/s",
        "class=\"curve\"",
        "class=\"probe\"",
        "class=\"mark slo\"",
        "class=\"mark knee\"",
        "class=\"mark capacity\"",
        "SLO ttft_p99 ≤ 200 ms",
        "<table class=\"turns\">",
        "<td>94.8 / 94.0 / 98.0</td>",
        "sessions: TTFT by turn",
    ] {
        assert!(dom.contains(want), "{want} missing from the rendered DOM");
    }
}

fn sample_capacity() -> bench_core::Capacity {
    bench_core::Capacity {
        knee_requests_per_s: Some(4.0),
        slo: Some("ttft_p99=200,itl_p50=30".parse().expect("slo")),
        slo_max_requests_per_s: Some(4.0),
        slo_bracket: Some(common::bracket(Some(4.0), Some(8.0), 0)),
        ..bench_core::Capacity::measured(9.5, 152.0, "throughput".into())
    }
}
