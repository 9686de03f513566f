//! The 95% intervals ([`crate::figures::interval`]) as CSV columns.

use crate::figures::interval::{Interval, Intervals, METRICS, STATS};

/// The CSV columns: `requests_per_s_low`, `_high`, the same of `output_tokens_per_s`, then
/// `<metric>_<stat>_low` and `_high` of every metric and statistic given an interval.
pub(crate) fn csv_header() -> Vec<String> {
    let mut h: Vec<String> = ["requests_per_s", "output_tokens_per_s"]
        .iter()
        .flat_map(|f| [format!("{f}_low"), format!("{f}_high")])
        .collect();
    for m in METRICS {
        for (stat, _) in STATS {
            for end in ["low", "high"] {
                h.push(format!("{}_{stat}_{end}", m.json_key()));
            }
        }
    }
    h
}

/// The [`csv_header`] cells of one benchmark's intervals (empty where it has none).
pub(crate) fn csv_cells(iv: Option<&Intervals>, num: fn(f64) -> String) -> Vec<String> {
    let pair = |i: Option<Interval>| -> [String; 2] {
        i.map_or([String::new(), String::new()], |i| {
            [num(i.low), num(i.high)]
        })
    };
    let mut cells: Vec<String> = Vec::new();
    cells.extend(pair(iv.map(|i| i.requests_per_s)));
    cells.extend(pair(iv.map(|i| i.output_tokens_per_s)));
    for m in METRICS {
        let mi = iv.and_then(|i| i.metrics.get(m.json_key()));
        for i in [
            mi.and_then(|x| x.median),
            mi.and_then(|x| x.p90),
            mi.and_then(|x| x.p99),
        ] {
            cells.extend(pair(i));
        }
    }
    cells
}
