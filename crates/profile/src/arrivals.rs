//! Arrival times of open-loop strategies, as offsets from the benchmark's t0.

use bench_core::{Nanos, Ramp, RampOver, Shard};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};

const NANOS_PER_SEC: f64 = 1e9;

/// An endless schedule of intended send times, in nanoseconds after t0, non-decreasing.
///
/// `constant` computes every time from its index (`t_i = i / rate`), never by summing gaps, so
/// rounding cannot drift over millions of requests; the first request is due at t0 and there is
/// no initial burst. `gamma` draws seeded gaps of shape `b` and mean `1 / rate` (vLLM's
/// `--burstiness`; `b = 1` is a Poisson process) and sums them in `f64` seconds.
///
/// A shard's schedule ([`Arrivals::sharded`]) hands out arrivals `index, index + count, ...`
/// of the same schedule: the union over the shards is the single-process schedule, time for
/// time (for gamma too, since every shard draws the same seeded gaps and keeps its own).
#[derive(Debug, Clone)]
pub struct Arrivals {
    /// Index in the whole schedule of the next arrival handed out.
    index: u64,
    /// Distance between two arrivals handed out (the shard count; 1 unsharded).
    stride: u64,
    handed: u64,
    kind: Kind,
    /// The ramp-up, when the rate climbs to its target ([`Arrivals::ramped`]).
    ramping: Option<Ramping>,
}

/// A ramp-up's state: the ramp, the rate it climbs to, and for a ramp by request the
/// benchmark's request count and the walk over the gaps so far.
#[derive(Debug, Clone)]
struct Ramping {
    ramp: Ramp,
    rate: f64,
    requests: u64,
    /// Index of the arrival `t` is the time of (a ramp by request).
    pos: u64,
    t: f64,
}

impl Ramping {
    /// The gap after arrival `pos` of a ramp by request: `unit_gap` (mean 1) at its rate.
    fn step(&mut self, unit_gap: f64) {
        if self.ramp.over == RampOver::Requests {
            self.t += unit_gap
                / self
                    .ramp
                    .rate_of_request(self.pos, self.requests, self.rate);
        }
        self.pos += 1;
    }

