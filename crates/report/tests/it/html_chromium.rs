//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `.ci/setup`) loads the page with every network request routed to a loopback proxy that
//! records them, logs console messages, and takes a screenshot (kept under the target dir for
//! a human to look at). A negative control page proves the detectors work.
//!
//! Without Chromium the test is skipped locally and fails under CI (`CI` set).

use crate::common;

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium's own background services (updates, time, accounts): not requests of the page.
fn is_browser_housekeeping(request_line: &str) -> bool {
    let host = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    ["google.com", "googleapis.com", "gvt1.com", "gstatic.com"]
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

struct Visit {
    page_requests: Vec<String>,
    console: Vec<String>,
    screenshot: Vec<u8>,
    /// Exit status and the last lines of Chromium's log, for failure messages.
    diagnostics: String,
}

/// Loads `page` in headless Chromium through a recording proxy, in a window `size` wide and
/// high (`"1300,2400"`).
fn visit(chromium: &Path, page: &Path, work: &Path, shot: &Path, size: &str) -> Visit {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let proxy = {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let _ = sock.set_nonblocking(false);
                        let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut line = String::new();
                        let _ = BufReader::new(sock).read_line(&mut line);
                        if let Ok(mut s) = seen.lock() {
                            s.push(line.trim().to_string());
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };
    let profile = work.join(format!(
        "profile-{}",
        page.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--proxy-bypass-list=<-loopback>",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!("--proxy-server=127.0.0.1:{port}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    // Generous: a shared 2-core machine may be busy compiling.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = reader.join().expect("stderr reader");
    let console = log
        .iter()
        .filter(|l| l.contains(":CONSOLE"))
        .cloned()
        .collect();
    let diagnostics = format!(
        "{status}; log tail:\n{}",
        log[log.len().saturating_sub(15)..].join("\n")
    );
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let _ = proxy.join();
    let page_requests = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|l| !is_browser_housekeeping(l))
        .cloned()
        .collect();
    Visit {
        page_requests,
        console,
        screenshot: std::fs::read(shot).unwrap_or_default(),
        diagnostics,
    }
}

#[test]
fn html_report_renders_in_chromium_offline_without_errors() {
    let Some(chromium) = find_chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing under CI (.ci/setup installs it)"
        );
        eprintln!("skipped: no chromium on PATH (set BENCH_CHROMIUM or run .ci/setup)");
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

/// The page's DOM after Chromium has parsed and laid it out (`--dump-dom`) in a window `size`.
fn dump_dom(chromium: &Path, page: &Path, work: &Path, size: &str) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--dump-dom",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile-dom").display()
        ))
        .arg(format!("file://{}", page.display()))
        .stderr(Stdio::null())
        .output()
        .expect("chromium --dump-dom");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Measures the plan page as laid out: each legend entry's box, the chart's width against its
/// own size, the chart's title, the first heading and a table cell; written into the page as
/// `<pre id="layout">` JSON for `--dump-dom` to carry out. Only the test's copy has it.
const MEASURE: &str = r#"<script>
(function () {
  const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const svg = document.querySelector(".pareto svg.chart");
  const out = {
    keys: Array.from(document.querySelectorAll(".legend .key")).map(box),
    names: Array.from(document.querySelectorAll(".legend .key")).map((e) => e.textContent),
    chart: svg.getBoundingClientRect().width,
    view: svg.viewBox.baseVal.width,
    title: box(svg.querySelector("text.title")),
    h2: box(document.querySelector("h2")),
    td: box(document.querySelector("td")),
  };
  const pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

/// The plan's page at 1400 px (issue 46): its chart at its own size (text as large as the
/// page's, the chart's title smaller than a heading), legend entries that never overlap, the
/// page offline and without console messages; screenshot in `target/tmp/plan-chromium/`.
#[test]
fn the_plan_page_at_1400_px_keeps_its_charts_size_and_a_legend_that_never_overlaps() {
    let Some(chromium) = find_chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing under CI (.ci/setup installs it)"
        );
        eprintln!("skipped: no chromium on PATH (set BENCH_CHROMIUM or run .ci/setup)");
        return;
    };
    let work = bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), "plan-chromium");
    let mut plan = crate::plan::two_batch_sizes();
    // A third configuration whose name is long: the legend wraps rather than overlaps.
    let mut third = plan.configs[0].clone();
    third.name = "max_batch=128,step_per_seq_ms=0.25,prefill_overhead_ms=5".into();
    third.rank = None;
    for q in &mut third.points {
        q.tokens_per_s_per_user *= 0.8;
    }
    plan.configs.push(third);
    let html = bench_report::render_plan_html(&plan);
    let page = work.join("plan.html");
    std::fs::write(&page, &html).expect("write");
    let shot = work.join("plan.png");
    let v = visit(&chromium, &page, &work, &shot, "1400,1400");
    assert!(v.page_requests.is_empty(), "{:?}", v.page_requests);
    assert!(v.console.is_empty(), "{:?}", v.console);
    assert!(
        v.screenshot.starts_with(b"\x89PNG\r\n\x1a\n"),
        "no screenshot: {}",
        v.diagnostics
    );
    eprintln!("screenshot: {}", shot.display());

    let probe = work.join("plan-measured.html");
    std::fs::write(
        &probe,
        html.replace("</body>", &format!("{MEASURE}</body>")),
    )
    .expect("write");
    let dom = dump_dom(&chromium, &probe, &work, "1400,1400");
    let json = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("no layout in the DOM: {dom}"))
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let m: serde_json::Value = serde_json::from_str(&json).expect("layout JSON");
    eprintln!("layout: {m}");
    let boxes: Vec<[f64; 4]> = m["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|b| {
            let v: Vec<f64> = b
                .as_array()
                .expect("box")
                .iter()
                .filter_map(|x| x.as_f64())
                .collect();
            [v[0], v[1], v[2], v[3]]
        })
        .collect();
    // Three configurations, the front, the recommendation.
    assert_eq!(boxes.len(), 5, "{m}");
    for (i, a) in boxes.iter().enumerate() {
        assert!(
            a[2] - a[0] > 20.0 && a[3] - a[1] > 8.0,
            "entry {i} is empty: {m}"
        );
        for (j, b) in boxes.iter().enumerate().skip(i + 1) {
            let apart = a[2] <= b[0] + 0.5
                || b[2] <= a[0] + 0.5
                || a[3] <= b[1] + 0.5
                || b[3] <= a[1] + 0.5;
            assert!(
                apart,
                "legend entries {i} and {j} overlap: {a:?} {b:?} ({m})"
            );
        }
    }
    // The chart at its own width: its text at the size the page's style gives it.
    let (chart, view) = (
        m["chart"].as_f64().expect("chart"),
        m["view"].as_f64().expect("view"),
    );
    assert!(
        (chart / view - 1.0).abs() < 0.01,
        "chart {chart} px for {view}: {m}"
    );
    let height = |k: &str| m[k][3].as_f64().expect("bottom") - m[k][1].as_f64().expect("top");
    assert!(
        height("title") < height("h2"),
        "the chart's title ({} px) is not smaller than a heading ({} px): {m}",
        height("title"),
        height("h2")
    );
}
