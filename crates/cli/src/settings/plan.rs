//! Settings of `bench plan` beyond the sweep's: the flags, the profile's `plan:` mapping, and
//! their resolution (CLI > file > defaults) into the plan's typed settings
//! ([`bench_plan::PlanSettings`], whose crate holds the rules of their words and defaults).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use bench_plan::settings::{parse_link, parse_param, Link, Param, PlanSettings};

use crate::UsageError;

/// The flags of `bench plan` that `bench sweep` has not.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Plan")]
pub struct PlanArgs {
    /// Command that starts one server configuration, run by `sh -c` in its own process group;
    /// `{name}` is a parameter's value, `{port}` a free port bench picked (`{{`, `}}`: braces).
    /// Without it the plan is for the target as it runs.
    #[arg(long, value_name = "COMMAND", visible_alias = "serve-cmd")]
    pub serve: Option<String>,
    /// A server parameter and its values, `NAME=V1,V2,...`; repeated, the plan runs every
    /// combination (Cartesian product).
    #[arg(long = "params", value_name = "NAME=V1,V2", visible_alias = "param")]
    pub params: Vec<String>,
    /// vLLM's parameter file instead of --params: a JSON list of objects, or an object of
    /// named objects, one configuration each (no product). A key fills `{key}` in --serve; a
    /// key the command does not name is appended as vLLM does, `--key-with-dashes VALUE`
    /// (true: the bare flag, false: `--no-` and the flag's name).
    #[arg(long, value_name = "FILE.json")]
    pub serve_params: Option<PathBuf>,
    /// A load setting that follows a parameter, `PARAM=SETTING` (vLLM's --link-vars), e.g.
    /// `max_num_seqs=max_concurrency`; settings: max_concurrency, max_requests, max_seconds,
    /// sweep_size.
    #[arg(
        long = "link",
        value_name = "PARAM=SETTING",
        visible_alias = "link-vars"
    )]
    pub link: Vec<String>,
    /// Seconds to wait for a launched server to answer [default: 600].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub ready_timeout: Option<f64>,
    /// Path polled until a launched server answers 200 [default: /v1/models].
    #[arg(long, value_name = "PATH")]
    pub ready_path: Option<String>,
    /// Seconds between SIGTERM and SIGKILL when a server is torn down [default: 10].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub stop_grace: Option<f64>,
    /// The demand to serve, requests/s of the load given; with --data trace=FILE and no
    /// --demand, the trace's peak rate over --demand-window.
    #[arg(long, value_name = "REQ_PER_S", allow_negative_numbers = true)]
    pub demand: Option<f64>,
    /// With a trace as the demand: the window its peak rate is read over, seconds
    /// [default: 60].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub demand_window: Option<f64>,
    /// Factor the demand is grown by before sizing the fleet [default: 1].
    #[arg(long, value_name = "FACTOR", allow_negative_numbers = true)]
    pub growth: Option<f64>,
    /// GPUs one replica uses: a number, or a product of numbers and `{param}`s
    /// (`{tp}*{pp}`) [default: 1].
    #[arg(long, value_name = "N|EXPR")]
    pub gpus_per_replica: Option<String>,
    /// Price of one GPU for an hour; the plan then ranks by cost.
    #[arg(long, value_name = "PRICE", allow_negative_numbers = true)]
    pub gpu_hour_cost: Option<f64>,
    /// Directory of the plan's files: plan.json, plan.csv, plan.html, and per configuration
    /// its run and server log [default: bench-plan].
    #[arg(long, value_name = "DIR")]
    pub plan_dir: Option<PathBuf>,
    /// Skip configurations whose run is already in the plan's directory.
    #[arg(long)]
    pub resume: bool,
}

/// A parameter's values in a profile: a list, or one comma-separated string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValues {
    /// `[8, 16, 32]` or `["a", "b"]`.
    List(Vec<serde_yaml::Value>),
    /// `"8,16,32"` or one number.
    One(serde_yaml::Value),
}

/// The profile's `plan:` mapping (keys as the flags, with `_`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanFile {
    #[serde(skip_serializing_if = "Option::is_none", alias = "serve_cmd")]
    pub serve: Option<String>,
    /// Parameter name to its values, in the order written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_yaml::Mapping>,
    /// vLLM's parameter file: one configuration per entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve_params: Option<PathBuf>,
    /// Parameter name to the load setting that follows it.
    #[serde(skip_serializing_if = "Option::is_none", alias = "link_vars")]
    pub link: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_grace: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demand: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demand_window: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub growth: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_per_replica: Option<serde_yaml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_hour_cost: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<bool>,
}

fn usage(msg: String) -> anyhow::Error {
    UsageError::new(msg).into()
}

/// A YAML scalar as written ([`super::yaml_text`]), booleans too: a server parameter
/// may be a switch (`enable_prefix_caching: [true, false]`).
fn scalar_text(v: &serde_yaml::Value) -> Option<String> {
    match v {
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        other => super::yaml_text(other),
    }
}

