//! Warmup and cooldown: requests that run but are excluded from statistics.

use std::fmt;
use std::str::FromStr;

use bench_core::Nanos;
use serde::{Deserialize, Serialize};

use crate::{invalid, Limits, ProfileError};

/// A warmup or cooldown, written `0.1` (a fraction of the benchmark), `30s` (seconds; a plain
/// number of 1 or more also means seconds) or `50req` (a request count).
///
/// A fraction is taken of `max_seconds` when the benchmark has one, else of its request count
/// (`max_requests` or the burst size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transient {
    /// A fraction in `[0, 1)` of the benchmark.
    Fraction(f64),
    /// A duration in seconds.
    Seconds(f64),
    /// A number of requests.
    Requests(u64),
}

/// A transient made concrete for one benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolvedTransient {
    /// By time: warmup ends this long after t0; cooldown starts this long before the end.
    Time(Nanos),
    /// By count: the first (warmup) or last (cooldown) this many requests, in dispatch order.
    Requests(u64),
}

impl Transient {
    /// Whether it excludes nothing.
    pub fn is_zero(&self) -> bool {
        match self {
            Transient::Fraction(f) | Transient::Seconds(f) => *f == 0.0,
            Transient::Requests(n) => *n == 0,
        }
    }

    /// Makes it concrete for a benchmark with `limits`, of `request_count` requests if the
    /// strategy fixes one. Fails when a fraction has nothing to be a fraction of.
    pub fn resolve(
        &self,
        limits: &Limits,
        request_count: Option<u64>,
    ) -> Result<ResolvedTransient, ProfileError> {
        let count = request_count.or(limits.max_requests);
        Ok(match *self {
            Transient::Seconds(s) => ResolvedTransient::Time(secs_to_nanos(s)),
            Transient::Requests(n) => ResolvedTransient::Requests(n),
            Transient::Fraction(f) => match (limits.max_seconds, count) {
                (_, Some(n)) if request_count.is_some() => {
                    ResolvedTransient::Requests((f * n as f64).round() as u64)
                }
                (Some(s), _) => ResolvedTransient::Time(secs_to_nanos(f * s)),
                (None, Some(n)) => ResolvedTransient::Requests((f * n as f64).round() as u64),
                (None, None) => {
                    return Err(invalid(
                        "a warmup/cooldown fraction needs max seconds or max requests",
                    ))
                }
            },
        })
    }

    fn validate(&self) -> Result<(), ProfileError> {
        match self {
            Transient::Fraction(f) if !(0.0..1.0).contains(f) => Err(invalid(format!(
                "a warmup/cooldown fraction must be in [0, 1), got {f}"
            ))),
            Transient::Seconds(s) if !(s.is_finite() && *s >= 0.0) => Err(invalid(format!(
                "warmup/cooldown seconds must be >= 0, got {s}"
            ))),
            _ => Ok(()),
        }
    }
}

fn secs_to_nanos(s: f64) -> Nanos {
    let ns = (s * 1e9).round();
    if ns > 0.0 && ns < u64::MAX as f64 {
        ns as Nanos
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        0
    }
}

impl FromStr for Transient {
    type Err = ProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = || {
            invalid(format!(
                "`{s}` is not a warmup/cooldown: use a fraction (0.1), seconds (30s) or a request count (50req)"
            ))
        };
        let v = if let Some(n) = t.strip_suffix("req") {
            Transient::Requests(n.trim().parse().map_err(|_| bad())?)
        } else if let Some(n) = t.strip_suffix('s') {
            Transient::Seconds(n.trim().parse().map_err(|_| bad())?)
        } else {
            let x: f64 = t.parse().map_err(|_| bad())?;
            if x < 1.0 {
                Transient::Fraction(x)
            } else {
                Transient::Seconds(x)
            }
        };
        v.validate()?;
        Ok(v)
    }
}

impl fmt::Display for Transient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transient::Fraction(x) => write!(f, "{x}"),
            Transient::Seconds(x) => write!(f, "{x}s"),
            Transient::Requests(n) => write!(f, "{n}req"),
        }
    }
}

impl Serialize for Transient {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Transient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Str(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Num(x) => x.to_string(),
            Raw::Str(s) => s,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_three_forms() {
        assert_eq!("0.1".parse::<Transient>(), Ok(Transient::Fraction(0.1)));
        assert_eq!("30s".parse::<Transient>(), Ok(Transient::Seconds(30.0)));
        assert_eq!("5".parse::<Transient>(), Ok(Transient::Seconds(5.0)));
        assert_eq!("50req".parse::<Transient>(), Ok(Transient::Requests(50)));
        assert!("-1s".parse::<Transient>().is_err());
        assert!("abc".parse::<Transient>().is_err());
        assert!("-0.5".parse::<Transient>().is_err());
        for t in ["0.25", "30s", "50req"] {
            let v: Transient = t.parse().expect("valid");
            assert_eq!(v.to_string().parse::<Transient>(), Ok(v));
        }
    }

    #[test]
    fn fractions_resolve_against_the_limit() {
        let time = Limits {
            max_seconds: Some(30.0),
            max_requests: Some(1000),
            ..Limits::default()
        };
        assert_eq!(
            Transient::Fraction(0.1).resolve(&time, None),
            Ok(ResolvedTransient::Time(3_000_000_000))
        );
        let count = Limits {
            max_requests: Some(1000),
            ..Limits::default()
        };
        assert_eq!(
            Transient::Fraction(0.1).resolve(&count, None),
            Ok(ResolvedTransient::Requests(100))
        );
        // A burst's own size wins over time.
        assert_eq!(
            Transient::Fraction(0.25).resolve(&time, Some(8)),
            Ok(ResolvedTransient::Requests(2))
        );
        assert!(Transient::Fraction(0.1)
            .resolve(&Limits::default(), None)
            .is_err());
    }
}
