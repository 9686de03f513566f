//! One load spread across several targets (`--target A,B`): what each target was sent and what
//! came back (docs/metrics.md, "Targets"). Counted over every request the benchmark sent to a
//! target, warmup and cooldown included, so they match each server's own log.

use bench_core::{RequestRecord, Status};
use serde::{Deserialize, Serialize};

/// What one target of a benchmark was sent, and how its requests ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCounts {
    /// The URL its requests went to (credentials and query string removed).
    pub url: String,
    /// Requests sent to it (any outcome): `completed + errored + incomplete + cancelled`.
    pub requests: u64,
    /// Of them, finished normally.
    pub completed: u64,
    /// Of them, failed (HTTP, transport, timeout, in-stream error, protocol).
    pub errored: u64,
    /// Of them, cancelled while in flight (the benchmark's time ran out).
    pub incomplete: u64,
    /// Of them, cancelled by the client on purpose (`--cancel-rate`); absent when none.
    #[serde(default, skip_serializing_if = "bench_core::is_zero")]
    pub cancelled: u64,
    /// Output tokens received from it, every request's (any outcome).
    pub output_tokens: u64,
}

impl TargetCounts {
    fn add(&mut self, r: &RequestRecord) {
        self.requests += 1;
        match r.status() {
            Status::Completed => self.completed += 1,
            Status::Errored => self.errored += 1,
            Status::Incomplete => self.incomplete += 1,
            Status::Cancelled => self.cancelled += 1,
        }
        self.output_tokens += u64::from(r.output_tokens);
    }

    fn absorb(&mut self, o: &TargetCounts) {
        self.requests += o.requests;
        self.completed += o.completed;
        self.errored += o.errored;
        self.incomplete += o.incomplete;
        self.cancelled += o.cancelled;
        self.output_tokens += o.output_tokens;
    }
}

/// Counts the requests of a benchmark by target as they finish. Empty (counting nothing) with
/// fewer than two targets.
#[derive(Debug, Clone, Default)]
pub(crate) struct TargetLedger {
    counts: Vec<TargetCounts>,
}

impl TargetLedger {
    /// A ledger of the targets `urls` (by index, as records name them); with fewer than two,
    /// one that counts nothing.
    pub(crate) fn new(urls: &[String]) -> Self {
        if urls.len() < 2 {
            return Self::default();
        }
        let counts = urls
            .iter()
            .map(|u| TargetCounts {
                url: u.clone(),
                ..TargetCounts::default()
            })
            .collect();
        Self { counts }
    }

    /// Counts `r` at its target; a record with no target (or another index) counts nowhere.
    pub(crate) fn add(&mut self, r: &RequestRecord) {
        if let Some(c) = r.target.and_then(|i| self.counts.get_mut(i as usize)) {
            c.add(r);
        }
    }

    /// The counts, when there are several targets.
    pub(crate) fn report(self) -> Option<Vec<TargetCounts>> {
        (!self.counts.is_empty()).then_some(self.counts)
    }
}

/// Several shards' (or trials') counts together, target by target (matched by URL, in the
/// order first met); `None` when no part had any.
pub(crate) fn merge<'a>(
    parts: impl Iterator<Item = &'a Vec<TargetCounts>>,
) -> Option<Vec<TargetCounts>> {
    let mut out: Vec<TargetCounts> = Vec::new();
    for part in parts {
        for c in part {
            match out.iter_mut().find(|o| o.url == c.url) {
                Some(o) => o.absorb(c),
                None => out.push(c.clone()),
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use bench_core::Outcome;

    use super::*;
    use crate::test_support::record;

    fn to(target: Option<u32>, outcome: Outcome, tokens: u32) -> RequestRecord {
        RequestRecord {
            target,
            outcome,
            output_tokens: tokens,
            ..record(0, &[], 10)
        }
    }

    #[test]
    fn each_target_counts_its_own_requests_by_how_they_ended() {
        let urls = [
            "http://a/v1/completions".to_string(),
            "http://b/v1/completions".into(),
        ];
        let mut l = TargetLedger::new(&urls);
        l.add(&to(Some(0), Outcome::Completed, 5));
        l.add(&to(Some(0), Outcome::Cancelled, 2));
        l.add(&to(Some(1), Outcome::Completed, 7));
        let http = Outcome::Http {
            status: 503,
            body: String::new(),
            retry_after_ms: None,
        };
        l.add(&to(Some(1), http, 0));
        // Never sent to a target (abandoned before dispatch), or an unknown index.
        l.add(&to(None, Outcome::Cancelled, 0));
        l.add(&to(Some(2), Outcome::Completed, 9));
        let r = l.report().expect("two targets");
        let row = |c: &TargetCounts| {
            (
                c.requests,
                c.completed,
                c.errored,
                c.incomplete,
                c.output_tokens,
            )
        };
        assert_eq!(r[0].url, urls[0]);
        assert_eq!(row(&r[0]), (2, 1, 0, 1, 7));
        assert_eq!(row(&r[1]), (2, 1, 1, 0, 7));
    }

    #[test]
    fn one_target_counts_nothing_and_merging_adds_by_url() {
        let mut one = TargetLedger::new(&["http://a".to_string()]);
        one.add(&to(Some(0), Outcome::Completed, 5));
        assert_eq!(one.report(), None);
        let c = |url: &str, n: u64| TargetCounts {
            url: url.into(),
            requests: n,
            completed: n,
            output_tokens: 10 * n,
            ..TargetCounts::default()
        };
        let (x, y) = (vec![c("a", 1), c("b", 2)], vec![c("b", 3), c("a", 4)]);
        let m = merge([&x, &y].into_iter()).expect("counts");
        assert_eq!(m, vec![c("a", 5), c("b", 5)]);
        assert_eq!(merge(std::iter::empty()), None);
    }
}
