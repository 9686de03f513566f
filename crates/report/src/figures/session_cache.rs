//! Per-session prefix cache and replicas (docs/metrics.md, "Per-session cache and replicas"):
//! each session's completed requests, the prompt tokens the server said it served from its
//! prefix cache (`cached_tokens`), and the replicas its responses named (`--replica-header`).
//! Whole benchmark, not windowed, like the session counts. Nothing is kept for benchmarks whose
//! requests carry neither figure.

use std::collections::BTreeMap;

use bench_core::{RequestRecord, SessionTurn, Status};

use crate::figures::model::{SessionCache, SessionCacheRow};

/// One session's figures so far.
#[derive(Debug, Clone, Default)]
struct Acc {
    requests: u64,
    turns: u32,
    prompt: u64,
    cached: u64,
    replicas: Vec<u32>,
}

/// The per-session figures being gathered.
#[derive(Debug, Clone, Default)]
pub(crate) struct PerSession {
    sessions: BTreeMap<u64, Acc>,
    cache_known: bool,
    replicas_known: bool,
}

impl PerSession {
    /// Takes one session request's record (completed requests that carry either figure: a
    /// run whose server says neither keeps nothing per session).
    pub(crate) fn add(&mut self, turn: &SessionTurn, r: &RequestRecord) {
        if r.status() != Status::Completed || (r.cached_tokens.is_none() && turn.replica.is_none())
        {
            return;
        }
        let a = self.sessions.entry(turn.session).or_default();
        a.requests += 1;
        a.turns = a.turns.max(turn.turn);
        a.prompt += u64::from(r.prompt_tokens);
        if let Some(c) = r.cached_tokens {
            a.cached += u64::from(c);
            self.cache_known = true;
        }
        if let Some(k) = turn.replica {
            if !a.replicas.contains(&k) {
                a.replicas.push(k);
            }
            self.replicas_known = true;
        }
    }

    /// The report's `sessions.cache`, `None` when no request said either figure.
    pub(crate) fn report(&self) -> Option<SessionCache> {
        if !self.cache_known && !self.replicas_known {
            return None;
        }
        let rows = self
            .sessions
            .iter()
            .map(|(&session, a)| SessionCacheRow {
                session,
                requests: a.requests,
                turns: a.turns,
                prompt_tokens: a.prompt,
                cached_tokens: a.cached,
                cached_share: share(a.cached, a.prompt),
                replicas: a.replicas.len() as u32,
            })
            .collect();
        Some(summarise(rows, self.replicas_known))
    }
}

/// `part / whole`, 0 for an empty whole.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The summary of per-session rows (also what `bench merge` recomputes from the shards' rows).
pub(crate) fn summarise(per_session: Vec<SessionCacheRow>, replicas_known: bool) -> SessionCache {
    let n = per_session.len() as u64;
    let (prompt, cached) = per_session.iter().fold((0, 0), |(p, c), r| {
        (p + r.prompt_tokens, c + r.cached_tokens)
    });
    let mean = if n == 0 {
        0.0
    } else {
        per_session.iter().map(|r| r.cached_share).sum::<f64>() / n as f64
    };
    SessionCache {
        sessions: n,
        cached_share_mean: mean,
        cached_share_overall: share(cached, prompt),
        one_replica: replicas_known
            .then(|| per_session.iter().filter(|r| r.replicas == 1).count() as u64),
        per_session,
    }
}