/// The profile's parameters, in the order written.
fn file_params(m: &serde_yaml::Mapping, origin: &str) -> anyhow::Result<Vec<Param>> {
    m.iter()
        .map(|(k, v)| {
            let name = scalar_text(k).unwrap_or_default();
            let values: Option<Vec<String>> = match v {
                serde_yaml::Value::Sequence(items) => items.iter().map(scalar_text).collect(),
                other => scalar_text(other).map(|s| vec![s]),
            };
            let values = values.filter(|v| !v.is_empty()).ok_or_else(|| {
                usage(format!(
                    "{origin}: {name}: expected a list of values or a comma-separated string"
                ))
            })?;
            Ok(parse_param(
                &format!("{name}={}", values.join(",")),
                origin,
            )?)
        })
        .collect()
}

/// The settings as a profile's `plan:` mapping (`--show-config`), which loads again to them;
/// a secret parameter's values and the serve command's secrets masked
/// ([`bench_plan::configs::shown_params`], [`bench_plan::configs::redact_template`]).
pub fn to_file(plan: &PlanSettings) -> PlanFile {
    let params: serde_yaml::Mapping = bench_plan::configs::shown_params(&plan.params)
        .iter()
        .map(|p| {
            let values = p
                .values
                .iter()
                .cloned()
                .map(serde_yaml::Value::String)
                .collect();
            (
                serde_yaml::Value::String(p.name.clone()),
                serde_yaml::Value::Sequence(values),
            )
        })
        .collect();
    PlanFile {
        serve: plan
            .serve
            .as_deref()
            .map(bench_plan::configs::redact_template),
        params: (!params.is_empty()).then_some(params),
        serve_params: plan.serve_params.clone(),
        link: (!plan.links.is_empty()).then(|| plan.links.iter().cloned().collect()),
        ready_timeout: Some(plan.ready_timeout),
        ready_path: Some(plan.ready_path.clone()),
        stop_grace: Some(plan.stop_grace),
        demand: plan.demand,
        demand_window: Some(plan.demand_window),
        growth: Some(plan.growth),
        gpus_per_replica: Some(serde_yaml::Value::String(plan.gpus_per_replica.clone())),
        gpu_hour_cost: plan.gpu_hour_cost,
        plan_dir: Some(plan.dir.clone()),
        resume: Some(plan.resume),
    }
}

/// The parameters and the links, from the flags or else the profile.
fn params_and_links(
    cli: &PlanArgs,
    f: &PlanFile,
    origin: &dyn Fn(&str, bool) -> String,
) -> anyhow::Result<(Vec<Param>, Vec<Link>)> {
    let params = if cli.params.is_empty() {
        match &f.params {
            Some(m) => file_params(m, &origin("params", false))?,
            None => Vec::new(),
        }
    } else {
        cli.params
            .iter()
            .map(|p| parse_param(p, "--params"))
            .collect::<Result<_, _>>()?
    };
    let links = if cli.link.is_empty() {
        f.link
            .iter()
            .flatten()
            .map(|(p, s)| parse_link(&format!("{p}={s}"), &origin("link", false)))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        cli.link
            .iter()
            .map(|l| parse_link(l, "--link"))
            .collect::<Result<_, _>>()?
    };
    Ok((params, links))
}

/// Whether the command line gave the plan's setting `flag` (else the profile or a default).
fn given(cli: &PlanArgs, flag: &str) -> bool {
    match flag {
        "serve-params" => cli.serve_params.is_some(),
        "demand" => cli.demand.is_some(),
        "demand-window" => cli.demand_window.is_some(),
        "growth" => cli.growth.is_some(),
        "ready-timeout" => cli.ready_timeout.is_some(),
        "stop-grace" => cli.stop_grace.is_some(),
        "gpu-hour-cost" => cli.gpu_hour_cost.is_some(),
        _ => true,
    }
}

