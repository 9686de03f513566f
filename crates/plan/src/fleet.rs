//! The deployment plan (docs/planning.md): from each server configuration's sweep, the replicas
//! that serve a demand at the SLO, the GPUs and the cost, ranked.
//!
//! A replica is planned to carry at most the **lower end** of the 95% interval of its
//! configuration's rate limit: the SLO-limited rate with `--slo` (the lower end is then a rate
//! the sweep ran and surely met, docs/metrics.md, "Intervals"), else the maximum sustained
//! throughput (no latency bound: the fleet runs at saturation). The replica count is the
//! fewest replicas that surely hold the limit, assuming replicas scale linearly behind the
//! balancer.

use std::collections::BTreeMap;

use bench_core::{CrossingInterval, Slo};
use serde::{Deserialize, Serialize};

use bench_report::{open_loop, BenchmarkReport, Metric, RunReport};

/// Version of the plan file's layout.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// Which rate limit a replica is planned at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanBasis {
    /// The highest rate meeting every SLO bound (`--slo`).
    Slo,
    /// The maximum sustained throughput (no SLO given: no latency bound).
    Capacity,
}

/// What the fleet must serve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Demand {
    /// The demand as given (`--demand`) or read from a trace, requests/s.
    pub requests_per_s: f64,
    /// The growth factor applied to it (`--growth`, 1 = none).
    pub growth: f64,
    /// What the fleet is sized for: `requests_per_s * growth`.
    pub planned_requests_per_s: f64,
    /// Where the demand came from (`--demand`, or the trace and its window).
    pub source: String,
}

impl Demand {
    /// A demand of `requests_per_s` grown by `growth`, from `source`.
    pub fn new(requests_per_s: f64, growth: f64, source: impl Into<String>) -> Demand {
        Demand {
            requests_per_s,
            growth,
            planned_requests_per_s: requests_per_s * growth,
            source: source.into(),
        }
    }
}

/// The prices and sizes the fleet's figures use.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Costs {
    /// GPUs one replica of the configuration uses.
    pub gpus_per_replica: f64,
    /// Price of one GPU for an hour (`--gpu-hour-cost`), in the user's currency.
    pub gpu_hour_cost: Option<f64>,
}

/// One configuration's fleet for the demand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fleet {
    /// The rate limit planned on.
    pub basis: PlanBasis,
    /// The limit's point value, requests/s per replica.
    pub rate_per_replica: f64,
    /// Its 95% interval, when the sweep's benchmarks had intervals.
    pub rate_interval: Option<CrossingInterval>,
    /// Replicas needed: `ceil(demand / interval low)`; `None` when the interval's lower end is 0
    /// (no rate swept surely met the limit) or missing.
    pub replicas: Option<u32>,
    /// Replicas the point value alone would ask: `ceil(demand / point)`.
    pub replicas_at_point: u32,
    /// Fewest replicas the interval allows: `ceil(demand / interval high)` (1 when the interval
    /// is open above).
    pub replicas_low: Option<u32>,
    /// Planned capacity over demand, minus 1: `replicas * low / demand - 1`.
    pub headroom: Option<f64>,
    /// GPUs of the fleet.
    pub gpus: Option<f64>,
    /// Cost of the fleet per hour.
    pub cost_per_hour: Option<f64>,
    /// Cost per million output tokens served at the demand.
    pub cost_per_million_output_tokens: Option<f64>,
    /// Output tokens/s the demand asks of the fleet (demand times the mean output tokens of
    /// a completed request at the planned rate).
    pub output_tokens_per_s: f64,
    /// `output_tokens_per_s` over the fleet's GPUs.
    pub output_tokens_per_s_per_gpu: Option<f64>,
    /// One user's decode speed at the planned rate, `1000 / median TPOT` (tokens/s): at the
    /// demand each replica runs at or under that rate, so users see at least this.
    pub output_tokens_per_s_per_user: Option<f64>,
    /// The GPUs' energy per output token at the planned rate (J), when the sweep scraped
    /// them (`--gpu-metrics`; docs/metrics.md, "GPU telemetry and energy").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_per_output_token_j: Option<f64>,
}

