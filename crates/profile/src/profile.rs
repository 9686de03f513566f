//! The profile of a run: a sweep, or an explicit list of benchmarks.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use bench_core::Slo;

use crate::StrategyExt as _;
use crate::{check_rate, invalid, ProfileError, Strategy, DEFAULT_THROUGHPUT_CONCURRENCY};

/// How a sweep finds the capacity (a [`SweepSpec`]'s mode; the planner in `sweep.rs` follows
/// it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepMode {
    /// Concurrency ladder, rates around the capacity, SLO search.
    #[default]
    Adaptive,
    /// guidellm's recipe: a throughput probe (512 in flight) and linspace rates.
    Guidellm,
}

/// The `--rate-type` of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateType {
    /// One request in flight.
    Synchronous,
    /// N closed-loop streams per benchmark (`--rate` lists the Ns).
    Concurrent,
    /// All requests due at t0, capped in flight.
    Throughput,
    /// Open loop at fixed rates (`--rate` lists them).
    Constant,
    /// Open loop with Poisson / gamma gaps (`--rate` lists the rates).
    Poisson,
    /// N requests at once per benchmark (`--rate` lists the Ns).
    Burst,
    /// A trace replayed at its recorded times (`--rate` lists speed-ups; default 1).
    Trace,
    /// synchronous, throughput, then rates in between.
    Sweep,
}

impl RateType {
    /// Every kind, in the order help texts list them.
    pub const ALL: [RateType; 8] = [
        RateType::Synchronous,
        RateType::Concurrent,
        RateType::Throughput,
        RateType::Constant,
        RateType::Poisson,
        RateType::Burst,
        RateType::Trace,
        RateType::Sweep,
    ];

    /// The name used on the command line and in files.
    pub fn name(&self) -> &'static str {
        match self {
            RateType::Synchronous => "synchronous",
            RateType::Concurrent => "concurrent",
            RateType::Throughput => "throughput",
            RateType::Constant => "constant",
            RateType::Poisson => "poisson",
            RateType::Burst => "burst",
            RateType::Trace => "trace",
            RateType::Sweep => "sweep",
        }
    }
}

