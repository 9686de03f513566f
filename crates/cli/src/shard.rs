//! `--shard`, `--shards` and `--start-at`: which share of the run this process sends and when
//! every shard starts (docs/distributed.md), resolved into the runner's
//! [`ShardPlan`](bench_runner::ShardPlan). The share itself is [`bench_core::Shard`]'s rule.

use std::time::{Duration, SystemTime};

use bench_core::Shard;
pub use bench_runner::shard::rfc3339;
use bench_runner::ShardPlan;
use clap::Args;

use crate::UsageError;

/// Kubernetes sets it in every pod of an Indexed Job: the pod's completion index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// Flags of a distributed run (shared by `bench run` and `bench sweep`).
#[derive(Debug, Clone, Default, Args)]
pub struct ShardArgs {
    /// Send shard I of N of every benchmark: arrivals, requests, streams and sessions
    /// `i` with `i mod N == I` (docs/distributed.md). Needs --start-at when N > 1.
    #[arg(long, value_name = "I/N", help_heading = "Distributed")]
    pub shard: Option<String>,
    /// How many shards run; this one's index is read from JOB_COMPLETION_INDEX (set by a
    /// Kubernetes Indexed Job). The same as --shard $JOB_COMPLETION_INDEX/N.
    #[arg(
        long,
        value_name = "N",
        env = "BENCH_SHARDS",
        hide_env_values = true,
        conflicts_with = "shard",
        help_heading = "Distributed"
    )]
    pub shards: Option<String>,
    /// When the first benchmark starts, on every shard alike: RFC 3339
    /// (2026-11-25T16:00:00Z) or unix seconds. The run clock counts from it.
    #[arg(
        long,
        value_name = "TIME",
        env = "BENCH_START_AT",
        hide_env_values = true,
        help_heading = "Distributed"
    )]
    pub start_at: Option<String>,
}

impl ShardArgs {
    /// Resolves the flags (`index_env`: the value of JOB_COMPLETION_INDEX, if set).
    pub fn resolve(&self, index_env: Option<&str>) -> Result<ShardPlan, UsageError> {
        let shard = match (&self.shard, &self.shards) {
            (Some(s), _) => {
                Some(Shard::parse(s).map_err(|e| UsageError::new(format!("--shard: {e}")))?)
            }
            (None, Some(n)) => Some(from_count(n, index_env)?),
            (None, None) => None,
        };
        let start_at = match &self.start_at {
            Some(t) => Some(parse_time(t)?),
            None => None,
        };
        if let (Some(s), None) = (shard, &start_at) {
            if !s.is_whole() {
                return Err(UsageError::new(format!(
                    "--shard {s} needs --start-at TIME: the shards start together from it, and their results are merged on its clock"
                )));
            }
        }
        Ok(ShardPlan { shard, start_at })
    }
}

/// `--shards N` with the index from JOB_COMPLETION_INDEX.
fn from_count(n: &str, index_env: Option<&str>) -> Result<Shard, UsageError> {
    let count: u32 = n
        .trim()
        .parse()
        .map_err(|_| UsageError::new(format!("--shards {n}: not a whole number")))?;
    let Some(i) = index_env else {
        return Err(UsageError::new(format!(
            "--shards {n}: {INDEX_ENV} is not set (outside an Indexed Job, give --shard I/{n})"
        )));
    };
    Shard::parse(&format!("{}/{count}", i.trim()))
        .map_err(|e| UsageError::new(format!("--shards {n} with {INDEX_ENV}={i}: {e}")))
}

/// RFC 3339 or unix seconds (fractions allowed), with its RFC 3339 UTC form.
pub fn parse_time(text: &str) -> Result<(SystemTime, String), UsageError> {
    let bad = || {
        UsageError::new(format!(
            "--start-at {text}: not an RFC 3339 time (2026-11-25T16:00:00Z) nor unix seconds"
        ))
    };
    let t = text.trim();
    let at = if let Ok(secs) = t.parse::<f64>() {
        if !secs.is_finite() || !(0.0..=1e11).contains(&secs) {
            return Err(bad());
        }
        SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs)
    } else {
        let dt = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .map_err(|_| bad())?;
        let ns = dt.unix_timestamp_nanos();
        if ns < 0 {
            return Err(bad());
        }
        SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).map_err(|_| bad())?)
    };
    Ok((at, rfc3339(at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(shard: Option<&str>, shards: Option<&str>, start: Option<&str>) -> ShardArgs {
        ShardArgs {
            shard: shard.map(Into::into),
            shards: shards.map(Into::into),
            start_at: start.map(Into::into),
        }
    }

    #[test]
    fn flags_resolve_and_bad_ones_name_the_flag() {
        let p = args(Some("1/3"), None, Some("1700000000"))
            .resolve(None)
            .expect("valid");
        assert_eq!(p.shard, Some(Shard { index: 1, count: 3 }));
        assert_eq!(
            p.start_at.expect("given").1,
            "2023-11-14T22:13:20Z",
            "unix seconds as RFC 3339"
        );
        let p = args(None, Some("4"), Some("2026-11-25T16:00:00Z"))
            .resolve(Some("2"))
            .expect("valid");
        assert_eq!(p.shard, Some(Shard { index: 2, count: 4 }));
        let e = args(None, Some("4"), Some("0"))
            .resolve(None)
            .expect_err("refused");
        assert!(e.to_string().contains("JOB_COMPLETION_INDEX"), "{e}");
        let e = args(None, Some("4"), Some("0"))
            .resolve(Some("4"))
            .expect_err("refused");
        assert!(e.to_string().contains("below the count"), "{e}");
        let e = args(Some("1/2"), None, None)
            .resolve(None)
            .expect_err("refused");
        assert!(e.to_string().contains("--start-at"), "{e}");
        let e = args(Some("2-3"), None, Some("0"))
            .resolve(None)
            .expect_err("refused");
        assert!(e.to_string().starts_with("--shard:"), "{e}");
        let e = args(None, None, Some("tomorrow"))
            .resolve(None)
            .expect_err("refused");
        assert!(e.to_string().starts_with("--start-at tomorrow"), "{e}");
        // One shard of one is a plain run and needs no shared start.
        assert!(args(Some("0/1"), None, None).resolve(None).is_ok());
    }
}