/// One point of a configuration's sweep on the Pareto chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParetoPoint {
    /// The benchmark's label (`constant@12.50`).
    pub label: String,
    /// Completed requests/s per replica.
    pub requests_per_s: f64,
    /// `1000 / median TPOT`: one user's decode speed.
    pub tokens_per_s_per_user: f64,
    /// Output tokens/s over the replica's GPUs.
    pub tokens_per_s_per_gpu: f64,
}

/// What became of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigStatus {
    /// Swept, and its fleet computed.
    Planned,
    /// Swept, but no rate met the SLO.
    CannotMeetSlo,
    /// The server never became ready (exited, or the ready timeout passed).
    FailedToStart,
    /// The server exited during the sweep.
    Died,
    /// The sweep failed (its error is the reason).
    SweepFailed,
    /// The plan was interrupted before or during this configuration.
    Interrupted,
}

/// One server configuration of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanConfig {
    /// `name=value` pairs joined by `,` (`target` without a serve command).
    pub name: String,
    /// The parameters' values.
    pub params: BTreeMap<String, String>,
    /// The serve command run, with its parameters and port filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// What became of it.
    pub status: ConfigStatus,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last lines of its server's log, when it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Its server's log file, relative to the plan's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    /// Its sweep's run file, relative to the plan's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_file: Option<String>,
    /// GPUs one replica uses.
    pub gpus_per_replica: f64,
    /// The fleet, when it was planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Fleet>,
    /// The sweep's open-loop rates on the Pareto chart.
    #[serde(default)]
    pub points: Vec<ParetoPoint>,
    /// Its place in the ranking (1 = recommended), when it can serve the demand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
}

/// A deployment plan: every configuration, ranked, and the recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanReport {
    /// [`PLAN_SCHEMA_VERSION`].
    pub plan_schema_version: u32,
    /// When the plan was made, RFC 3339 UTC.
    pub created: String,
    /// The demand.
    pub demand: Demand,
    /// The SLO, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// The rate limit planned on.
    pub basis: PlanBasis,
    /// Price of a GPU-hour, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hour_cost: Option<f64>,
    /// The configurations, in the order they ran.
    pub configs: Vec<PlanConfig>,
}

impl PlanReport {
    /// The ranked configurations, best first.
    pub fn ranked(&self) -> Vec<&PlanConfig> {
        let mut v: Vec<&PlanConfig> = self.configs.iter().filter(|c| c.rank.is_some()).collect();
        v.sort_by_key(|c| c.rank);
        v
    }
}

/// The basis of a run: the SLO's when it has one.
pub fn basis_of(slo: Option<&Slo>) -> PlanBasis {
    match slo {
        Some(_) => PlanBasis::Slo,
        None => PlanBasis::Capacity,
    }
}

/// The limit of `run` on `basis` and its interval; `None` when the run has no such answer.
fn limit(run: &RunReport, basis: PlanBasis) -> Option<(f64, Option<CrossingInterval>)> {
    let c = run.capacity.as_ref()?;
    let iv = c.intervals.as_ref();
    match basis {
        PlanBasis::Slo => Some((
            c.slo_max_requests_per_s?,
            iv.and_then(|i| i.slo_max_requests_per_s),
        )),
        PlanBasis::Capacity => Some((
            c.max_requests_per_s,
            bench_report::capacity_interval(run).map(|i| CrossingInterval {
                low: i.low,
                high: Some(i.high),
            }),
        )),
    }
}

/// One user's decode speed in `b`: `1000 / median TPOT`.
fn per_user(b: &BenchmarkReport) -> Option<f64> {
    let tpot = b.percentile_ms(Metric::Tpot, 50.0)?;
    (tpot > 0.0).then(|| 1000.0 / tpot)
}

/// The open-loop benchmark of `run` that offered `rate` (the nearest one).
fn at_rate(run: &RunReport, rate: f64) -> Option<&BenchmarkReport> {
    open_loop(run)
        .into_iter()
        .min_by(|a, b| (a.0 - rate).abs().total_cmp(&(b.0 - rate).abs()))
        .map(|(_, b)| b)
}

/// The benchmark that measured `run`'s maximum (the last of its label): what the fleet's
/// per-request figures come from when the sweep ran no open-loop rate (`--sweep-size 2`).
fn measured_by(run: &RunReport) -> Option<&BenchmarkReport> {
    let by = &run.capacity.as_ref()?.max_measured_by;
    run.benchmarks.iter().rev().find(|b| &b.label == by)
}