impl fmt::Display for RateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RateType {
    type Err = ProfileError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RateType::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = RateType::ALL.iter().map(|k| k.name()).collect();
                invalid(format!(
                    "unknown rate type `{s}` (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// The open-loop kind a sweep uses between its two probes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum OpenLoop {
    /// `constant@r`.
    Constant,
    /// `poisson@r` with gamma shape `burstiness`.
    Poisson {
        /// Gamma shape (1 = Poisson).
        burstiness: f64,
        /// Seed of the arrival process.
        seed: u64,
    },
    /// `trace@Nx`: the run's trace replayed at the speed-up `rate / recorded_rate` that
    /// offers the rate (a sweep over a trace, docs/profiles.md).
    Trace {
        /// The trace's recorded mean rate (req/s at speed-up 1).
        recorded_rate: f64,
    },
}

/// A sweep: probes, then `size - 2` open-loop rates derived from what they measured, then
/// (with an SLO) the search for the highest rate meeting it. See [`crate::SweepPlanner`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Probes plus rates (at least 2): the rates are `size - 2`.
    pub size: u32,
    /// How the maximum is probed: adaptive (concurrency ladder) or guidellm (throughput).
    #[serde(default)]
    pub mode: SweepMode,
    /// In-flight cap of guidellm's throughput probe, and the top of the adaptive ladder.
    pub throughput_concurrency: u32,
    /// The kind of the rate benchmarks.
    pub open_loop: OpenLoop,
    /// Optional in-flight cap of the rate benchmarks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// The SLO whose highest sustainable rate the sweep searches (adaptive mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// The search stops when `(high - low) / low` is at most this.
    #[serde(default = "default_slo_tolerance")]
    pub slo_tolerance: f64,
    /// `--slo-precision`: after the search, rates between the ends of the SLO answer's 95%
    /// interval run again longer (or new ones between them) until the interval is at most
    /// `2 x precision` of its lower end wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_precision: Option<f64>,
    /// `--capacity-precision`: the benchmark that measured the maximum runs again longer until
    /// the maximum's 95% interval is at most `2 x precision` of its lower end wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_precision: Option<f64>,
    /// The batch the server said it runs ([`bench_core::ServerBatch`]), which chooses the
    /// adaptive ladder's rungs ([`crate::sweep`]); set by the run once it reached the server,
    /// never read from a file (the report states it under `environment.server_batch`).
    #[serde(skip)]
    pub server_batch: Option<u32>,
}

/// Default relative width of the SLO search's final bracket.
pub const DEFAULT_SLO_TOLERANCE: f64 = 0.02;

fn default_slo_tolerance() -> f64 {
    DEFAULT_SLO_TOLERANCE
}

/// The sweep's rates: `r_sync + i * (r_thr - r_sync) / (size - 2)` for `i = 1..=size-2`, so the
/// last one equals `r_thr`. Empty when `size <= 2`.
pub fn sweep_rates(r_sync: f64, r_thr: f64, size: u32) -> Vec<f64> {
    if size <= 2 {
        return Vec::new();
    }
    let n = size - 2;
    (1..=n)
        .map(|i| r_sync + f64::from(i) * (r_thr - r_sync) / f64::from(n))
        .collect()
}

/// The benchmarks of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "profile", rename_all = "snake_case")]
pub enum Profile {
    /// A sweep; its rates depend on what the probes measure.
    Sweep(SweepSpec),
    /// Benchmarks known up front, run in order.
    Fixed {
        /// The benchmarks.
        benchmarks: Vec<Strategy>,
    },
}

/// Parameters [`Profile::build`] needs beyond the kind and the rates.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOptions {
    /// `--max-concurrency`: the cap of throughput (default 512) and of open-loop kinds.
    pub max_concurrency: Option<u32>,
    /// `--burstiness` of poisson (1 = Poisson).
    pub burstiness: f64,
    /// `--seed` of poisson arrivals.
    pub seed: u64,
    /// `--sweep-size` (default 10).
    pub sweep_size: u32,
    /// Whether a sweep uses poisson instead of constant rates.
    pub sweep_poisson: bool,
    /// How a sweep probes the maximum.
    pub sweep_mode: SweepMode,
    /// The SLO a sweep searches for.
    pub slo: Option<Slo>,
    /// Final bracket width of the SLO search.
    pub slo_tolerance: f64,
    /// How narrow the SLO answer's interval is made (`--slo-precision`).
    pub slo_precision: Option<f64>,
    /// How narrow the maximum's interval is made (`--capacity-precision`).
    pub capacity_precision: Option<f64>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            max_concurrency: None,
            burstiness: 1.0,
            seed: 42,
            sweep_size: 10,
            sweep_poisson: false,
            sweep_mode: SweepMode::Adaptive,
            slo: None,
            slo_tolerance: DEFAULT_SLO_TOLERANCE,
            slo_precision: None,
            capacity_precision: None,
        }
    }
}

fn counts(kind: RateType, rates: &[f64], what: &str) -> Result<Vec<u32>, ProfileError> {
    if rates.is_empty() {
        return Err(invalid(format!(
            "{kind} needs --rate with the {what} (e.g. --rate 1,2,4)"
        )));
    }
    rates
        .iter()
        .map(|&r| {
            if r.fract() == 0.0 && r >= 1.0 && r <= f64::from(u32::MAX) {
                Ok(r as u32)
            } else {
                Err(invalid(format!(
                    "{kind} --rate values are {what}: whole numbers >= 1, got {r}"
                )))
            }
        })
        .collect()
}

/// The constant or Poisson benchmarks of `--rate r1,r2,...`.
fn open_loop(
    kind: RateType,
    rates: &[f64],
    o: &BuildOptions,
) -> Result<Vec<Strategy>, ProfileError> {
    if rates.is_empty() {
        return Err(invalid(format!(
            "{kind} needs --rate with requests per second (e.g. --rate 4 or --rate 1,2,4)"
        )));
    }
    rates
        .iter()
        .map(|&rate| {
            check_rate(rate)?;
            Ok(if kind == RateType::Constant {
                Strategy::Constant {
                    rate,
                    max_concurrency: o.max_concurrency,
                }
            } else {
                Strategy::Poisson {
                    rate,
                    burstiness: o.burstiness,
                    seed: o.seed,
                    max_concurrency: o.max_concurrency,
                }
            })
        })
        .collect()
}

