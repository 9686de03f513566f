//! Issue 22 points 2 and 5 in the report: the knee's and the SLO-limited rate's 95% intervals
//! (the bracket combined with the intervals measured at its rates) in every output, and the
//! comparison's per-figure marks (beyond the intervals, within noise, no interval).

use crate::common;

use bench_core::CrossingInterval;
use bench_report::{
    knee_interval, render_comparison, render_comparison_html, render_csv, render_guidellm,
    render_html, render_json, render_vllm, slo_interval, VllmConsoleOptions,
};

#[test]
fn the_knee_and_slo_intervals_span_the_unsure_rates() {
    let run = common::capacity_sweep();
    let c = run.capacity.as_ref().expect("capacity");
    assert_eq!(c.knee_requests_per_s, Some(6.0), "45 ms <= 50, 60 ms > 50");
    // Surely on the plateau up to 4 req/s (35 <= 50), surely off it at 10 (150 > 50).
    assert_eq!(
        knee_interval(&run, c),
        Some(CrossingInterval {
            low: 4.0,
            high: Some(10.0)
        })
    );
    // ttft_median=40: surely met at 4 (35 <= 40), surely missed at 8 (45 > 40); 6 is unsure.
    assert_eq!(
        slo_interval(&run, c),
        Some(CrossingInterval {
            low: 4.0,
            high: Some(8.0)
        })
    );
    let ivs = c.intervals.expect("intervals");
    assert_eq!(ivs.knee_requests_per_s, knee_interval(&run, c));
    assert_eq!(ivs.slo_max_requests_per_s, slo_interval(&run, c));

    // Narrower intervals at 6 and 8 req/s: the knee's interval closes to its bracket (6 sure
    // on, 8 sure off).
    let mut sure = run.clone();
    for (i, (lo, hi)) in [(4, (44.0, 46.0)), (5, (58.0, 62.0))] {
        let m = sure.benchmarks[i].intervals.as_mut().expect("iv");
        m.metrics.get_mut("ttft_ms").expect("ttft").median = Some(common::iv(lo, hi));
    }
    let k = knee_interval(&sure, sure.capacity.as_ref().expect("capacity")).expect("knee");
    assert_eq!((k.low, k.high), (6.0, Some(8.0)));

    // Whether a rate kept up is taken as its point figure says (the batches' spread of
    // completions is their discreteness): at 6 req/s completing 5.5 it is past the knee
    // whatever its interval, completing 5.8 (>= 0.95 x 6) it is not.
    let mut slow = sure.clone();
    slow.benchmarks[4].rates.requests_per_s = 5.5;
    slow.benchmarks[4]
        .intervals
        .as_mut()
        .expect("iv")
        .requests_per_s = common::iv(4.0, 7.0);
    let c = slow.capacity.as_ref().expect("capacity");
    let k = knee_interval(&slow, c).expect("knee");
    assert_eq!((k.low, k.high), (4.0, Some(6.0)));
    slow.benchmarks[4].rates.requests_per_s = 5.8;
    let k = knee_interval(&slow, c).expect("knee");
    assert_eq!((k.low, k.high), (6.0, Some(8.0)));
}

