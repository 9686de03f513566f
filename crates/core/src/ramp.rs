//! Ramp-up: a load that climbs to its target instead of starting at it (docs/metrics.md,
//! "Ramp-up"). One rule for the scheduler, which paces by it, and the report, which states it.
//!
//! - **By time** (`--rampup 30s`, guidellm's `rampup_duration`, AIPerf's
//!   `--request-rate-ramp-duration` / `--concurrency-ramp-duration`): an open loop's rate climbs
//!   from `from_rps` (0 unless given) to the benchmark's rate over `D` seconds, then holds. The
//!   arrivals are a time change of the unramped schedule: arrival `i` of a unit-rate schedule
//!   (`s_i = i` for constant, the summed unit-mean gamma gaps for Poisson) is sent when the
//!   ramp's cumulative rate `Λ(t)` reaches `s_i`, so a constant ramp is computed from its index
//!   (no drift) and a Poisson one is a Poisson process of the ramp's rate. A closed loop of `n`
//!   streams starts its stream `j` at `D × j / (n - 1)`.
//! - **By request** (vLLM's `--ramp-up-strategy S --ramp-up-start-rps A --ramp-up-end-rps B`):
//!   request `i` of `N` is sent at the rate `r(i / (N - 1))` and the gap after it is that rate's
//!   (`1 / r` constant, a gamma gap of mean `1 / r` Poisson); the whole benchmark is the ramp.
//!
//! Linear: `r(p) = a + (b - a) p`; exponential: `r(p) = a (b / a)^p` (`a > 0`).

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// How the rate climbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RampShape {
    /// Evenly, `a + (b - a) p`.
    Linear,
    /// By a constant factor, `a (b / a)^p`.
    Exponential,
}

impl RampShape {
    /// `linear` or `exponential`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "linear" => Ok(Self::Linear),
            "exponential" | "exp" => Ok(Self::Exponential),
            other => Err(format!(
                "`{other}` is no ramp-up strategy: use linear or exponential"
            )),
        }
    }
}

/// What the ramp runs over; written `{seconds: D}` or `requests` (the same in JSON and YAML).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(into = "OverRepr", from = "OverRepr")]
pub enum RampOver {
    /// This many seconds from the benchmark's start, then the rate holds.
    Seconds(f64),
    /// The benchmark's requests (`--max-requests`): request `i` of `N` at progress
    /// `i / (N - 1)` (vLLM's rule).
    Requests,
}

/// [`RampOver`] as written: a map, or the word `requests` (untagged, so that it reads back
/// through the flattened [`RampRecord`] from YAML too).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(untagged)]
enum OverRepr {
    Seconds { seconds: f64 },
    Requests(RequestsWord),
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RequestsWord {
    Requests,
}

impl From<RampOver> for OverRepr {
    fn from(o: RampOver) -> Self {
        match o {
            RampOver::Seconds(seconds) => OverRepr::Seconds { seconds },
            RampOver::Requests => OverRepr::Requests(RequestsWord::Requests),
        }
    }
}

impl From<OverRepr> for RampOver {
    fn from(o: OverRepr) -> Self {
        match o {
            OverRepr::Seconds { seconds } => RampOver::Seconds(seconds),
            OverRepr::Requests(_) => RampOver::Requests,
        }
    }
}

/// A ramp-up, run-wide: each benchmark climbs to its own rate (or streams).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    /// Linear or exponential.
    pub shape: RampShape,
    /// Over a duration or over the requests.
    pub over: RampOver,
    /// The starting rate (requests/s); 0 for a linear ramp unless given; an exponential one
    /// needs it above 0.
    pub from_rps: f64,
    /// Whether the ramp lies inside the measurement window (a ramp by request always does: it
    /// is the whole benchmark). A ramp by time is outside unless asked (`--rampup-in-window`).
    pub in_window: bool,
}

/// The most rate changes a report lists (`Ramp::changes`).
pub const MAX_CHANGES: usize = 100;

impl Ramp {
    /// Checks the ramp against the target `rate` (requests/s; `None` for a closed loop).
    pub fn validate(&self, rate: Option<f64>) -> Result<(), String> {
        if let RampOver::Seconds(d) = self.over {
            if !(d.is_finite() && d > 0.0) {
                return Err(format!("the ramp-up must last more than 0 s, got {d}"));
            }
        }
        if !(self.from_rps.is_finite() && self.from_rps >= 0.0) {
            return Err(format!(
                "the ramp-up's start rate must be 0 or more, got {}",
                self.from_rps
            ));
        }
        if self.shape == RampShape::Exponential && self.from_rps <= 0.0 {
            return Err(
                "an exponential ramp-up needs a start rate above 0 (--ramp-up-start-rps)".into(),
            );
        }
        if self.over == RampOver::Requests && self.from_rps <= 0.0 {
            // The first request's gap is taken at the start rate.
            return Err(
                "a ramp by request needs a start rate above 0 (--ramp-up-start-rps)".into(),
            );
        }
        match rate {
            Some(r) if self.from_rps > r => Err(format!(
                "the ramp-up's start rate {} is above the rate it climbs to, {r}",
                self.from_rps
            )),
            _ => Ok(()),
        }
    }

