//! Property tests of the Prometheus text parser: whatever is rendered in the format is read
//! back exactly; arbitrary text never panics; text that is not the format is refused.

use bench_servermetrics::parse::parse;
use bench_servermetrics::summary::quantile;
use proptest::prelude::*;

fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z_:][a-zA-Z0-9_:]{0,20}"
}

fn label_value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\\'),
            Just('"'),
            Just('\n'),
            Just('é'),
            Just(' '),
            Just('}'),
            Just(','),
            "[a-z0-9]".prop_map(|s| s.chars().next().unwrap_or('a'))
        ],
        0..12,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<i32>().prop_map(f64::from),
        (-1e12f64..1e12),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ]
}

type Line = (String, Vec<(String, String)>, f64, Option<i64>);

fn render(lines: &[Line], comments: bool) -> String {
    let mut out = String::new();
    for (n, labels, v, ts) in lines {
        if comments {
            out.push_str(&format!("# HELP {n} some help \\ text\n# TYPE {n} gauge\n"));
        }
        out.push_str(n);
        if !labels.is_empty() {
            let l: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            out.push_str(&format!("{{{}}}", l.join(",")));
        }
        let v = if v.is_infinite() {
            if *v > 0.0 {
                "+Inf".to_string()
            } else {
                "-Inf".to_string()
            }
        } else {
            format!("{v:?}")
        };
        out.push_str(&format!(" {v}"));
        if let Some(t) = ts {
            out.push_str(&format!(" {t}"));
        }
        out.push('\n');
    }
    out
}

proptest! {
    #[test]
    fn rendered_samples_read_back_exactly(
        lines in prop::collection::vec(
            (name(), prop::collection::vec(("[a-z_][a-z0-9_]{0,8}", label_value()), 0..4), value(), prop::option::of(any::<i64>())),
            0..20,
        ),
        comments in any::<bool>(),
    ) {
        let text = render(&lines, comments);
        let e = parse(&text).expect("valid text");
        prop_assert_eq!(e.samples.len(), lines.len());
        for (s, (n, labels, v, _)) in e.samples.iter().zip(&lines) {
            prop_assert_eq!(&s.name, n);
            prop_assert_eq!(&s.labels, labels);
            prop_assert_eq!(s.value, *v);
        }
    }

    #[test]
    fn any_text_is_parsed_or_refused_without_panicking(text in "\\PC{0,200}") {
        let _ = parse(&text);
    }

    #[test]
    fn cut_lines_are_refused_or_read_as_a_prefix(
        lines in prop::collection::vec((name(), prop::collection::vec(("[a-z]{1,5}", label_value()), 1..3), value(), Just(None)), 1..5),
        cut in 0usize..200,
    ) {
        // A truncated exposition either fails or yields no more samples than were written.
        let text = render(&lines, false);
        let cut = text.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(text.len());
        if let Ok(e) = parse(&text[..cut]) {
            prop_assert!(e.samples.len() <= lines.len());
        }
    }

    #[test]
    fn quantiles_are_monotone_and_inside_the_buckets(
        counts in prop::collection::vec(0u32..50, 1..10),
        q1 in 0.0f64..1.0, q2 in 0.0f64..1.0,
    ) {
        let mut cum = Vec::new();
        let mut total = 0.0;
        for (i, c) in counts.iter().enumerate() {
            total += f64::from(*c);
            cum.push(((i + 1) as f64 * 0.1, total));
        }
        cum.push((f64::INFINITY, total));
        let (lo, hi) = if q1 <= q2 { (q1, q2) } else { (q2, q1) };
        match (quantile(lo, &cum), quantile(hi, &cum)) {
            (Some(a), Some(b)) => {
                prop_assert!(a <= b + 1e-12, "{} > {}", a, b);
                prop_assert!((0.0..=counts.len() as f64 * 0.1 + 1e-9).contains(&b));
            }
            (None, None) => prop_assert_eq!(total, 0.0),
            other => prop_assert!(false, "{:?}", other),
        }
    }
}

#[test]
fn quantile_interpolates_like_prometheus() {
    // 10 observations in (0, 1], 10 in (1, 2]: the median is 1, p75 is 1.5, p99 is 1.98.
    let cum = [(1.0, 10.0), (2.0, 20.0), (f64::INFINITY, 20.0)];
    assert_eq!(quantile(0.5, &cum), Some(1.0));
    assert_eq!(quantile(0.75, &cum), Some(1.5));
    assert!((quantile(0.99, &cum).unwrap_or(0.0) - 1.98).abs() < 1e-9);
    // Everything above the last finite bound: the bound.
    assert_eq!(
        quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 4.0)]),
        Some(1.0)
    );
}