/// Resolves the plan's settings from the flags and the profile's `plan:` mapping (CLI > file
/// > defaults), checked by the plan's rules ([`bench_plan::settings::check`]).
pub fn resolve(
    cli: &PlanArgs,
    file: Option<&PlanFile>,
    profile: &str,
) -> anyhow::Result<PlanSettings> {
    let f = file.cloned().unwrap_or_default();
    let origin = |flag: &str, given: bool| {
        if given {
            format!("--{flag}")
        } else {
            format!("{profile}: plan: {}", flag.replace('-', "_"))
        }
    };
    let (params, links) = params_and_links(cli, &f, &origin)?;
    let defaults = PlanSettings::default();
    let plan = PlanSettings {
        serve: cli.serve.clone().or(f.serve.clone()),
        params,
        serve_params: cli.serve_params.clone().or(f.serve_params.clone()),
        links,
        ready_timeout: cli
            .ready_timeout
            .or(f.ready_timeout)
            .unwrap_or(defaults.ready_timeout),
        ready_path: cli
            .ready_path
            .clone()
            .or(f.ready_path.clone())
            .unwrap_or(defaults.ready_path),
        stop_grace: cli
            .stop_grace
            .or(f.stop_grace)
            .unwrap_or(defaults.stop_grace),
        demand: cli.demand.or(f.demand),
        demand_window: cli
            .demand_window
            .or(f.demand_window)
            .unwrap_or(defaults.demand_window),
        growth: cli.growth.or(f.growth).unwrap_or(defaults.growth),
        gpus_per_replica: match (&cli.gpus_per_replica, &f.gpus_per_replica) {
            (Some(g), _) => g.clone(),
            (None, Some(v)) => scalar_text(v).unwrap_or_default(),
            (None, None) => defaults.gpus_per_replica,
        },
        gpu_hour_cost: cli.gpu_hour_cost.or(f.gpu_hour_cost),
        dir: cli
            .plan_dir
            .clone()
            .or(f.plan_dir.clone())
            .unwrap_or(defaults.dir),
        resume: cli.resume || f.resume.unwrap_or(false),
    };
    bench_plan::settings::check(&plan, &|flag| origin(flag, given(cli, flag)))?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(params: &[&str]) -> PlanArgs {
        PlanArgs {
            serve: Some("srv --port {port}".into()),
            params: params.iter().map(|s| s.to_string()).collect(),
            demand: Some(10.0),
            ..PlanArgs::default()
        }
    }

    #[test]
    fn params_parse_and_bad_ones_name_themselves() {
        let s = resolve(&args(&["max_num_seqs=8, 16", "tp=1"]), None, "p.yaml").expect("ok");
        assert_eq!(s.params[0].values, vec!["8", "16"]);
        assert_eq!(s.params[1].name, "tp");
        for (bad, words) in [
            ("max_num_seqs", "expected NAME=V1"),
            ("a=1,,2", "an empty value"),
            ("port=1", "`port` is bench's"),
            ("a b=1", "not a parameter name"),
        ] {
            let e = resolve(&args(&[bad]), None, "p.yaml")
                .expect_err(bad)
                .to_string();
            assert!(e.contains(words), "{bad}: {e}");
        }
        let e = resolve(&args(&["a=1", "a=2"]), None, "p")
            .expect_err("twice")
            .to_string();
        assert!(e.contains("given twice"), "{e}");
    }

    #[test]
    fn the_profile_gives_what_the_flags_do_not() {
        let file: PlanFile = serde_yaml::from_str(
            "serve: srv --port {port} --b {b}\nparams:\n  b: [8, 16]\n  c: x,y\nlink:\n  b: max_concurrency\ndemand: 50\ngpus_per_replica: 2\n",
        )
        .expect("yaml");
        let s = resolve(&PlanArgs::default(), Some(&file), "p.yaml").expect("ok");
        assert_eq!(s.params.len(), 2);
        assert_eq!(s.params[1].values, vec!["x", "y"]);
        assert_eq!(s.links, vec![("b".into(), "max_concurrency".into())]);
        assert_eq!((s.demand, s.gpus_per_replica.as_str()), (Some(50.0), "2"));
        let e = resolve(
            &PlanArgs {
                demand: Some(-1.0),
                ..PlanArgs::default()
            },
            Some(&file),
            "p.yaml",
        )
        .expect_err("negative")
        .to_string();
        assert_eq!(e, "--demand: -1 must be a positive number");
        let bad: Result<PlanFile, _> = serde_yaml::from_str("serve: x\nbogus: 1\n");
        assert!(bad.expect_err("unknown").to_string().contains("bogus"));
    }

    #[test]
    fn the_settings_written_back_load_again_to_themselves() {
        let mut a = args(&["n=8,16", "tp=1"]);
        a.link = vec!["n=max_concurrency".into()];
        a.gpus_per_replica = Some("{tp}*2".into());
        let s = resolve(&a, None, "p").expect("ok");
        let text = serde_yaml::to_string(&to_file(&s)).expect("yaml");
        let back: PlanFile = serde_yaml::from_str(&text).expect("loads");
        assert_eq!(
            resolve(&PlanArgs::default(), Some(&back), "p").expect("ok"),
            s
        );
    }

    #[test]
    fn links_name_known_settings_and_given_parameters() {
        let mut a = args(&["b=1"]);
        a.link = vec!["b=max-concurrency".into()];
        assert_eq!(
            resolve(&a, None, "p").expect("ok").links[0].1,
            "max_concurrency"
        );
        a.link = vec!["b=rate".into()];
        assert!(resolve(&a, None, "p").is_err());
        a.link = vec!["c=max_seconds".into()];
        let e = resolve(&a, None, "p")
            .expect_err("unknown param")
            .to_string();
        assert!(e.contains("`c` is not a parameter"), "{e}");
    }
}