/// The sweep's open-loop rates as Pareto points, for a replica of `gpus` GPUs.
pub fn pareto_points(run: &RunReport, gpus: f64) -> Vec<ParetoPoint> {
    open_loop(run)
        .into_iter()
        .filter_map(|(_, b)| {
            Some(ParetoPoint {
                label: b.label.clone(),
                requests_per_s: b.rates.requests_per_s,
                tokens_per_s_per_user: per_user(b)?,
                tokens_per_s_per_gpu: b.rates.output_tokens_per_s / gpus.max(f64::MIN_POSITIVE),
            })
        })
        .collect()
}

/// The Pareto front of the plan's sweeps: the points no other point of any configuration beats
/// on both axes (at least as fast per user and as much per GPU, and better on one), as
/// `(configuration index, point index)`, fastest per user first. Points that are not finite are
/// left out.
pub fn pareto_front(configs: &[PlanConfig]) -> Vec<(usize, usize)> {
    let all: Vec<(usize, usize, f64, f64)> = configs
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            c.points
                .iter()
                .enumerate()
                .map(move |(j, q)| (i, j, q.tokens_per_s_per_user, q.tokens_per_s_per_gpu))
        })
        .filter(|p| p.2.is_finite() && p.3.is_finite())
        .collect();
    let beats = |q: &(usize, usize, f64, f64), p: &(usize, usize, f64, f64)| {
        q.2 >= p.2 && q.3 >= p.3 && (q.2 > p.2 || q.3 > p.3)
    };
    let mut front: Vec<&(usize, usize, f64, f64)> = all
        .iter()
        .filter(|p| !all.iter().any(|q| beats(q, p)))
        .collect();
    front.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.3.total_cmp(&b.3)));
    front.iter().map(|p| (p.0, p.1)).collect()
}

/// `ceil(demand / rate)`, at least 1; `None` for a rate of 0.
fn replicas_for(demand: f64, rate: f64) -> Option<u32> {
    (rate > 0.0).then(|| ((demand / rate).ceil().max(1.0)).min(f64::from(u32::MAX)) as u32)
}

/// The fleet of one configuration for `demand` (requests/s): `None` when its run has no limit
/// on `basis` (an SLO no rate met, or a sweep that ran no open-loop rate).
pub fn fleet(run: &RunReport, basis: PlanBasis, demand: f64, costs: Costs) -> Option<Fleet> {
    let (point, iv) = limit(run, basis)?;
    let low = iv.map(|i| i.low).filter(|l| *l > 0.0);
    let replicas = low.and_then(|l| replicas_for(demand, l));
    let planned_at = low.unwrap_or(point);
    let b = at_rate(run, planned_at).or_else(|| measured_by(run));
    let per_request = b.map_or(0.0, |b| b.tokens.output.completed.per_request);
    let output_tokens_per_s = demand * per_request;
    let gpus = replicas.map(|r| f64::from(r) * costs.gpus_per_replica);
    let cost_per_hour = gpus.zip(costs.gpu_hour_cost).map(|(g, c)| g * c);
    Some(Fleet {
        basis,
        rate_per_replica: point,
        rate_interval: iv,
        replicas,
        replicas_at_point: replicas_for(demand, point).unwrap_or(u32::MAX),
        replicas_low: iv.map(|i| i.high.and_then(|h| replicas_for(demand, h)).unwrap_or(1)),
        headroom: replicas
            .zip(low)
            .map(|(r, l)| f64::from(r) * l / demand - 1.0),
        gpus,
        cost_per_hour,
        cost_per_million_output_tokens: cost_per_hour
            .filter(|_| output_tokens_per_s > 0.0)
            .map(|c| c / (output_tokens_per_s * 3600.0) * 1e6),
        output_tokens_per_s,
        output_tokens_per_s_per_gpu: gpus.filter(|g| *g > 0.0).map(|g| output_tokens_per_s / g),
        output_tokens_per_s_per_user: b.and_then(per_user),
        energy_per_output_token_j: b
            .and_then(|b| b.gpu_metrics.as_ref())
            .and_then(|g| g.j_per_output_token),
    })
}

