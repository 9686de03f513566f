//! The sessions of a distributed run's shards merged into one benchmark's session section
//! (docs/distributed.md): every session ran wholly on one shard, so the counts add up; the
//! session durations and every turn row's metrics are the sums of the shards' histograms
//! (percentiles of one histogram of every session and request, as in one run); the token
//! figures of a turn row add up exactly.

use std::collections::BTreeMap;

use bench_core::SessionCounts;

use crate::figures::hist::{Dist, MetricSummary};
use crate::figures::model::{SessionReport, TokenSummary, TurnReport};
use crate::figures::turns::DURATION_KEY;

/// The four metrics of a turn row, by their keys in [`TurnReport::histograms`].
const TURN_METRICS: [&str; 4] = ["ttft_ms", "itl_ms", "tpot_ms", "e2el_ms"];

/// The merged session section of one benchmark's shards (`None` when no shard ran sessions).
/// Refused (the message says why) when a shard's figures lack the histograms behind them
/// (a file written before they were kept) or a histogram does not decode.
pub(crate) fn merge(parts: &[Option<&SessionReport>]) -> Result<Option<SessionReport>, String> {
    let parts: Vec<&SessionReport> = parts.iter().flatten().copied().collect();
    if parts.is_empty() {
        return Ok(None);
    }
    let counts = parts.iter().fold(SessionCounts::default(), |a, s| {
        let c = s.counts;
        SessionCounts {
            started: a.started + c.started,
            completed: a.completed + c.completed,
            cut: a.cut + c.cut,
            errored: a.errored + c.errored,
        }
    });
    let durations: Vec<(&MetricSummary, &BTreeMap<String, String>)> = parts
        .iter()
        .map(|s| (&s.duration_ms, &s.histograms))
        .collect();
    let (duration_ms, duration_hist) =
        merge_metric(&durations, DURATION_KEY).map_err(|e| format!("session durations: {e}"))?;
    // Rows are keyed by turn and kind (a turn's tool-result row follows its user row).
    let mut keys: Vec<(u32, bench_core::TurnKind)> = parts
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| (t.turn, t.kind)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut turns = Vec::with_capacity(keys.len());
    for (turn, kind) in keys {
        let row: Vec<&TurnReport> = parts
            .iter()
            .flat_map(|s| s.turns.iter())
            .filter(|t| (t.turn, t.kind) == (turn, kind))
            .collect();
        turns.push(merge_row(&row).map_err(|e| format!("turn {turn}: {e}"))?);
    }
    // Shards run distinct sessions: their rows are put together and summarised again.
    let caches: Vec<&crate::figures::model::SessionCache> =
        parts.iter().filter_map(|s| s.cache.as_ref()).collect();
    let cache = (!caches.is_empty()).then(|| {
        let mut rows: Vec<_> = caches.iter().flat_map(|c| c.per_session.clone()).collect();
        rows.sort_by_key(|r| r.session);
        let replicas = caches.iter().any(|c| c.one_replica.is_some());
        crate::figures::session_cache::summarise(rows, replicas)
    });
    Ok(Some(SessionReport {
        counts,
        duration_ms,
        cache,
        turns,
        histograms: [(DURATION_KEY.to_string(), duration_hist)].into(),
    }))
}

/// One turn row of every shard that has it.
fn merge_row(row: &[&TurnReport]) -> Result<TurnReport, String> {
    let mut out = TurnReport {
        turn: row.first().map_or(1, |t| t.turn),
        kind: row.first().map_or_else(Default::default, |t| t.kind),
        and_later: row.iter().any(|t| t.and_later),
        requests: crate::figures::model::sum_counts(row.iter().map(|t| t.requests)),
        prompt_tokens: merge_tokens(row.iter().map(|t| &t.prompt_tokens)),
        output_tokens: merge_tokens(row.iter().map(|t| &t.output_tokens)),
        ..TurnReport::default()
    };
    for key in TURN_METRICS {
        let parts: Vec<(&MetricSummary, &BTreeMap<String, String>)> = row
            .iter()
            .map(|t| (turn_metric(t, key), &t.histograms))
            .collect();
        let (summary, encoded) = merge_metric(&parts, key)?;
        *turn_metric_mut(&mut out, key) = summary;
        out.histograms.insert(key.to_string(), encoded);
    }
    Ok(out)
}

fn turn_metric<'a>(t: &'a TurnReport, key: &str) -> &'a MetricSummary {
    match key {
        "ttft_ms" => &t.ttft_ms,
        "itl_ms" => &t.itl_ms,
        "tpot_ms" => &t.tpot_ms,
        _ => &t.e2el_ms,
    }
}

fn turn_metric_mut<'a>(t: &'a mut TurnReport, key: &str) -> &'a mut MetricSummary {
    match key {
        "ttft_ms" => &mut t.ttft_ms,
        "itl_ms" => &mut t.itl_ms,
        "tpot_ms" => &mut t.tpot_ms,
        _ => &mut t.e2el_ms,
    }
}