    /// The send time (s) of the arrival the walk is at, whose unit-rate time is `unit`.
    fn time(&self, unit: f64) -> f64 {
        match self.ramp.over {
            RampOver::Seconds(_) => self.ramp.time_of(unit, self.rate),
            RampOver::Requests => self.t,
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Constant {
        rate: f64,
    },
    Gamma {
        // `None` when the parameters were invalid; then the schedule degrades to constant so
        // that nothing panics (validation rejects such strategies before a run).
        dist: Option<Gamma<f64>>,
        rate: f64,
        rng: Box<StdRng>,
        /// Index of the arrival `at_secs` is the time of.
        pos: u64,
        at_secs: f64,
    },
}

impl Arrivals {
    /// `t_i = i / rate`.
    pub fn constant(rate: f64) -> Self {
        Self {
            index: 0,
            stride: 1,
            handed: 0,
            kind: Kind::Constant { rate },
            ramping: None,
        }
    }

    /// Gamma gaps with shape `burstiness` and scale `1 / (rate * burstiness)` (mean `1 / rate`,
    /// variance `1 / (rate^2 * burstiness)`), seeded; the first request is due at t0.
    pub fn gamma(rate: f64, burstiness: f64, seed: u64) -> Self {
        let dist = Gamma::new(burstiness, 1.0 / (rate * burstiness)).ok();
        Self {
            index: 0,
            stride: 1,
            handed: 0,
            kind: Kind::Gamma {
                dist,
                rate,
                rng: Box::new(StdRng::seed_from_u64(seed)),
                pos: 0,
                at_secs: 0.0,
            },
            ramping: None,
        }
    }

    /// This (fresh) schedule climbing to its rate by `ramp` (`bench_core::Ramp`): by time, a
    /// time change of the schedule (arrival `i` sent when the ramp's cumulative rate reaches
    /// its unit-rate time); by request, each gap at the rate of the request before it, over
    /// `requests` requests (vLLM's rule).
    pub fn ramped(mut self, ramp: Ramp, requests: u64) -> Self {
        let rate = match &self.kind {
            Kind::Constant { rate } | Kind::Gamma { rate, .. } => *rate,
        };
        self.ramping = Some(Ramping {
            ramp,
            rate,
            requests,
            pos: 0,
            t: 0.0,
        });
        self
    }

    /// `shard`'s share of this (fresh) schedule: arrivals `i` with `i mod count == index`.
    /// Gamma still draws every gap of the whole schedule (`count` draws per arrival, no
    /// allocation), so that its times are the whole schedule's.
    pub fn sharded(mut self, shard: Shard) -> Self {
        self.index = u64::from(shard.index);
        self.stride = u64::from(shard.count);
        self
    }

    /// How many arrival times have been handed out.
    pub fn count(&self) -> u64 {
        self.handed
    }
}

impl Iterator for Arrivals {
    type Item = Nanos;

    fn next(&mut self) -> Option<Nanos> {
        let i = self.index;
        self.index = self.index.saturating_add(self.stride);
        self.handed += 1;
        let Self { kind, ramping, .. } = self;
        let secs = match kind {
            Kind::Constant { rate } => match ramping {
                None => i as f64 / *rate,
                Some(r) => {
                    // Only a ramp by request walks its gaps; a ramp by time is a time change
                    // of the index itself.
                    while r.ramp.over == RampOver::Requests && r.pos < i {
                        r.step(1.0);
                    }
                    r.time(i as f64)
                }
            },
            Kind::Gamma {
                dist,
                rate,
                rng,
                pos,
                at_secs,
            } => {
                while *pos < i {
                    let gap = match dist {
                        Some(d) => d.sample(rng.as_mut()),
                        None => 1.0 / *rate,
                    };
                    if let Some(r) = ramping.as_mut() {
                        r.step(gap * *rate);
                    }
                    *at_secs += gap;
                    *pos += 1;
                }
                match ramping {
                    None => *at_secs,
                    Some(r) => r.time(*at_secs * *rate),
                }
            }
        };
        Some(to_nanos(secs))
    }
}

fn to_nanos(secs: f64) -> Nanos {
    let ns = (secs * NANOS_PER_SEC).round();
    if ns.is_finite() && ns > 0.0 {
        // Saturating: an absurd schedule ends at u64::MAX rather than wrapping.
        if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as Nanos
        }
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert, proptest};

    #[test]
    fn constant_is_absolute_and_starts_at_zero() {
        let a: Vec<_> = Arrivals::constant(4.0).take(5).collect();
        assert_eq!(
            a,
            vec![0, 250_000_000, 500_000_000, 750_000_000, 1_000_000_000]
        );
        // 3 req/s: no drift after a million requests (cumulative 333_333_333 ns gaps would
        // lose a third of a nanosecond each).
        let mut c = Arrivals::constant(3.0);
        let last = c.nth(3_000_000).expect("endless");
        assert_eq!(last, 1_000_000_000_000_000);
    }

    fn mean_var(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
        (m, v)
    }

    fn gaps(rate: f64, b: f64, seed: u64, n: usize) -> Vec<f64> {
        let t: Vec<_> = Arrivals::gamma(rate, b, seed).take(n + 1).collect();
        t.windows(2)
            .map(|w| (w[1] - w[0]) as f64 / NANOS_PER_SEC)
            .collect()
    }

    #[test]
    fn poisson_gaps_have_exponential_moments() {
        // Exponential with rate 10: mean 0.1 s, variance 0.01 s^2.
        let (m, v) = mean_var(&gaps(10.0, 1.0, 42, 200_000));
        assert!((m - 0.1).abs() < 0.1 * 0.01, "mean {m}");
        assert!((v - 0.01).abs() < 0.01 * 0.03, "variance {v}");
    }

    #[test]
    fn gamma_gaps_have_the_right_moments() {
        // Shape 0.5, mean 1/20 s: variance 1 / (20^2 * 0.5) = 0.005.
        let (m, v) = mean_var(&gaps(20.0, 0.5, 7, 200_000));
        assert!((m - 0.05).abs() < 0.05 * 0.015, "mean {m}");
        assert!((v - 0.005).abs() < 0.005 * 0.05, "variance {v}");
    }

    #[test]
    fn gamma_is_reproducible_per_seed() {
        let a: Vec<_> = Arrivals::gamma(5.0, 1.0, 1).take(100).collect();
        let b: Vec<_> = Arrivals::gamma(5.0, 1.0, 1).take(100).collect();
        let c: Vec<_> = Arrivals::gamma(5.0, 1.0, 2).take(100).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a[0], 0);
    }

    /// The shards' schedules, merged, are the whole schedule time for time.
    fn union_of_shards(whole: &Arrivals, count: u32, n: usize) -> Vec<Nanos> {
        let mut all: Vec<Nanos> = (0..count)
            .flat_map(|index| {
                let s = Shard { index, count };
                whole
                    .clone()
                    .sharded(s)
                    .take(n.div_ceil(count as usize) + 1)
            })
            .collect();
        all.sort_unstable();
        all.truncate(n);
        all
    }

    #[test]
    fn shards_split_constant_and_gamma_schedules_exactly() {
        for whole in [Arrivals::constant(7.0), Arrivals::gamma(50.0, 0.5, 3)] {
            for count in [1, 2, 3, 8] {
                let want: Vec<_> = whole.clone().take(500).collect();
                assert_eq!(union_of_shards(&whole, count, 500), want, "{count} shards");
            }
        }
        let mut s = Arrivals::gamma(5.0, 1.0, 9).sharded(Shard { index: 1, count: 3 });
        let want: Vec<_> = Arrivals::gamma(5.0, 1.0, 9)
            .skip(1)
            .step_by(3)
            .take(4)
            .collect();
        assert_eq!(s.by_ref().take(4).collect::<Vec<_>>(), want);
        assert_eq!(Arrivals::count(&s), 4);
    }