    /// The ramp's duration (ns) when it runs over time.
    pub fn duration(&self) -> Option<Nanos> {
        match self.over {
            RampOver::Seconds(d) => Some((d * 1e9).round() as Nanos),
            RampOver::Requests => None,
        }
    }

    /// The rate at progress `p` in `[0, 1]` of a ramp to `rate`.
    pub fn rate_at_progress(&self, p: f64, rate: f64) -> f64 {
        let (a, p) = (self.from_rps, p.clamp(0.0, 1.0));
        match self.shape {
            RampShape::Linear => a + (rate - a) * p,
            RampShape::Exponential => a * (rate / a).powf(p),
        }
    }

    /// The rate `t` seconds after the start of a ramp to `rate` by time (the rate holds after
    /// it); a ramp by request has no rate by time and gives `rate`.
    pub fn rate_at(&self, t: f64, rate: f64) -> f64 {
        match self.over {
            RampOver::Seconds(d) => self.rate_at_progress(t / d, rate),
            RampOver::Requests => rate,
        }
    }

    /// The rate of request `i` of `n` in a ramp by request to `rate` (vLLM: progress
    /// `i / (n - 1)`).
    pub fn rate_of_request(&self, i: u64, n: u64, rate: f64) -> f64 {
        let p = i as f64 / (n.saturating_sub(1).max(1)) as f64;
        self.rate_at_progress(p, rate)
    }

    /// `Λ(D)`: the arrivals a ramp by time to `rate` holds.
    fn ramp_arrivals(&self, d: f64, rate: f64) -> f64 {
        let a = self.from_rps;
        match self.shape {
            RampShape::Linear => d * (a + rate) / 2.0,
            RampShape::Exponential if (rate - a).abs() <= 1e-12 * rate => d * a,
            RampShape::Exponential => d * (rate - a) / (rate / a).ln(),
        }
    }

    /// When (seconds after the start) the cumulative rate of a ramp by time to `rate` reaches
    /// `s`: the send time of unit-rate arrival `s`. A ramp by request gives `s / rate`.
    pub fn time_of(&self, s: f64, rate: f64) -> f64 {
        let RampOver::Seconds(d) = self.over else {
            return s / rate;
        };
        if s <= 0.0 {
            return 0.0;
        }
        let a = self.from_rps;
        let in_ramp = self.ramp_arrivals(d, rate);
        if s >= in_ramp {
            return d + (s - in_ramp) / rate;
        }
        match self.shape {
            RampShape::Linear => {
                // Λ(t) = a t + k t², k = (rate - a) / (2d): the root that is 0 at s = 0, in
                // the form that keeps its digits when k is small.
                let k = (rate - a) / (2.0 * d);
                if k <= 0.0 {
                    return s / a;
                }
                2.0 * s / (a + (a * a + 4.0 * k * s).sqrt())
            }
            RampShape::Exponential => {
                let lq = (rate / a).ln();
                if lq.abs() <= 1e-12 {
                    return s / a;
                }
                d / lq * (1.0 + s * lq / (a * d)).ln()
            }
        }
    }

    /// The start (ns after the benchmark's start) of stream `j` of `n` in a closed loop ramped
    /// by time: evenly from 0 to the ramp's end.
    pub fn stream_start(&self, j: u32, n: u32) -> Nanos {
        match self.duration() {
            Some(d) if n > 1 => (d as f64 * f64::from(j) / f64::from(n - 1)).round() as Nanos,
            _ => 0,
        }
    }

    /// The whole rates a ramp to `rate` passes, at most [`MAX_CHANGES`] of them (a step of
    /// whole requests/s that keeps them under it), from the start rate up: the levels a
    /// report lists the change to.
    pub fn levels(&self, rate: f64) -> Vec<f64> {
        let span = (rate - self.from_rps).max(0.0);
        let step = (span / MAX_CHANGES as f64).ceil().max(1.0);
        let first = (self.from_rps / step).floor() * step + step;
        (0..MAX_CHANGES)
            .map(|k| first + k as f64 * step)
            .take_while(|&l| l <= rate)
            .collect()
    }
}

/// One change of the rate during a benchmark's ramp, as sent: the first request sent at a new
/// level ([`Ramp::levels`]; streams for a closed loop).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateChange {
    /// Seconds after the benchmark's start (the request's intended send time).
    pub at_s: f64,
    /// The level reached: requests/s, or streams.
    pub rate: f64,
}

