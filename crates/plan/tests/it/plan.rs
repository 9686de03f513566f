//! The deployment plan's figures and files (docs/planning.md) on a fixed sweep: the fleet from
//! the SLO rate's interval, the plan JSON against docs/plan-schema.json, the console's table
//! and recommendation, the CSV, and the HTML page's Pareto chart.

use crate::common;

use bench_core::{Capacity, CapacityIntervals, CrossingInterval, Slo};
use bench_plan::*;
use bench_report::{RunReport, StatsOptions};

/// The sample sweep (constant rates 4 and 8) with an SLO answer of 8 req/s, interval `low`
/// to `high`.
fn swept(low: f64, high: Option<f64>) -> RunReport {
    let mut run = common::sample_run(&StatsOptions::default());
    run.capacity = Some(Capacity {
        knee_requests_per_s: Some(8.0),
        slo: Some("itl_p50=50".parse::<Slo>().expect("slo")),
        slo_max_requests_per_s: Some(8.0),
        intervals: Some(CapacityIntervals {
            max_requests_per_s: None,
            knee_requests_per_s: None,
            slo_max_requests_per_s: Some(CrossingInterval { low, high }),
        }),
        ..bench_core::Capacity::measured(9.0, 200.0, "throughput".into())
    });
    run
}

fn config(name: &str, run: Option<&RunReport>, gpus: f64, demand: f64) -> PlanConfig {
    let costs = Costs {
        gpus_per_replica: gpus,
        gpu_hour_cost: Some(2.5),
    };
    let fleet = run.and_then(|r| fleet(r, PlanBasis::Slo, demand, costs));
    PlanConfig {
        name: name.into(),
        params: [("tp".to_string(), gpus.to_string())].into(),
        command: Some(format!("srv --tp {gpus}")),
        status: match run {
            Some(_) => status_of(fleet.as_ref()),
            None => ConfigStatus::FailedToStart,
        },
        reason: run
            .is_none()
            .then(|| "the server exited before it was ready (exit status: 1)".into()),
        log_tail: if run.is_none() {
            vec!["boom".into()]
        } else {
            vec![]
        },
        log_file: Some(format!("{name}/server.log")),
        run_file: Some(format!("{name}/run.json")),
        gpus_per_replica: gpus,
        points: run.map(|r| pareto_points(r, gpus)).unwrap_or_default(),
        fleet,
        rank: None,
    }
}

fn plan() -> PlanReport {
    let (a, b) = (swept(8.0, Some(9.0)), swept(4.0, Some(8.0)));
    let mut configs = vec![
        config("tp=1", Some(&a), 1.0, 30.0),
        config("tp=2", Some(&b), 2.0, 30.0),
        config("tp=4", None, 4.0, 30.0),
    ];
    rank(&mut configs);
    PlanReport {
        plan_schema_version: PLAN_SCHEMA_VERSION,
        created: "2026-11-28T09:00:00Z".into(),
        demand: Demand::new(25.0, 1.2, "--demand"),
        slo: Some("itl_p50=50".parse::<Slo>().expect("slo")),
        basis: PlanBasis::Slo,
        gpu_hour_cost: Some(2.5),
        configs,
    }
}

