//! Arrival times of open-loop strategies, as offsets from the benchmark's t0.

use bench_core::{Nanos, Shard};
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
        }
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
        let secs = match &mut self.kind {
            Kind::Constant { rate } => i as f64 / *rate,
            Kind::Gamma {
                dist,
                rate,
                rng,
                pos,
                at_secs,
            } => {
                while *pos < i {
                    *at_secs += match dist {
                        Some(d) => d.sample(rng.as_mut()),
                        None => 1.0 / *rate,
                    };
                    *pos += 1;
                }
                *at_secs
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
