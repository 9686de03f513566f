//! What ends a benchmark: time, request count, errors, over-saturation.

use serde::{Deserialize, Serialize};

use crate::{invalid, ProfileError};

/// The error-rate limit is only judged once this many requests have finished, so that one
/// early failure cannot stop a benchmark.
pub const ERROR_RATE_MIN_FINISHED: u64 = 10;

/// Default drain bound, seconds: long enough for an overloaded real server to work off a
/// backlog of several minutes of requests (a server at twice its capacity for a 5-minute
/// benchmark needs 5 more minutes); a request still unfinished after it is counted as
/// incomplete.
pub const DEFAULT_DRAIN_TIMEOUT: f64 = 300.0;

/// Limits of one benchmark. The first one reached ends it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Stop dispatching after this many seconds; requests still in flight then drain (see
    /// `drain_timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<f64>,
    /// The most seconds a time-boxed benchmark waits, after it stops sending, for the
    /// requests still in flight (the drain); those unfinished then are cancelled and counted
    /// as incomplete. `None` means [`DEFAULT_DRAIN_TIMEOUT`]; 0 cancels at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<f64>,
    /// Dispatch at most this many requests; the benchmark ends when the last has finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    /// Stop once this many requests have errored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_errors: Option<u64>,
    /// Stop once this fraction (0..1] of finished requests have errored (judged after
    /// `ERROR_RATE_MIN_FINISHED` (10) have finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate: Option<f64>,
    /// Stop an open-loop benchmark the server cannot keep up with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_saturation: Option<OverSaturation>,
    /// Run until the key figures are precise (docs/metrics.md, "Precision"): `max_seconds`
    /// is then the least a benchmark runs, the budget the most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<bench_core::Precision>,
}

impl Limits {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if let Some(s) = self.max_seconds {
            if !(s.is_finite() && s > 0.0) {
                return Err(invalid(format!(
                    "max seconds must be a positive number, got {s}"
                )));
            }
        }
        if let Some(d) = self.drain_timeout {
            if !(d.is_finite() && d >= 0.0) {
                return Err(invalid(format!(
                    "drain timeout must be 0 or a positive number of seconds, got {d}"
                )));
            }
        }
        if self.max_requests == Some(0) {
            return Err(invalid("max requests must be at least 1"));
        }
        if self.max_errors == Some(0) {
            return Err(invalid(
                "max errors must be at least 1 (0 would stop every benchmark at its first request)",
            ));
        }
        if let Some(r) = self.max_error_rate {
            if !(r > 0.0 && r <= 1.0) {
                return Err(invalid(format!(
                    "max error rate must be in (0, 1], got {r}"
                )));
            }
        }
        if let Some(o) = &self.over_saturation {
            o.validate()?;
        }
        if let Some(p) = &self.precision {
            self.validate_precision(p)?;
        }
        Ok(())
    }

    fn validate_precision(&self, p: &bench_core::Precision) -> Result<(), ProfileError> {
        if !(p.target.is_finite() && p.target > 0.0 && p.target < 1.0) {
            return Err(invalid(format!(
                "precision must be a fraction above 0 and below 1, got {}",
                p.target
            )));
        }
        let Some(least) = self.max_seconds else {
            return Err(invalid(
                "precision runs a benchmark by time: it needs max seconds (the least it runs)",
            ));
        };
        if !(p.budget_s.is_finite() && p.budget_s >= least) {
            return Err(invalid(format!(
                "the precision budget must be at least max seconds ({least}), got {}",
                p.budget_s
            )));
        }
        Ok(())
    }

    /// The most seconds a benchmark runs: the precision budget when there is one, else
    /// `max_seconds`.
    pub fn deadline_seconds(&self) -> Option<f64> {
        self.precision.map(|p| p.budget_s).or(self.max_seconds)
    }

    /// The drain bound in seconds ([`DEFAULT_DRAIN_TIMEOUT`] when not set).
    pub fn drain_seconds(&self) -> f64 {
        self.drain_timeout.unwrap_or(DEFAULT_DRAIN_TIMEOUT)
    }

    /// Whether the error limits are reached after `finished` requests of which `errored`
    /// failed.
    pub fn errors_exceeded(&self, finished: u64, errored: u64) -> bool {
        if let Some(max) = self.max_errors {
            if errored >= max {
                return true;
            }
        }
        if let Some(rate) = self.max_error_rate {
            if finished >= ERROR_RATE_MIN_FINISHED && errored as f64 >= rate * finished as f64 {
                return true;
            }
        }
        false
    }
}