/// Two simulator batch sizes as a plan's page shows them (html_chromium.rs): each sweep a
/// closed form of the simulator's engine, `r` sequences held, steps of `b + 0.5 r` ms, one user
/// at `1000 / step` tokens/s and the GPU at `r` times that. `max_batch=8` (b = 8 ms) is the
/// faster per user, `max_batch=32` (b = 9 ms) reaches more per GPU: the front takes from both.
/// The recommended fleet sits on `max_batch=32`'s sweep at 12 sequences.
pub(crate) fn two_batch_sizes() -> PlanReport {
    let mut p = plan();
    p.configs.truncate(2);
    let sweep = |b: f64, held: &[f64]| -> Vec<ParetoPoint> {
        held.iter()
            .map(|&r| {
                let u = 1000.0 / (b + 0.5 * r);
                ParetoPoint {
                    label: format!("constant@{:.2}", r * u / 64.0),
                    requests_per_s: r * u / 64.0,
                    tokens_per_s_per_user: u,
                    tokens_per_s_per_gpu: r * u,
                }
            })
            .collect()
    };
    p.configs[0].name = "max_batch=8".into();
    p.configs[0].points = sweep(8.0, &[1.0, 2.0, 4.0, 6.0, 8.0]);
    p.configs[1].name = "max_batch=32".into();
    p.configs[1].points = sweep(9.0, &[1.0, 4.0, 8.0, 16.0, 24.0, 32.0]);
    p.configs[1].rank = Some(1);
    p.configs[0].rank = Some(2);
    let u = 1000.0 / (9.0 + 6.0);
    let f = p.configs[1].fleet.as_mut().expect("fleet");
    f.output_tokens_per_s_per_user = Some(u);
    f.output_tokens_per_s_per_gpu = Some(12.0 * u);
    p
}

/// The page's Pareto chart: the sweeps faded, the front exactly the non-dominated points,
/// the recommended fleet in a colour no configuration has, the legend in HTML.
#[test]
fn the_pareto_chart_draws_the_front_over_faded_sweeps_and_the_recommendation_in_its_colour() {
    let p = two_batch_sizes();
    let front = pareto_front(&p.configs);
    // max_batch=8 holds the fast end up to 8 sequences; max_batch=32 beats it beyond.
    let names: Vec<(&str, usize)> = front
        .iter()
        .map(|&(i, j)| (p.configs[i].name.as_str(), j))
        .collect();
    assert_eq!(
        names,
        [
            ("max_batch=8", 0),
            ("max_batch=8", 1),
            ("max_batch=8", 2),
            ("max_batch=8", 3),
            ("max_batch=8", 4),
            ("max_batch=32", 3),
            ("max_batch=32", 4),
            ("max_batch=32", 5)
        ]
    );
    let html = render_plan_html(&p);
    assert_eq!(
        html.matches("<g class=\"faded\" opacity=\"0.3\">").count(),
        2
    );
    // The front's line joins its 8 points; the green ring is the recommendation's alone.
    let line = html
        .split("stroke=\"#1d232a\"")
        .next()
        .and_then(|h| h.rsplit("points=\"").next())
        .and_then(|h| h.split('"').next())
        .expect("the front's polyline");
    assert_eq!(line.split_whitespace().count(), 8, "{line}");
    assert_eq!(
        html.matches("stroke=\"#1e8449\" stroke-width=\"2.5\"")
            .count(),
        1
    );
    assert!(!["#0072b2", "#d55e00"]
        .iter()
        .any(|c| html.contains(&format!(
            "{c}\" fill-opacity=\"0.35\" stroke-width=\"1.5\"><title>recommended"
        ))));
    for key in [
        ">max_batch=8</span>",
        ">max_batch=32</span>",
        ">Pareto front (",
        ">recommended: max_batch=32 at the demand</span>",
    ] {
        assert!(html.contains(key), "{key} missing from the legend");
    }
}