/// What a benchmark's report says of its ramp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampRecord {
    /// The ramp as configured.
    #[serde(flatten)]
    pub ramp: Ramp,
    /// The rate (requests/s) or streams it climbed to.
    pub to: f64,
    /// When the rate changed, as sent.
    pub changes: Vec<RateChange>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(shape: RampShape, d: f64, from: f64) -> Ramp {
        Ramp {
            shape,
            over: RampOver::Seconds(d),
            from_rps: from,
            in_window: false,
        }
    }

    /// Λ(t) by the midpoint rule, for checking the closed-form inverse.
    fn cumulative(r: &Ramp, t: f64, rate: f64) -> f64 {
        let n = 100_000;
        let h = t / n as f64;
        (0..n)
            .map(|k| r.rate_at((k as f64 + 0.5) * h, rate) * h)
            .sum()
    }

    #[test]
    fn the_send_time_of_an_arrival_inverts_the_cumulative_rate() {
        for r in [
            ramp(RampShape::Linear, 10.0, 0.0),
            ramp(RampShape::Linear, 10.0, 2.0),
            ramp(RampShape::Exponential, 10.0, 1.0),
            ramp(RampShape::Exponential, 4.0, 20.0),
        ] {
            for s in [0.5, 7.0, 40.0, 99.0, 150.0, 400.0] {
                let t = r.time_of(s, 20.0);
                let back = cumulative(&r, t, 20.0);
                assert!(
                    (back - s).abs() < 1e-3 * s.max(1.0),
                    "{r:?} s={s}: t={t} Λ={back}"
                );
            }
        }
        let lin = ramp(RampShape::Linear, 10.0, 0.0);
        assert_eq!(lin.time_of(0.0, 20.0), 0.0);
        // Linear from 0 to 20 over 10 s holds 100 arrivals; then one every 50 ms.
        assert!((lin.time_of(100.0, 20.0) - 10.0).abs() < 1e-12);
        assert!((lin.time_of(120.0, 20.0) - 11.0).abs() < 1e-12);
    }

    #[test]
    fn a_ramp_by_request_follows_vllms_progress() {
        let r = Ramp {
            shape: RampShape::Linear,
            over: RampOver::Requests,
            from_rps: 1.0,
            in_window: true,
        };
        assert_eq!(r.rate_of_request(0, 11, 21.0), 1.0);
        assert_eq!(r.rate_of_request(5, 11, 21.0), 11.0);
        assert_eq!(r.rate_of_request(10, 11, 21.0), 21.0);
        let e = Ramp {
            shape: RampShape::Exponential,
            ..r
        };
        assert!((e.rate_of_request(5, 11, 16.0) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn levels_are_whole_rates_at_most_a_hundred() {
        let r = ramp(RampShape::Linear, 1.0, 0.0);
        assert_eq!(r.levels(3.0), vec![1.0, 2.0, 3.0]);
        assert_eq!(r.levels(2.5), vec![1.0, 2.0]);
        let big = r.levels(1000.0);
        assert_eq!(big.len(), 100);
        assert_eq!((big[0], big[99]), (10.0, 1000.0));
        let from = ramp(RampShape::Linear, 1.0, 2.5).levels(5.0);
        assert_eq!(from, vec![3.0, 4.0, 5.0]);
    }

    #[test]
    fn streams_start_evenly_over_the_ramp() {
        let r = ramp(RampShape::Linear, 3.0, 0.0);
        let starts: Vec<Nanos> = (0..4).map(|j| r.stream_start(j, 4)).collect();
        assert_eq!(starts, vec![0, 1_000_000_000, 2_000_000_000, 3_000_000_000]);
        assert_eq!(r.stream_start(0, 1), 0);
    }

    #[test]
    fn bad_ramps_are_named() {
        let e = ramp(RampShape::Exponential, 5.0, 0.0).validate(Some(10.0));
        assert!(e.expect_err("no start rate").contains("start rate above 0"));
        assert!(ramp(RampShape::Linear, 0.0, 0.0).validate(None).is_err());
        assert!(ramp(RampShape::Linear, 5.0, 20.0)
            .validate(Some(10.0))
            .is_err());
        assert!(ramp(RampShape::Linear, 5.0, 2.0)
            .validate(Some(10.0))
            .is_ok());
        let by_request = Ramp {
            over: RampOver::Requests,
            ..ramp(RampShape::Linear, 1.0, 0.0)
        };
        assert!(
            by_request.validate(Some(10.0)).is_err(),
            "a first gap at 0 req/s"
        );
        assert!(RampShape::parse("cubic")
            .expect_err("no shape")
            .contains("cubic"));
    }
}