/// The over-saturation stop, for open-loop benchmarks (`constant`, `poisson`).
///
/// The rule: once a second, after the first `min_seconds`, compare now with `window_seconds`
/// ago. The benchmark is over-saturated when **both**
/// 1. the backlog (requests in flight plus requests due but not yet sent) grew by more than
///    `tolerance * rate * window_seconds` requests (a growth of a tenth of a window's worth of
///    arrivals, by default), and
/// 2. requests completed during the window fall short of `(1 - tolerance) * rate *
///    window_seconds`.
///
/// A server that keeps up has a steady backlog (rate times latency) and completes what arrives;
/// one that does not piles requests up while its completions fall behind. Either sign alone is
/// noise (latency may legitimately grow at the start; completions lag arrivals by one latency).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverSaturation {
    /// Seconds before the rule is first applied.
    #[serde(default = "default_min_seconds")]
    pub min_seconds: f64,
    /// Seconds between the two samples compared.
    #[serde(default = "default_window_seconds")]
    pub window_seconds: f64,
    /// Relative tolerance of both conditions.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
}

fn default_min_seconds() -> f64 {
    10.0
}
fn default_window_seconds() -> f64 {
    5.0
}
fn default_tolerance() -> f64 {
    0.1
}

impl Default for OverSaturation {
    fn default() -> Self {
        Self {
            min_seconds: default_min_seconds(),
            window_seconds: default_window_seconds(),
            tolerance: default_tolerance(),
        }
    }
}

/// One sample of a running open-loop benchmark, taken by the scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SaturationSample {
    /// Seconds since t0.
    pub at_secs: f64,
    /// Requests in flight plus requests due but not yet sent.
    pub backlog: f64,
    /// Requests completed so far.
    pub completed: u64,
}

impl OverSaturation {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if !(self.min_seconds.is_finite() && self.min_seconds >= 0.0) {
            return Err(invalid("over-saturation min_seconds must be >= 0"));
        }
        if !(self.window_seconds.is_finite() && self.window_seconds > 0.0) {
            return Err(invalid("over-saturation window_seconds must be > 0"));
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return Err(invalid("over-saturation tolerance must be in (0, 1)"));
        }
        Ok(())
    }

    /// Applies the rule to two samples `then` and `now` (`now` later), at target `rate`.
    pub fn is_over_saturated(
        &self,
        rate: f64,
        then: &SaturationSample,
        now: &SaturationSample,
    ) -> bool {
        let span = now.at_secs - then.at_secs;
        if now.at_secs < self.min_seconds || span <= 0.0 {
            return false;
        }
        let expected = rate * span;
        let grew = now.backlog - then.backlog > self.tolerance * expected;
        let done = now.completed.saturating_sub(then.completed) as f64;
        let behind = done < (1.0 - self.tolerance) * expected;
        grew && behind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(at_secs: f64, backlog: f64, completed: u64) -> SaturationSample {
        SaturationSample {
            at_secs,
            backlog,
            completed,
        }
    }

    #[test]
    fn error_limits() {
        let l = Limits {
            max_errors: Some(3),
            ..Limits::default()
        };
        assert!(!l.errors_exceeded(100, 2));
        assert!(l.errors_exceeded(3, 3));
        let l = Limits {
            max_error_rate: Some(0.5),
            ..Limits::default()
        };
        assert!(!l.errors_exceeded(4, 4), "too few finished to judge");
        assert!(l.errors_exceeded(10, 5));
        assert!(!l.errors_exceeded(10, 4));
    }

    #[test]
    fn over_saturation_rule() {
        let o = OverSaturation::default();
        // Keeping up at 100/s: backlog steady, 500 completed in 5 s.
        assert!(!o.is_over_saturated(100.0, &s(10.0, 50.0, 500), &s(15.0, 52.0, 1000)));
        // Falling behind: backlog grew by 200, only 300 completed.
        assert!(o.is_over_saturated(100.0, &s(10.0, 50.0, 500), &s(15.0, 250.0, 800)));
        // Same, but too early to judge.
        assert!(!o.is_over_saturated(100.0, &s(4.0, 50.0, 500), &s(9.0, 250.0, 800)));
        // Backlog grew but completions keep up (latency rising at the start): not yet.
        assert!(!o.is_over_saturated(100.0, &s(10.0, 50.0, 500), &s(15.0, 250.0, 980)));
    }

    #[test]
    fn validation() {
        assert!(Limits {
            max_seconds: Some(0.0),
            ..Limits::default()
        }
        .validate()
        .is_err());
        assert!(Limits {
            max_error_rate: Some(1.5),
            ..Limits::default()
        }
        .validate()
        .is_err());
        assert!(Limits {
            max_requests: Some(0),
            ..Limits::default()
        }
        .validate()
        .is_err());
        assert!(Limits::default().validate().is_ok());
    }
}
