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
pub use limits::{Limits, OverSaturation, SaturationSample, DEFAULT_DRAIN_TIMEOUT};
pub use profile::{
    sweep_rates, BuildOptions, OpenLoop, Profile, RateType, SweepMode, SweepSpec,
    DEFAULT_SLO_TOLERANCE,
};
pub use sweep::{
    capacity_rates, rung_latency, rung_length, slo_bracket, slo_next_rate, Reading, SweepPlanner,
    SweepRole, SweepStep, LADDER_GAIN, LADDER_LENGTH, LADDER_MAX_RUNGS, LADDER_WARMUP, LENGTHEN,
    MAX_LENGTH, MAX_REFINE_STEPS, RUNG_LATENCIES, SECOND_RATE, TOP_RATE,
};
pub use transient::{ResolvedTransient, Transient};

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

pub use bench_core::{Release, Strategy, DEFAULT_THROUGHPUT_CONCURRENCY};

/// What `bench-profile` adds to the shared [`Strategy`]: its arrival schedule and the check of
/// its parameters.
pub trait StrategyExt {
    /// The arrival schedule of an open-loop strategy (`None` for the other kinds).
    fn arrivals(&self) -> Option<Arrivals>;
    /// Checks every parameter: positive finite rates, at least one stream / request, a
    /// positive burstiness, non-zero caps.
    fn validate(&self) -> Result<(), ProfileError>;
}

impl StrategyExt for Strategy {
    fn arrivals(&self) -> Option<Arrivals> {
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

    fn validate(&self) -> Result<(), ProfileError> {
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
            Strategy::Trace {
                speedup,
                max_concurrency,
                ..
            } => {
                if speedup.is_finite() && *speedup > 0.0 && *speedup <= 1e6 {
                    cap_ok(max_concurrency)
                } else {
                    Err(invalid(format!(
                        "speedup must be a positive number (at most 1e6), got {speedup}"
                    )))
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
    fn only_open_loop_kinds_have_arrivals() {
        assert!(Strategy::Synchronous.arrivals().is_none());
        assert!(Strategy::Constant {
            rate: 2.0,
            max_concurrency: None
        }
        .arrivals()
        .is_some());
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