/// The sweep of `--rate-type sweep [--rate SIZE]`, validated with the kinds it will produce.
fn sweep_spec(rates: &[f64], o: &BuildOptions) -> Result<SweepSpec, ProfileError> {
    // guidellm reads `--rate N` of a sweep as its size.
    let size = match rates {
        [] => o.sweep_size,
        [n] if n.fract() == 0.0 && *n >= 2.0 && *n <= 1000.0 => *n as u32,
        _ => {
            return Err(invalid(
                "sweep takes at most one --rate: its size, a whole number from 2 to 1000",
            ))
        }
    };
    if !(2..=1000).contains(&size) {
        return Err(invalid(format!(
            "sweep size must be from 2 to 1000, got {size}"
        )));
    }
    if o.slo.is_some() && o.sweep_mode == SweepMode::Guidellm {
        return Err(invalid(
            "--slo searches in the adaptive sweep only (not with --sweep-mode guidellm)",
        ));
    }
    if let Some(p) = o.slo_precision {
        if o.slo.is_none() {
            return Err(invalid(
                "--slo-precision narrows the SLO answer: give --slo too",
            ));
        }
        if !(p > 0.0 && p < 1.0) {
            return Err(invalid(format!(
                "slo precision must be above 0% and below 100%, got {}",
                p
            )));
        }
    }
    if let Some(p) = o.capacity_precision.filter(|p| !(*p > 0.0 && *p < 1.0)) {
        return Err(invalid(format!(
            "capacity precision must be above 0% and below 100%, got {p}"
        )));
    }
    if !(o.slo_tolerance > 0.0 && o.slo_tolerance < 1.0) {
        return Err(invalid(format!(
            "slo tolerance must be above 0 and below 1, got {}",
            o.slo_tolerance
        )));
    }
    let spec = SweepSpec {
        size,
        mode: o.sweep_mode,
        slo: o.slo.clone(),
        slo_tolerance: o.slo_tolerance,
        slo_precision: o.slo_precision,
        capacity_precision: o.capacity_precision,
        throughput_concurrency: o.max_concurrency.unwrap_or(DEFAULT_THROUGHPUT_CONCURRENCY),
        open_loop: if o.sweep_poisson {
            OpenLoop::Poisson {
                burstiness: o.burstiness,
                seed: o.seed,
            }
        } else {
            OpenLoop::Constant
        },
        max_concurrency: o.max_concurrency,
        server_batch: None,
    };
    // Validate the kinds it will produce with a placeholder rate.
    for s in spec.rate_strategies(1.0, 2.0)? {
        s.validate()?;
    }
    for s in [
        Strategy::Synchronous,
        Strategy::Concurrent { streams: 2 },
        Strategy::Throughput {
            max_concurrency: spec.throughput_concurrency,
        },
    ] {
        s.validate()?;
    }
    Ok(spec)
}

impl Profile {
    /// Builds and validates the profile of `--rate-type kind --rate rates`.
    pub fn build(kind: RateType, rates: &[f64], o: &BuildOptions) -> Result<Self, ProfileError> {
        let no_rates = |what: &str| {
            if rates.is_empty() {
                Ok(())
            } else {
                Err(invalid(format!("{what} takes no --rate")))
            }
        };
        if !(o.burstiness.is_finite() && o.burstiness > 0.0) {
            return Err(invalid(format!(
                "burstiness must be a positive number, got {}",
                o.burstiness
            )));
        }
        let benchmarks = match kind {
            RateType::Synchronous => {
                no_rates("synchronous")?;
                vec![Strategy::Synchronous]
            }
            RateType::Throughput => {
                no_rates("throughput (its cap is --max-concurrency)")?;
                vec![Strategy::Throughput {
                    max_concurrency: o.max_concurrency.unwrap_or(DEFAULT_THROUGHPUT_CONCURRENCY),
                }]
            }
            RateType::Concurrent => counts(kind, rates, "numbers of streams")?
                .into_iter()
                .map(|streams| Strategy::Concurrent { streams })
                .collect(),
            RateType::Burst => counts(kind, rates, "numbers of requests")?
                .into_iter()
                .map(|count| Strategy::Burst { count })
                .collect(),
            RateType::Constant | RateType::Poisson => open_loop(kind, rates, o)?,
            RateType::Trace => if rates.is_empty() { &[1.0][..] } else { rates }
                .iter()
                .map(|&speedup| Strategy::Trace {
                    speedup,
                    max_concurrency: o.max_concurrency,
                    recorded_rate: None,
                })
                .collect(),
            RateType::Sweep => return Ok(Profile::Sweep(sweep_spec(rates, o)?)),
        };
        for s in &benchmarks {
            s.validate()?;
        }
        Ok(Profile::Fixed { benchmarks })
    }

    /// How many benchmarks the run has.
    pub fn len(&self) -> usize {
        match self {
            Profile::Sweep(s) => s.size as usize,
            Profile::Fixed { benchmarks } => benchmarks.len(),
        }
    }