    fn by_time(shape: bench_core::RampShape, d: f64, from: f64) -> Ramp {
        Ramp {
            shape,
            over: RampOver::Seconds(d),
            from_rps: from,
            in_window: false,
        }
    }

    #[test]
    fn a_constant_ramp_by_time_sends_each_arrival_when_the_ramps_count_reaches_it() {
        use bench_core::RampShape::Linear;
        // 0 to 20 req/s over 10 s: Λ(t) = t² (t ≤ 10), 100 arrivals in the ramp, then one
        // every 50 ms: arrival i at √i s, from 100 on at 10 + (i - 100) / 20.
        let r = by_time(Linear, 10.0, 0.0);
        let a: Vec<Nanos> = Arrivals::constant(20.0).ramped(r, 0).take(121).collect();
        for (i, &t) in a.iter().enumerate() {
            let want = if i <= 100 {
                (i as f64).sqrt()
            } else {
                10.0 + (i as f64 - 100.0) / 20.0
            };
            assert_eq!(t, to_nanos(want), "arrival {i}");
        }
    }

    #[test]
    fn a_poisson_ramp_by_time_is_a_poisson_process_of_the_ramps_rate() {
        use bench_core::RampShape::Linear;
        // Over the ramp (0 to 50 req/s in 20 s: 500 arrivals expected), count the arrivals of
        // each 4 s span against ∫ r(t) dt: 20, 60, 100, 140, 180 (within 4 sd, many seeds).
        let r = by_time(Linear, 20.0, 0.0);
        let mut counts = [0.0f64; 5];
        let seeds = 40;
        for seed in 0..seeds {
            for t in Arrivals::gamma(50.0, 1.0, seed).ramped(r, 0) {
                if t >= 20 * 1_000_000_000 {
                    break;
                }
                counts[(t / 4_000_000_000) as usize] += 1.0;
            }
        }
        for (k, c) in counts.iter().enumerate() {
            let want = 20.0 + 40.0 * k as f64;
            let mean = c / seeds as f64;
            let sd = (want / seeds as f64).sqrt();
            assert!((mean - want).abs() < 4.0 * sd, "span {k}: {mean} vs {want}");
        }
    }

    #[test]
    fn a_ramp_by_request_takes_each_gap_at_its_requests_rate() {
        use bench_core::RampShape::Linear;
        // vLLM's rule: 5 requests from 1 to 5 req/s: rates 1, 2, 3, 4, 5; gaps 1, 1/2, 1/3, 1/4.
        let r = Ramp {
            shape: Linear,
            over: RampOver::Requests,
            from_rps: 1.0,
            in_window: true,
        };
        let a: Vec<Nanos> = Arrivals::constant(5.0).ramped(r, 5).take(5).collect();
        let want = [0.0, 1.0, 1.5, 1.5 + 1.0 / 3.0, 1.5 + 1.0 / 3.0 + 0.25];
        assert_eq!(a, want.map(to_nanos).to_vec());
    }

    #[test]
    fn shards_split_ramped_schedules_exactly() {
        use bench_core::RampShape::{Exponential, Linear};
        let by_request = Ramp {
            shape: Exponential,
            over: RampOver::Requests,
            from_rps: 2.0,
            in_window: true,
        };
        for whole in [
            Arrivals::constant(30.0).ramped(by_time(Linear, 5.0, 0.0), 0),
            Arrivals::gamma(30.0, 0.7, 4).ramped(by_time(Exponential, 5.0, 3.0), 0),
            Arrivals::constant(30.0).ramped(by_request, 300),
            Arrivals::gamma(30.0, 1.0, 5).ramped(by_request, 300),
        ] {
            let want: Vec<_> = whole.clone().take(300).collect();
            for count in [2, 3] {
                assert_eq!(union_of_shards(&whole, count, 300), want, "{count} shards");
            }
        }
    }

    proptest! {
        #[test]
        fn constant_matches_formula(rate in 0.01f64..1e6, i in 0u64..50_000) {
            let mut a = Arrivals::constant(rate);
            let t = a.nth(i as usize).unwrap_or_default();
            let want = (i as f64 / rate * 1e9).round();
            prop_assert!((t as f64 - want).abs() <= 1.0);
        }

        #[test]
        fn schedules_never_go_back(rate in 0.01f64..1e5, b in 0.05f64..10.0, seed in any::<u64>()) {
            let t: Vec<_> = Arrivals::gamma(rate, b, seed).take(200).collect();
            prop_assert!(t.windows(2).all(|w| w[0] <= w[1]));
            let c: Vec<_> = Arrivals::constant(rate).take(200).collect();
            prop_assert!(c.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