/// The shards' histograms of one metric added: its summary (at every percentile a shard
/// saved) and its encoding. A shard that recorded values but kept no histogram is refused.
fn merge_metric(
    parts: &[(&MetricSummary, &BTreeMap<String, String>)],
    key: &str,
) -> Result<(MetricSummary, String), String> {
    let mut dist = Dist::new();
    let mut ps: Vec<f64> = Vec::new();
    for (summary, hists) in parts {
        match hists.get(key) {
            Some(encoded) => dist.merge(
                &Dist::decode(summary, encoded).map_err(|e| format!("`{key}` histogram: {e}"))?,
            ),
            None if summary.count > 0 => {
                return Err(format!(
                    "`{key}` was saved without its histogram (by an older bench): re-run the shards with this version"
                ))
            }
            None => {}
        }
        for p in summary
            .percentiles
            .keys()
            .filter_map(|k| k.strip_prefix('p')?.parse::<f64>().ok())
        {
            if !ps.contains(&p) {
                ps.push(p);
            }
        }
    }
    Ok((dist.summary(&ps), dist.encode()))
}

/// Exact token figures of several sets of requests taken together.
fn merge_tokens<'a>(parts: impl Iterator<Item = &'a TokenSummary>) -> TokenSummary {
    let mut out = TokenSummary::default();
    for t in parts.filter(|t| t.count > 0) {
        out.min = if out.count == 0 {
            t.min
        } else {
            out.min.min(t.min)
        };
        out.max = out.max.max(t.max);
        out.count += t.count;
        out.total += t.total;
    }
    if out.count > 0 {
        out.mean = out.total as f64 / out.count as f64;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::figures::model::RequestCounts;

    use super::*;

    /// A turn row of requests with these TTFTs (ms) and prompt tokens.
    fn row(turn: u32, ttft: &[f64], prompts: &[u64]) -> TurnReport {
        let mut d = Dist::new();
        for t in ttft {
            d.record(t * 1000.0);
        }
        let mut p = TokenSummary::default();
        for &n in prompts {
            p.add(n);
        }
        let ps = [50.0, 90.0, 99.0];
        let mut hist = BTreeMap::new();
        for k in TURN_METRICS {
            let dist = if k == "ttft_ms" { &d } else { &Dist::new() };
            hist.insert(k.to_string(), dist.encode());
        }
        TurnReport {
            turn,
            requests: RequestCounts {
                completed: ttft.len() as u64,
                total: ttft.len() as u64,
                ..RequestCounts::default()
            },
            ttft_ms: d.summary(&ps),
            prompt_tokens: p,
            histograms: hist,
            ..TurnReport::default()
        }
    }

    fn session(started: u64, durations: &[f64], turns: Vec<TurnReport>) -> SessionReport {
        let mut d = Dist::new();
        for v in durations {
            d.record(v * 1000.0);
        }
        SessionReport {
            counts: SessionCounts {
                started,
                completed: durations.len() as u64,
                cut: started - durations.len() as u64,
                errored: 0,
            },
            duration_ms: d.summary(&[50.0, 99.0]),
            turns,
            histograms: [(DURATION_KEY.to_string(), d.encode())].into(),
            cache: None,
        }
    }

    #[test]
    fn shards_sessions_merge_to_the_figures_of_all_of_them() {
        let a = session(3, &[100.0, 250.0], vec![row(1, &[10.0, 30.0], &[5, 9])]);
        let b = session(
            2,
            &[400.0],
            vec![row(1, &[20.0], &[7]), row(2, &[50.0, 70.0], &[20, 22])],
        );
        let m = merge(&[Some(&a), None, Some(&b)])
            .expect("merges")
            .expect("sessions");
        assert_eq!(
            m.counts,
            SessionCounts {
                started: 5,
                completed: 3,
                cut: 2,
                errored: 0
            }
        );
        let all = session(
            5,
            &[100.0, 250.0, 400.0],
            vec![row(1, &[10.0, 30.0, 20.0], &[5, 9, 7])],
        );
        assert_eq!(m.duration_ms, all.duration_ms);
        assert_eq!(m.turns.len(), 2);
        assert_eq!(m.turns[0].ttft_ms, all.turns[0].ttft_ms);
        assert_eq!(m.turns[0].prompt_tokens, all.turns[0].prompt_tokens);
        assert_eq!(m.turns[0].requests.completed, 3);
        assert_eq!(m.turns[1].ttft_ms.count, 2);
        assert_eq!(m.turns[1].prompt_tokens.min, 20);
        let decoded =
            |t: &TurnReport| Dist::decode(&t.ttft_ms, &t.histograms["ttft_ms"]).expect("decodes");
        assert_eq!(decoded(&m.turns[0]), decoded(&all.turns[0]));
        assert!(merge(&[None, None]).expect("nothing to merge").is_none());
    }

    #[test]
    fn figures_without_their_histograms_are_refused() {
        let mut a = session(1, &[100.0], vec![row(1, &[10.0], &[5])]);
        a.turns[0].histograms.clear();
        let e = merge(&[Some(&a)]).expect_err("refused");
        assert!(e.contains("turn 1") && e.contains("older bench"), "{e}");
        let mut b = session(1, &[100.0], Vec::new());
        b.histograms.clear();
        let e = merge(&[Some(&b)]).expect_err("refused");
        assert!(e.starts_with("session durations"), "{e}");
    }
}