#[test]
fn no_interval_without_a_method_or_without_any_intervals() {
    let run = common::capacity_sweep();
    let mut c = run.capacity.clone().expect("capacity");
    c.slo = Some("ttft_mean=40".parse().expect("slo"));
    assert_eq!(
        slo_interval(&run, &c),
        None,
        "a mean has no interval method"
    );
    c.slo = Some("ttft_p95=40".parse().expect("slo"));
    assert_eq!(slo_interval(&run, &c), None, "nor a p95");
    // A rate without intervals is unsure: 4 req/s no longer surely passes, so both lower ends
    // fall to 2 req/s.
    let mut short = run.clone();
    short.benchmarks[3].intervals = None;
    let c = short.capacity.as_ref().expect("capacity");
    let low = |iv: Option<CrossingInterval>| iv.map(|i| (i.low, i.high));
    assert_eq!(low(slo_interval(&short, c)), Some((2.0, Some(8.0))));
    assert_eq!(low(knee_interval(&short, c)), Some((2.0, Some(10.0))));
    // The lowest rate sets the knee's threshold and is taken as exact: without intervals it
    // still surely lies on the plateau (the knee's lower end stays 4), while the SLO judges it
    // by its intervals (unsure, so the SLO's lower end falls to 0).
    let mut first = run.clone();
    first.benchmarks[2].intervals = None;
    let c = first.capacity.as_ref().expect("capacity");
    assert_eq!(low(knee_interval(&first, c)), Some((4.0, Some(10.0))));
    assert_eq!(low(slo_interval(&first, c)), Some((0.0, Some(8.0))));
    // Unless it did not keep up: then even the lowest rate is past the knee.
    first.benchmarks[2].rates.requests_per_s = 1.5;
    assert_eq!(low(knee_interval(&first, c)), Some((0.0, Some(2.0))));
    // Nor can it be surely past: without intervals at 10 req/s the knee's is open above.
    let mut top = run.clone();
    top.benchmarks[6].intervals = None;
    let c = top.capacity.as_ref().expect("capacity");
    assert_eq!(low(slo_interval(&top, c)), Some((4.0, Some(8.0))));
    assert_eq!(low(knee_interval(&top, c)), Some((4.0, None)));
    // With no open-loop rate measured by intervals there is none to state.
    let mut none = run.clone();
    for b in &mut none.benchmarks {
        b.intervals = None;
    }
    let c = none.capacity.as_ref().expect("capacity");
    assert_eq!(
        (knee_interval(&none, c), slo_interval(&none, c)),
        (None, None)
    );
    assert_eq!(bench_report::capacity_intervals(&none, c), None);
}

#[test]
fn the_intervals_are_in_every_output() {
    let run = common::capacity_sweep();
    let g = render_guidellm(&run, None);
    assert!(
        g.contains("Knee (latency leaves its plateau): 6.00 req/s (95%: 4.00-10.00) (median TTFT"),
        "{g}"
    );
    assert!(
        g.contains("Max rate meeting ttft_median=40: 4.00 req/s (95%: 4.00-8.00) (bracket"),
        "{g}"
    );
    let v = render_vllm(&run, &VllmConsoleOptions::default());
    assert!(
        v.contains("Knee 95% interval (req/s):               4.00 to 10.00"),
        "{v}"
    );
    assert!(
        v.contains("SLO rate 95% interval (req/s):           4.00 to 8.00"),
        "{v}"
    );
    let h = render_html(&run);
    assert!(h.contains("6.00 req/s offered (95%: 4.00-10.00)"), "knee");
    assert!(h.contains("<b>4.00 req/s</b> (95%: 4.00-8.00)"), "SLO");
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&run).expect("json")).expect("valid");
    let ivs = &json["capacity"]["intervals"];
    assert_eq!(ivs["knee_requests_per_s"]["low"], 4.0);
    assert_eq!(ivs["knee_requests_per_s"]["high"], 10.0);
    assert_eq!(ivs["slo_max_requests_per_s"]["high"], 8.0);
    assert!(ivs["max_requests_per_s"]["low"].is_number());
    let validator = common::schema_validator();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let csv = render_csv(&run);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    let row = reader.records().next().expect("row").expect("valid row");
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(&row[col("capacity_knee_requests_per_s_low")], "4");
    assert_eq!(&row[col("capacity_knee_requests_per_s_high")], "10");
    assert_eq!(&row[col("capacity_slo_max_requests_per_s_high")], "8");
}