#[test]
fn the_fleet_is_sized_on_the_intervals_lower_end() {
    let p = plan();
    let f = p.configs[0].fleet.as_ref().expect("fleet");
    // 30 req/s (25 x 1.2) at 8 req/s surely met: ceil(3.75) = 4 replicas, 1 GPU each.
    assert_eq!(
        (f.replicas, f.replicas_at_point, f.replicas_low),
        (Some(4), 4, Some(4))
    );
    assert_eq!((f.gpus, f.cost_per_hour), (Some(4.0), Some(10.0)));
    assert!((f.headroom.expect("headroom") - (4.0 * 8.0 / 30.0 - 1.0)).abs() < 1e-12);
    // The planned rate's benchmark (constant@8) gives the output tokens and per-user speed.
    let b = p.configs[0]
        .points
        .iter()
        .find(|q| q.label.starts_with("constant@8"))
        .expect("point");
    assert!(f.output_tokens_per_s > 0.0);
    assert_eq!(
        f.output_tokens_per_s_per_user,
        Some(b.tokens_per_s_per_user)
    );
    let per_m = 10.0 / (f.output_tokens_per_s * 3600.0) * 1e6;
    assert!((f.cost_per_million_output_tokens.expect("cost") - per_m).abs() < 1e-9);
    // tp=2 surely meets only 4 req/s: 8 replicas, 16 GPUs; the point 8 would ask 4.
    let g = p.configs[1].fleet.as_ref().expect("fleet");
    assert_eq!(
        (g.replicas, g.replicas_at_point, g.gpus),
        (Some(8), 4, Some(16.0))
    );
    let ranks: Vec<Option<u32>> = p.configs.iter().map(|c| c.rank).collect();
    assert_eq!(ranks, vec![Some(1), Some(2), None]);
    // A sweep with no open-loop rate (`--sweep-size 2`): the per-request figures come from the
    // benchmark that measured the maximum (here the throughput probe), never 0 by default.
    let mut probes_only = swept(8.0, Some(9.0));
    probes_only.benchmarks.retain(|b| !b.is_open_loop());
    let by = probes_only
        .benchmarks
        .iter()
        .find(|b| b.label == "throughput")
        .expect("the throughput probe");
    let want = 30.0 * by.tokens.output.completed.per_request;
    let costs = Costs {
        gpus_per_replica: 1.0,
        gpu_hour_cost: None,
    };
    let f = fleet(&probes_only, PlanBasis::Capacity, 30.0, costs).expect("fleet");
    assert!(
        want > 0.0 && (f.output_tokens_per_s - want).abs() < 1e-9,
        "{f:?}"
    );
}

#[test]
fn the_plan_files_follow_the_schema_and_say_the_recommendation() {
    let p = plan();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/plan-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("json");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let json = serde_json::to_value(&p).expect("json");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let back: PlanReport = serde_json::from_value(json).expect("round trip");
    assert_eq!(back, p);

    let text = render_plan(&p, Some(200));
    assert!(
        text.contains("Demand: 30 req/s = 25 x growth 1.2 (--demand)"),
        "{text}"
    );
    assert!(
        text.contains("Recommended: tp=1 x 4 replicas (4 GPUs, 10.00/h, headroom 7%); runner-up: tp=2 x 8 replicas"),
        "{text}"
    );
    assert!(
        text.contains("tp=4: failed to start: the server exited"),
        "{text}"
    );
    let csv = render_plan_csv(&p);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(rows[1].starts_with("1,tp=1,planned,8,8,9,4,4,4,"), "{csv}");
    assert!(rows[3].starts_with(",tp=4,failed_to_start,"), "{csv}");
    let html = render_plan_html(&p);
    assert!(html.contains("<svg class=\"chart\""), "no chart");
    assert!(html.contains("Recommended: tp=1 x 4 replicas"));
    assert!(
        html.contains("<pre>boom</pre>"),
        "the failed configuration's log tail"
    );
    assert!(!text.contains("mJ/out tok") && !html.contains("mJ/out tok"));
}

/// With GPU figures (`--gpu-metrics`) the table, the CSV and the page show the planned rate's
/// energy per output token; the schema holds it.
#[test]
fn a_plan_with_gpu_figures_shows_the_energy_per_token() {
    let mut p = plan();
    let c = p
        .configs
        .iter_mut()
        .find(|c| c.rank == Some(1))
        .expect("ranked");
    c.fleet.as_mut().expect("fleet").energy_per_output_token_j = Some(0.0125);
    let text = render_plan(&p, Some(240));
    assert!(
        text.contains("mJ/out tok") && text.contains("12.50"),
        "{text}"
    );
    let csv = render_plan_csv(&p);
    assert!(csv
        .lines()
        .next()
        .is_some_and(|h| h.ends_with(",energy_per_output_token_j")));
    assert!(
        csv.lines()
            .any(|l| l.starts_with("1,tp=1,") && l.ends_with(",0.0125")),
        "{csv}"
    );
    assert!(render_plan_html(&p).contains("<td>12.50</td>"));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/plan-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("json");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(validator.is_valid(&serde_json::to_value(&p).expect("json")));
}