    /// Whether the run has no benchmark.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    #[test]
    fn guidellm_docs_example() {
        // guidellm's docs: sync 0.67, throughput 12.95 gives 2.20, 3.74, ..., 12.95.
        // (The docs rounded the probes, so allow half a cent.)
        let r = sweep_rates(0.67, 12.95, 10);
        let docs = [2.20, 3.74, 5.27, 6.81, 8.34, 9.88, 11.41, 12.95];
        assert_eq!(r.len(), docs.len());
        for (x, d) in r.iter().zip(docs) {
            assert!((x - d).abs() <= 0.006, "{x} vs {d}");
        }
        assert!(sweep_rates(1.0, 2.0, 2).is_empty());
        assert_eq!(sweep_rates(1.0, 2.0, 3), vec![2.0]);
    }

    proptest! {
        #[test]
        fn sweep_rates_are_linspace(a in 0.01f64..1e4, b in 0.01f64..1e4, size in 3u32..64) {
            let r = sweep_rates(a, b, size);
            prop_assert_eq!(r.len(), (size - 2) as usize);
            let last = *r.last().unwrap_or(&f64::NAN);
            prop_assert!((last - b).abs() <= 1e-9 * b.max(1.0));
            let step = (b - a) / f64::from(size - 2);
            for (i, x) in r.iter().enumerate() {
                prop_assert!((x - (a + (i as f64 + 1.0) * step)).abs() <= 1e-9 * a.max(b));
            }
        }
    }

    #[test]
    fn build_lists_and_sweeps() {
        let o = BuildOptions::default();
        let p = Profile::build(RateType::Constant, &[1.0, 2.5], &o).expect("valid");
        assert_eq!(p.len(), 2);
        let p = Profile::build(RateType::Burst, &[1.0, 2.0, 4.0], &o).expect("valid");
        assert_eq!(
            p,
            Profile::Fixed {
                benchmarks: vec![
                    Strategy::Burst { count: 1 },
                    Strategy::Burst { count: 2 },
                    Strategy::Burst { count: 4 }
                ]
            }
        );
        let p = Profile::build(RateType::Sweep, &[], &o).expect("valid");
        assert_eq!(p.len(), 10);
        let Profile::Sweep(s) = Profile::build(RateType::Sweep, &[5.0], &o).expect("valid") else {
            panic!("a sweep")
        };
        assert_eq!(s.size, 5);
        assert_eq!(s.throughput_concurrency, 512);
        let t = Profile::build(RateType::Throughput, &[], &o).expect("valid");
        assert_eq!(
            t,
            Profile::Fixed {
                benchmarks: vec![Strategy::Throughput {
                    max_concurrency: 512
                }]
            }
        );
    }

    #[test]
    fn build_rejects_bad_input() {
        let o = BuildOptions::default();
        assert!(Profile::build(RateType::Constant, &[], &o).is_err());
        assert!(Profile::build(RateType::Constant, &[-1.0], &o).is_err());
        assert!(Profile::build(RateType::Concurrent, &[1.5], &o).is_err());
        assert!(Profile::build(RateType::Burst, &[0.0], &o).is_err());
        assert!(Profile::build(RateType::Synchronous, &[3.0], &o).is_err());
        assert!(Profile::build(RateType::Sweep, &[1.0], &o).is_err());
        assert!(Profile::build(RateType::Sweep, &[3.0, 4.0], &o).is_err());
        let bad_b = BuildOptions {
            burstiness: 0.0,
            ..BuildOptions::default()
        };
        assert!(Profile::build(RateType::Poisson, &[1.0], &bad_b).is_err());
        assert!("nope".parse::<RateType>().is_err());
        assert_eq!("poisson".parse::<RateType>(), Ok(RateType::Poisson));
    }

    #[test]
    fn sweep_rate_strategies() {
        let spec = SweepSpec {
            size: 4,
            mode: SweepMode::Guidellm,
            throughput_concurrency: 512,
            open_loop: OpenLoop::Constant,
            max_concurrency: None,
            slo: None,
            slo_tolerance: DEFAULT_SLO_TOLERANCE,
            slo_precision: None,
            capacity_precision: None,
            server_batch: None,
        };
        let s = spec.rate_strategies(1.0, 3.0).expect("valid");
        assert_eq!(
            s.iter().map(|s| s.label()).collect::<Vec<_>>(),
            ["constant@2.00", "constant@3.00"]
        );
        assert!(spec.rate_strategies(0.0, 3.0).is_err());
    }
}