/// `bench report a b`: every figure of b's rows is marked against a's benchmark of the same
/// label, in the console and the HTML, with a legend.
#[test]
fn every_compared_figure_is_marked_beyond_the_intervals_within_noise_or_unjudged() {
    let a = common::capacity_sweep();
    let mut b = a.clone();
    // b's TTFT median at 4 req/s: 80 ms (70-90), beyond a's 25-35; its output rate 45 tok/s
    // (39-44), overlapping a's 40-44.
    let four = &mut b.benchmarks[3];
    four.metrics.ttft_ms.median = 80.0;
    let ivs = four.intervals.as_mut().expect("iv");
    ivs.metrics.get_mut("ttft_ms").expect("ttft").median = Some(common::iv(70.0, 90.0));
    ivs.output_tokens_per_s = common::iv(39.0, 44.0);
    // b's synchronous benchmark has no intervals: nothing of it can be judged.
    b.benchmarks[0].intervals = None;
    let names = ["a".to_string(), "b".to_string()];
    let out = render_comparison(&[a.clone(), b.clone()], &names, None);
    assert!(
        out.contains("Marks on a figure of a later run, against the benchmark of the same label in a: * beyond the 95% intervals"),
        "{out}"
    );
    let row = |run: &str, label: &str| -> Vec<String> {
        out.lines()
            .find(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                cells.get(1) == Some(&run) && cells.get(2) == Some(&label)
            })
            .unwrap_or_else(|| panic!("no row {run} {label}: {out}"))
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    // Columns: rate, run, label, Req/s, Out Tok/s, Concurrency, Errored, TTFT p50, ...
    let b4 = row("b", "constant@4.00");
    assert!(b4[3].ends_with('~'), "req/s within noise: {b4:?}");
    assert!(b4[4].ends_with('~'), "tok/s within noise: {b4:?}");
    assert!(
        b4[5].ends_with('?') && b4[6].ends_with('?'),
        "no method: {b4:?}"
    );
    assert_eq!(b4[7], "80.0*", "TTFT p50 beyond: {b4:?}");
    assert!(b4[8].ends_with('?'), "no p99 interval: {b4:?}");
    let a4 = row("a", "constant@4.00");
    assert_eq!(a4[7], "30.0", "the reference is unmarked: {a4:?}");
    let sync = row("b", "synchronous");
    assert!(sync[3..].iter().all(|c| c.ends_with('?')), "{sync:?}");
    // The capacity lines: every change marked, the output tokens/s as without an interval.
    assert!(
        out.contains("knee req/s         a 6.00  |  b 6.00 (+0.0 %, within noise)"),
        "{out}"
    );
    assert!(out.contains("SLO max req/s      a 4.00  |  b 4.00 (+0.0 %, within noise)"));
    assert!(out.contains(" (+0.0 %, no interval)"), "{out}");
    // The same in the HTML.
    let h = render_comparison_html(&[a, b], &names);
    assert!(
        h.contains("<h2 id=\"changes\">Changes against a</h2>"),
        "{h}"
    );
    assert!(
        h.contains("<td class=\"beyond\" title=\"beyond the intervals\">30.0 &rarr; 80.0 *</td>")
    );
    assert!(h.contains("<td class=\"noise\" title=\"within noise\">"));
    assert!(h.contains("<td class=\"unjudged\" title=\"no interval\">"));
    assert!(h.contains("? no interval to judge by"));
}

/// The value of attribute `name` in `tag` (the text of one SVG element).
fn attr(tag: &str, name: &str) -> f64 {
    let from = tag.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
    let len = tag[from..].find('"').expect("closing quote");
    tag[from..from + len].parse().expect("a number")
}

