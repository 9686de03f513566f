//! The load shape of one benchmark ([`Strategy`]) as plain data: its kind, label, target rate,
//! how it releases requests and its in-flight cap. Arrival schedules and validation live in
//! `bench-profile`; this is only the vocabulary every crate shares.

use serde::{Deserialize, Serialize};

/// Default in-flight cap of `throughput` (guidellm's).
pub const DEFAULT_THROUGHPUT_CONCURRENCY: u32 = 512;

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
    /// A trace replayed open loop: each request at its recorded arrival
    /// ([`crate::RequestSpec::at`]) divided by `speedup` (2 = twice as fast).
    Trace {
        /// How many times faster than recorded.
        speedup: f64,
        /// Optional in-flight cap; waiting requests are counted as client queue time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_concurrency: Option<u32>,
        /// The trace's recorded mean request rate (req/s at speed-up 1), set by a sweep over
        /// the trace: the replay then offers `speedup x recorded_rate` requests/s
        /// ([`Strategy::target_rate`]) and is judged like an open-loop rate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        recorded_rate: Option<f64>,
    },
}

/// When a strategy releases requests, as the scheduler needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Release {
    /// Closed loop: a request is released as soon as a slot is free (synchronous, concurrent).
    ClosedLoop,
    /// Every request is due at t0 (throughput, burst).
    AtStart,
    /// Open loop on a precomputed schedule of arrival times.
    Scheduled,
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
            Strategy::Trace { .. } => "trace",
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
            Strategy::Trace { speedup, .. } => format!("trace@{speedup:.2}x"),
        }
    }

    /// The request rate asked for, for open-loop kinds (a trace replay's only when its
    /// recorded mean rate is known: `speedup x recorded_rate`).
    pub fn target_rate(&self) -> Option<f64> {
        match self {
            Strategy::Constant { rate, .. } | Strategy::Poisson { rate, .. } => Some(*rate),
            Strategy::Trace {
                speedup,
                recorded_rate: Some(r),
                ..
            } => Some(speedup * r),
            _ => None,
        }
    }

    /// How requests are released.
    pub fn release(&self) -> Release {
        match self {
            Strategy::Synchronous | Strategy::Concurrent { .. } => Release::ClosedLoop,
            Strategy::Throughput { .. } | Strategy::Burst { .. } => Release::AtStart,
            Strategy::Constant { .. } | Strategy::Poisson { .. } | Strategy::Trace { .. } => {
                Release::Scheduled
            }
        }
    }

    /// The most requests in flight at once, if capped.
    pub fn concurrency_cap(&self) -> Option<u32> {
        match self {
            Strategy::Synchronous => Some(1),
            Strategy::Concurrent { streams } => Some(*streams),
            Strategy::Throughput { max_concurrency } => Some(*max_concurrency),
            Strategy::Constant {
                max_concurrency, ..
            }
            | Strategy::Poisson {
                max_concurrency, ..
            }
            | Strategy::Trace {
                max_concurrency, ..
            } => *max_concurrency,
            Strategy::Burst { .. } => None,
        }
    }

    /// The speed-up of a trace replay (`None` for the other kinds).
    pub fn speedup(&self) -> Option<f64> {
        match self {
            Strategy::Trace { speedup, .. } => Some(*speedup),
            _ => None,
        }
    }

    /// The fixed number of closed-loop streams (synchronous 1, concurrent N); `None` for
    /// loads released at the start or on a schedule.
    pub fn closed_loop_streams(&self) -> Option<u32> {
        match self.release() {
            Release::ClosedLoop => self.concurrency_cap(),
            _ => None,
        }
    }

    /// The number of requests the strategy itself fixes (`burst`), if any.
    pub fn request_count(&self) -> Option<u64> {
        match self {
            Strategy::Burst { count } => Some(u64::from(*count)),
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
        assert_eq!(Strategy::Burst { count: 64 }.label(), "burst@64");
    }

    #[test]
    fn caps_and_release() {
        assert_eq!(Strategy::Synchronous.concurrency_cap(), Some(1));
        assert_eq!(Strategy::Synchronous.release(), Release::ClosedLoop);
        assert_eq!(Strategy::Burst { count: 3 }.concurrency_cap(), None);
        assert_eq!(Strategy::Burst { count: 3 }.request_count(), Some(3));
        assert_eq!(
            Strategy::Throughput { max_concurrency: 7 }.release(),
            Release::AtStart
        );
    }
}
