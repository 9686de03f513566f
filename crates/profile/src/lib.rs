//! Load shapes of bench, as pure data and arithmetic (no I/O, no clocks of its own).
//!
//! This crate owns *what* load a benchmark applies: the [`Strategy`] of one benchmark (an enum
//! per kind carrying its own parameters), the [`Profile`] of a run (a sweep, or an explicit list
//! of rates / streams / counts), the arrival times of open-loop kinds ([`Arrivals`]), the
//! [`Limits`] that end a benchmark (time, requests, errors, over-saturation) and the warmup /
//! cooldown [`Transient`]s that are excluded from statistics. It does not own *how* the load is
//! applied (that is `bench-scheduler`) nor how results are summarised (`bench-report`).

mod arrivals;
mod limits;
mod profile;
mod sweep;
mod transient;

pub use arrivals::Arrivals;
pub use limits::{Limits, OverSaturation, SaturationSample};
pub use profile::{
    sweep_rates, BuildOptions, OpenLoop, Profile, RateType, SweepSpec, DEFAULT_SLO_TOLERANCE,
};
pub use sweep::{
    capacity_rates, slo_bracket, slo_next_rate, Reading, SweepMode, SweepPlanner, SweepRole,
    SweepStep, LADDER_GAIN, LADDER_LENGTH, LADDER_MAX_RUNGS, MAX_REFINE_STEPS, SECOND_RATE,
    TOP_RATE,
};
pub use transient::{ResolvedTransient, Transient};

use serde::{Deserialize, Serialize};

/// Errors of this crate: a load shape or limit that cannot be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// A parameter is out of range; the message names it and says why.
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn invalid(msg: impl Into<String>) -> ProfileError {
    ProfileError::Invalid(msg.into())
}

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

    /// How requests are released.
    pub fn release(&self) -> Release {
        match self {
            Strategy::Synchronous | Strategy::Concurrent { .. } => Release::ClosedLoop,
            Strategy::Throughput { .. } | Strategy::Burst { .. } => Release::AtStart,
            Strategy::Constant { .. } | Strategy::Poisson { .. } => Release::Scheduled,
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
            } => *max_concurrency,
            Strategy::Burst { .. } => None,
        }
    }

    /// The number of requests the strategy itself fixes (`burst`), if any.
    pub fn request_count(&self) -> Option<u64> {
        match self {
            Strategy::Burst { count } => Some(u64::from(*count)),
            _ => None,
        }
    }

    /// The arrival schedule of an open-loop strategy (`None` for the other kinds).
    pub fn arrivals(&self) -> Option<Arrivals> {
        match self {
            Strategy::Constant { rate, .. } => Some(Arrivals::constant(*rate)),
            Strategy::Poisson {
                rate,
                burstiness,
                seed,
                ..
            } => Some(Arrivals::gamma(*rate, *burstiness, *seed)),
            _ => None,
        }
    }

    /// Checks every parameter: positive finite rates, at least one stream / request, a
    /// positive burstiness, non-zero caps.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let cap_ok = |c: &Option<u32>| match c {
            Some(0) => Err(invalid("max concurrency must be at least 1")),
            _ => Ok(()),
        };
        match self {
            Strategy::Synchronous => Ok(()),
            Strategy::Concurrent { streams } => {
                if *streams == 0 {
                    Err(invalid("concurrent needs at least 1 stream"))
                } else {
                    Ok(())
                }
            }
            Strategy::Throughput { max_concurrency } => cap_ok(&Some(*max_concurrency)),
            Strategy::Constant {
                rate,
                max_concurrency,
            } => {
                check_rate(*rate)?;
                cap_ok(max_concurrency)
            }
            Strategy::Poisson {
                rate,
                burstiness,
                max_concurrency,
                ..
            } => {
                check_rate(*rate)?;
                if !(burstiness.is_finite() && *burstiness > 0.0) {
                    return Err(invalid(format!(
                        "burstiness must be a positive number, got {burstiness}"
                    )));
                }
                cap_ok(max_concurrency)
            }
            Strategy::Burst { count } => {
                if *count == 0 {
                    Err(invalid("burst needs at least 1 request"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

pub(crate) fn check_rate(rate: f64) -> Result<(), ProfileError> {
    // 1e7 req/s is far beyond any client; it also keeps `i / rate` in nanoseconds exact enough.
    if rate.is_finite() && rate > 0.0 && rate <= 1e7 {
        Ok(())
    } else {
        Err(invalid(format!(
            "rate must be a positive number of requests per second (at most 1e7), got {rate}"
        )))
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
        assert!(Strategy::Synchronous.arrivals().is_none());
    }

    #[test]
    fn validation_rejects_bad_parameters() {
        assert!(Strategy::Concurrent { streams: 0 }.validate().is_err());
        assert!(Strategy::Burst { count: 0 }.validate().is_err());
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Strategy::Constant {
                rate,
                max_concurrency: None
            }
            .validate()
            .is_err());
        }
        assert!(Strategy::Poisson {
            rate: 1.0,
            burstiness: 0.0,
            seed: 0,
            max_concurrency: None
        }
        .validate()
        .is_err());
        assert!(Strategy::Constant {
            rate: 1.0,
            max_concurrency: Some(0)
        }
        .validate()
        .is_err());
        assert!(Strategy::Constant {
            rate: 1.0,
            max_concurrency: Some(4)
        }
        .validate()
        .is_ok());
    }
}