/// What the configuration's run says of it: planned, or unable to meet the SLO.
pub fn status_of(fleet: Option<&Fleet>) -> ConfigStatus {
    match fleet {
        Some(_) => ConfigStatus::Planned,
        None => ConfigStatus::CannotMeetSlo,
    }
}

/// The order of two planned fleets: sure counts first, then by cost per hour (GPUs without a
/// price), then replicas, then the rate per replica (higher first).
fn order(a: &Fleet, b: &Fleet) -> std::cmp::Ordering {
    let key = |f: &Fleet| {
        let sure = f.replicas.is_some();
        let spend = f.cost_per_hour.or(f.gpus).unwrap_or(f64::INFINITY);
        let count = f.replicas.unwrap_or(f.replicas_at_point);
        (!sure, spend, count)
    };
    let (ka, kb) = (key(a), key(b));
    ka.0.cmp(&kb.0)
        .then(ka.1.total_cmp(&kb.1))
        .then(ka.2.cmp(&kb.2))
        .then(b.rate_per_replica.total_cmp(&a.rate_per_replica))
}

/// Ranks the planned configurations (1 = best); the others get no rank.
pub fn rank(configs: &mut [PlanConfig]) {
    let mut idx: Vec<usize> = (0..configs.len())
        .filter(|&i| configs[i].fleet.is_some() && configs[i].status == ConfigStatus::Planned)
        .collect();
    idx.sort_by(|&a, &b| {
        let (fa, fb) = (configs[a].fleet.as_ref(), configs[b].fleet.as_ref());
        fa.zip(fb)
            .map_or(std::cmp::Ordering::Equal, |(x, y)| order(x, y))
    });
    for c in configs.iter_mut() {
        c.rank = None;
    }
    for (r, i) in idx.into_iter().enumerate() {
        configs[i].rank = Some(r as u32 + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet_at(point: f64, low: f64, high: Option<f64>, demand: f64) -> Fleet {
        let mut run = RunReport::new("r", "2026-11-28T00:00:00Z");
        run.capacity = Some(bench_core::Capacity {
            intervals: Some(bench_core::CapacityIntervals {
                max_requests_per_s: None,
                knee_requests_per_s: None,
                slo_max_requests_per_s: Some(CrossingInterval { low, high }),
            }),
            ..bench_core::Capacity::measured(point, 0.0, "concurrent@64".into())
        });
        let costs = Costs {
            gpus_per_replica: 2.0,
            gpu_hour_cost: Some(3.0),
        };
        if let Some(c) = run.capacity.as_mut() {
            c.slo = Some("itl_p50=50".parse().expect("slo"));
            c.slo_max_requests_per_s = Some(point);
        }
        fleet(&run, PlanBasis::Slo, demand, costs).expect("fleet")
    }

    #[test]
    fn replicas_come_from_the_intervals_lower_end() {
        // Point 21, interval 20-22: 100 req/s needs ceil(100 / 20) = 5 surely, the point 5.
        let f = fleet_at(21.0, 20.0, Some(22.0), 100.0);
        assert_eq!(f.replicas, Some(5));
        assert_eq!(f.replicas_at_point, 5);
        assert_eq!(f.replicas_low, Some(5));
        assert!((f.headroom.expect("headroom") - 0.0).abs() < 1e-12);
        assert_eq!(f.gpus, Some(10.0));
        assert_eq!(f.cost_per_hour, Some(30.0));
        // Point 26, interval 24-27: 100 / 24 -> 5, 100 / 26 -> 4, 100 / 27 -> 4.
        let f = fleet_at(26.0, 24.0, Some(27.0), 100.0);
        assert_eq!(
            (f.replicas, f.replicas_at_point, f.replicas_low),
            (Some(5), 4, Some(4))
        );
        assert!((f.headroom.expect("headroom") - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_energy_per_token_is_the_planned_rates() {
        // Two open-loop rates, 10 and 20 req/s, with GPU figures; the plan's lower end 19.
        let mut run = RunReport::new("r", "2026-11-28T00:00:00Z");
        for (rate, j) in [(10.0, 0.9), (20.0, 0.4)] {
            let mut b = bench_report::test_support::open_loop(|_| 100);
            b.strategy = bench_core::Strategy::Constant {
                rate,
                max_concurrency: None,
            };
            b.gpu_metrics = bench_servermetrics::gpu::combine(
                vec![bench_servermetrics::gpu::GpuNode {
                    url: "http://n:9400/metrics".into(),
                    gpus: 1,
                    power_w: None,
                    utilization_pct: None,
                    memory_used_mib: None,
                    energy_j: Some(j * 1000.0),
                }],
                1000,
                10,
            );
            run.benchmarks.push(b);
        }
        let mut c = bench_core::Capacity::measured(21.0, 0.0, "concurrent@64".into());
        c.intervals = Some(bench_core::CapacityIntervals {
            max_requests_per_s: None,
            knee_requests_per_s: None,
            slo_max_requests_per_s: Some(CrossingInterval {
                low: 19.0,
                high: Some(22.0),
            }),
        });
        c.slo = Some("itl_p50=50".parse().expect("slo"));
        c.slo_max_requests_per_s = Some(21.0);
        run.capacity = Some(c);
        let costs = Costs {
            gpus_per_replica: 1.0,
            gpu_hour_cost: None,
        };
        let f = fleet(&run, PlanBasis::Slo, 100.0, costs).expect("fleet");
        assert_eq!(f.energy_per_output_token_j, Some(0.4));
        run.benchmarks.iter_mut().for_each(|b| b.gpu_metrics = None);
        let f = fleet(&run, PlanBasis::Slo, 100.0, costs).expect("fleet");
        assert_eq!(f.energy_per_output_token_j, None);
    }

    #[test]
    fn an_interval_from_zero_plans_no_sure_count() {
        let f = fleet_at(21.0, 0.0, None, 100.0);
        assert_eq!(f.replicas, None);
        assert_eq!(f.replicas_at_point, 5);
        assert_eq!(f.replicas_low, Some(1));
        assert_eq!(f.gpus, None);
    }

    #[test]
    fn the_ranking_puts_sure_cheap_fleets_first() {
        let config = |name: &str, f: Fleet| PlanConfig {
            name: name.into(),
            params: BTreeMap::new(),
            command: None,
            status: ConfigStatus::Planned,
            reason: None,
            log_tail: vec![],
            log_file: None,
            run_file: None,
            gpus_per_replica: 2.0,
            fleet: Some(f),
            points: vec![],
            rank: None,
        };
        let mut cs = vec![
            config("unsure", fleet_at(50.0, 0.0, None, 100.0)),
            config("dear", fleet_at(21.0, 20.0, Some(22.0), 100.0)),
            config("cheap", fleet_at(40.0, 35.0, Some(45.0), 100.0)),
        ];
        let mut failed = config("failed", fleet_at(21.0, 20.0, Some(22.0), 100.0));
        failed.status = ConfigStatus::Died;
        cs.push(failed);
        rank(&mut cs);
        let ranks: Vec<Option<u32>> = cs.iter().map(|c| c.rank).collect();
        assert_eq!(ranks, vec![Some(3), Some(2), Some(1), None]);
    }

    /// The front keeps exactly the points no other configuration's or its own beats on both
    /// axes, fastest per user first.
    #[test]
    fn the_pareto_front_is_the_non_dominated_points() {
        let cfg = |pts: &[(f64, f64)]| PlanConfig {
            name: "c".into(),
            params: Default::default(),
            command: None,
            status: ConfigStatus::Planned,
            reason: None,
            log_tail: vec![],
            log_file: None,
            run_file: None,
            gpus_per_replica: 1.0,
            points: pts
                .iter()
                .map(|&(u, g)| ParetoPoint {
                    label: format!("{u}"),
                    requests_per_s: 1.0,
                    tokens_per_s_per_user: u,
                    tokens_per_s_per_gpu: g,
                })
                .collect(),
            fleet: None,
            rank: None,
        };
        let a = cfg(&[(100.0, 10.0), (80.0, 20.0), (50.0, 30.0), (45.0, 28.0)]);
        let b = cfg(&[
            (90.0, 15.0),
            (70.0, 18.0),
            (60.0, 25.0),
            (40.0, 40.0),
            (f64::NAN, 99.0),
        ]);
        // (70, 18) loses to (80, 20), (45, 28) to (50, 30); NaN is no point.
        assert_eq!(
            pareto_front(&[a, b]),
            vec![(0, 0), (1, 0), (0, 1), (1, 2), (0, 2), (1, 3)]
        );
        assert!(pareto_front(&[]).is_empty());
    }
}
