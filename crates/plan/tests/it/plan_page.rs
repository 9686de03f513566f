//! The plan's HTML page in a real browser (headless Chromium, as the report's pages are tested:
//! the report crate's `chromium` helpers): its chart at its own size and a legend that never
//! overlaps. Without Chromium the test is skipped locally and fails under CI (`CI` set).

use crate::chromium::{chromium_or_skip, dump_dom, visit};

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
    let Some(chromium) = chromium_or_skip() else {
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
    let html = bench_plan::render_plan_html(&plan);
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
