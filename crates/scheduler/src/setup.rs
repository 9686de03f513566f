//! One benchmark's setup ([`BenchmarkSetup`]) and its resolution into the numbers the pacer and
//! the collecting loop need: the request count, the deadline and the warmup / cooldown bounds.

use bench_core::{Nanos, Shard, Strategy};
use bench_profile::{Limits, ProfileError, ResolvedTransient, StrategyExt as _, Transient};
use serde::{Deserialize, Serialize};

use crate::SchedulerError;

/// One benchmark to run: a strategy, its limits and its warmup / cooldown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSetup {
    /// The load shape.
    pub strategy: Strategy,
    /// What ends it.
    pub limits: Limits,
    /// Requests excluded from statistics at the start.
    pub warmup: Option<Transient>,
    /// Requests excluded from statistics at the end.
    pub cooldown: Option<Transient>,
}

pub(crate) fn secs(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

pub(crate) fn nanos(secs: f64) -> Nanos {
    let ns = (secs * 1e9).round();
    if ns <= 0.0 {
        0
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as Nanos
    }
}

/// A setup with everything resolved and checked.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) count: Option<u64>,
    pub(crate) max_seconds: Option<Nanos>,
    pub(crate) warmup: Option<ResolvedTransient>,
    pub(crate) cooldown: Option<ResolvedTransient>,
}

impl BenchmarkSetup {
    fn error(&self, source: ProfileError) -> SchedulerError {
        SchedulerError::Invalid {
            label: self.strategy.label(),
            source,
        }
    }

    fn invalid(&self, message: String) -> SchedulerError {
        self.error(ProfileError::Invalid(message))
    }

    fn resolve_transient(
        &self,
        t: &Option<Transient>,
    ) -> Result<Option<ResolvedTransient>, SchedulerError> {
        match t {
            Some(t) if !t.is_zero() => Ok(Some(
                t.resolve(&self.limits, self.strategy.request_count())
                    .map_err(|e| self.error(e))?,
            )),
            _ => Ok(None),
        }
    }

    pub(crate) fn resolve(&self) -> Result<Resolved, SchedulerError> {
        self.strategy.validate().map_err(|e| self.error(e))?;
        self.limits.validate().map_err(|e| self.error(e))?;
        let count = match (self.strategy.request_count(), self.limits.max_requests) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Run to a precision target, a benchmark ends at its budget at the latest.
        let max_seconds = self.limits.deadline_seconds().map(nanos);
        if self.limits.precision.is_some() && self.cooldown.is_some_and(|c| !c.is_zero()) {
            return Err(self.invalid(
                "a cooldown needs a known end, and a benchmark run to a precision target ends when it is met"
                    .into(),
            ));
        }
        // A trace ends with its last row.
        let ends_by_itself = self.strategy.speedup().is_some();
        if count.is_none() && max_seconds.is_none() && !ends_by_itself {
            return Err(self.invalid("it would never end: give max seconds or max requests".into()));
        }
        let r = Resolved {
            count,
            max_seconds,
            warmup: self.resolve_transient(&self.warmup)?,
            cooldown: self.resolve_transient(&self.cooldown)?,
        };
        self.check_transients(&r)?;
        Ok(r)
    }

    /// [`BenchmarkSetup::resolve`] for `shard`'s share (docs/distributed.md): its share of the
    /// request count and of a count warmup / cooldown (the requests of the whole run's first
    /// and last ones that are its own), and of the in-flight cap. Refused when a shard's
    /// share of the cap would be empty (fewer streams than shards).
    pub(crate) fn resolve_for(
        &self,
        shard: Option<Shard>,
    ) -> Result<(Resolved, Option<u32>), SchedulerError> {
        let r = self.resolve()?;
        let cap = self.strategy.concurrency_cap();
        let Some(s) = shard.filter(|s| !s.is_whole()) else {
            return Ok((r, cap));
        };
        let cap = match cap {
            Some(c) if s.share_u32(c) == 0 => {
                return Err(self.invalid(format!(
                    "its {c} concurrent request(s) cannot be split over {} shards (shard {s} would get none)",
                    s.count
                )))
            }
            c => c.map(|c| s.share_u32(c)),
        };
        let warmup = match r.warmup {
            Some(ResolvedTransient::Requests(w)) => Some(ResolvedTransient::Requests(s.share(w))),
            w => w,
        };
        let cooldown = match (r.cooldown, r.count) {
            (Some(ResolvedTransient::Requests(c)), Some(n)) => Some(ResolvedTransient::Requests(
                s.share(n) - s.share(n.saturating_sub(c)),
            )),
            (c, _) => c,
        };
        let count = r.count.map(|n| s.share(n));
        if count == Some(0) {
            return Err(self.invalid(format!(
                "its {} request(s) cannot be split over {} shards (shard {s} would get none)",
                r.count.unwrap_or_default(),
                s.count
            )));
        }
        let r = Resolved {
            count,
            warmup,
            cooldown,
            ..r
        };
        Ok((r, cap))
    }

    /// A cooldown needs a known end, and something must be left to measure.
    fn check_transients(&self, r: &Resolved) -> Result<(), SchedulerError> {
        match r.cooldown {
            Some(ResolvedTransient::Time(_)) if r.max_seconds.is_none() => {
                return Err(self.invalid(
                    "a cooldown in seconds needs max seconds (the end must be known in advance)"
                        .into(),
                ))
            }
            Some(ResolvedTransient::Requests(_)) if r.count.is_none() => {
                return Err(self.invalid(
                    "a cooldown in requests needs max requests (the last request must be known in advance)"
                        .into(),
                ))
            }
            _ => {}
        }
        let req = |t: Option<ResolvedTransient>| match t {
            Some(ResolvedTransient::Requests(n)) => n,
            _ => 0,
        };
        if let Some(n) = r.count {
            if req(r.warmup) + req(r.cooldown) >= n {
                return Err(self.invalid(format!(
                    "warmup and cooldown exclude all {n} requests; nothing is left to measure"
                )));
            }
        }
        let time = |t: Option<ResolvedTransient>| match t {
            Some(ResolvedTransient::Time(n)) => n,
            _ => 0,
        };
        if let Some(max) = r.max_seconds {
            if time(r.warmup).saturating_add(time(r.cooldown)) >= max {
                return Err(self.invalid(format!(
                    "warmup and cooldown cover all {} s; nothing is left to measure",
                    secs(max)
                )));
            }
        }
        Ok(())
    }
}
