//! Load shapes of bench, as pure data and arithmetic (no I/O, no clocks of its own).
//!
//! A [`Strategy`] is one benchmark's load shape, carrying its own parameters. The scheduler
//! turns it into send times; the report uses its [`Strategy::label`] (guidellm's row labels).

use serde::{Deserialize, Serialize};

/// One benchmark's load shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Strategy {
    /// One request in flight; the next is sent when the previous ends.
    Synchronous,
    /// `streams` closed-loop streams.
    Concurrent {
        /// Number of streams.
        streams: u32,
    },
    /// Every request due at t0, at most `max_concurrency` in flight.
    Throughput {
        /// In-flight cap.
        max_concurrency: u32,
    },
    /// Open loop at `rate` requests/s on an absolute clock, `t_i = t0 + i / rate`.
    Constant {
        /// Requests per second.
        rate: f64,
        /// Optional in-flight cap; waiting requests are counted as client queue time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_concurrency: Option<u32>,
    },
    /// Open loop with gamma-distributed gaps (shape `burstiness`, mean `1 / rate`);
    /// `burstiness = 1` is a Poisson process.
    Poisson {
        /// Requests per second.
        rate: f64,
        /// Gamma shape; 1 is Poisson, lower is burstier.
        burstiness: f64,
        /// Seed of the arrival process.
        seed: u64,
        /// Optional in-flight cap.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_concurrency: Option<u32>,
    },
    /// `count` requests at t0; the benchmark ends when all have finished.
    Burst {
        /// Number of requests.
        count: u32,
    },
}

impl Strategy {
    /// The short kind name (`synchronous`, `constant`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Strategy::Synchronous => "synchronous",
            Strategy::Concurrent { .. } => "concurrent",
            Strategy::Throughput { .. } => "throughput",
            Strategy::Constant { .. } => "constant",
            Strategy::Poisson { .. } => "poisson",
            Strategy::Burst { .. } => "burst",
        }
    }

    /// The row label reports use, as guidellm prints them: `synchronous`, `throughput`,
    /// `concurrent@8`, `constant@2.20`, `poisson@2.20`, `burst@64`.
    pub fn label(&self) -> String {
        match self {
            Strategy::Synchronous => "synchronous".into(),
            Strategy::Throughput { .. } => "throughput".into(),
            Strategy::Concurrent { streams } => format!("concurrent@{streams}"),
            Strategy::Constant { rate, .. } => format!("constant@{rate:.2}"),
            Strategy::Poisson { rate, .. } => format!("poisson@{rate:.2}"),
            Strategy::Burst { count } => format!("burst@{count}"),
        }
    }

    /// The request rate asked for, for open-loop kinds.
    pub fn target_rate(&self) -> Option<f64> {
        match self {
            Strategy::Constant { rate, .. } | Strategy::Poisson { rate, .. } => Some(*rate),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_guidellm() {
        assert_eq!(Strategy::Synchronous.label(), "synchronous");
        assert_eq!(
            Strategy::Throughput {
                max_concurrency: 512
            }
            .label(),
            "throughput"
        );
        assert_eq!(
            Strategy::Constant {
                rate: 2.2,
                max_concurrency: None
            }
            .label(),
            "constant@2.20"
        );
        assert_eq!(Strategy::Concurrent { streams: 8 }.label(), "concurrent@8");
    }
}