/// The HTML's sweep charts draw the 95% intervals as error bars: on the TTFT chart the p50
/// point of 4 req/s (30 ms, interval 25-35) carries a bar on its own x, from 35 down to 25 ms
/// at the chart's scale (5 ms either side of the point), under the point.
#[test]
fn the_html_draws_error_bars_on_the_points_of_a_known_report() {
    let h = render_html(&common::capacity_sweep());
    let chart = h
        .split("<svg class=\"chart\"")
        .find(|s| s.contains("Time to first token vs request rate"))
        .expect("TTFT chart");
    let point_at = chart
        .find("<title>p50: 30 (constant@4.00)</title>")
        .expect("the p50 point of 4 req/s");
    let circle = &chart[chart[..point_at].rfind("<circle").expect("circle")..point_at];
    let title = "<title>p50 95% interval: 25 to 35 (constant@4.00)</title>";
    let bar_at = chart.find(title).expect("its error bar");
    let bar = &chart[chart[..bar_at].rfind("<g class=\"errbar\"").expect("bar")..bar_at];
    let stem = &bar[bar.find("<line").expect("stem")..];
    let (cx, cy) = (attr(circle, "cx"), attr(circle, "cy"));
    let (x, top, bottom) = (attr(stem, "x1"), attr(stem, "y1"), attr(stem, "y2"));
    assert_eq!(x, cx, "{bar}");
    assert_eq!(attr(stem, "x2"), cx);
    // y grows downwards: 35 ms is above the point, 25 ms below it, equally far.
    assert!(top < cy && cy < bottom, "{top} {cy} {bottom}");
    assert!(
        ((cy - top) - (bottom - cy)).abs() <= 0.15,
        "{top} {cy} {bottom}"
    );
    assert!(bar_at < point_at, "the bar is drawn under the point");
    // Rates without intervals (the probes of the fixture) have no bar; every bar sits on a
    // point of its series.
    let bars = chart.matches("class=\"errbar\"").count();
    assert!(bars >= 5, "a p50 bar per rate at least: {bars}");
    let throughput = h
        .split("<svg class=\"chart\"")
        .find(|s| s.contains("Output token throughput vs request rate"))
        .expect("throughput chart");
    assert!(throughput.contains("output tok/s 95% interval: 40 to 44 (constant@4.00)"));
    let concurrency = h
        .split("<svg class=\"chart\"")
        .find(|s| s.contains("Concurrency vs request rate"))
        .expect("concurrency chart");
    assert!(
        !concurrency.contains("errbar"),
        "concurrency has no interval"
    );
}

/// The SLO answer is never above the capacity (issue 44): its interval's ends are at most the
/// maximum interval's, and when the capacity limits first the answer's interval is the
/// maximum's, which every output says.
#[test]
fn the_slo_interval_is_never_above_the_capacitys() {
    let mut run = common::capacity_sweep();
    let mut c = run.capacity.clone().expect("capacity");
    // A capacity measured by the 6 req/s rate (interval 5.82 to 6.18): the SLO's crossing
    // (4 to 8) is cut at the maximum's upper end.
    let six = run
        .benchmarks
        .iter()
        .position(|b| b.label == "constant@6.00");
    c.max_measured_by = run.benchmarks[six.expect("6")].label.clone();
    c.max_requests_per_s = 6.0;
    let iv = slo_interval(&run, &c).expect("interval");
    assert!(
        (iv.low, iv.high.map(|h| (h * 100.0).round())) == (4.0, Some(618.0)),
        "{iv:?}"
    );
    // The capacity limits first: the SLO answer is the maximum, with its interval.
    c.slo_limit = Some(bench_core::SloLimit::Capacity);
    c.slo_max_requests_per_s = Some(6.0);
    let iv = slo_interval(&run, &c).expect("interval");
    let max = bench_report::max_interval(&run, &c).expect("max");
    assert_eq!((iv.low, iv.high), (max.low, Some(max.high)));
    run.capacity = Some(c);
    let g = render_guidellm(&run, None);
    assert!(
        g.contains("Max rate meeting ttft_median=40: 6.00 req/s (95%: 5.82-6.18) (the capacity limits first"),
        "{g}"
    );
    let v = render_vllm(&run, &VllmConsoleOptions::default());
    assert!(
        v.contains("SLO answer limited by:                   the capacity"),
        "{v}"
    );
    assert!(render_html(&run).contains("the capacity limits first"));
}
