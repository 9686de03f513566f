//! The plan's typed settings (what `bench plan` adds to the sweep's), and the rules of their
//! words: a parameter's name and values, a link's setting, the defaults. The CLI reads its
//! flags and the profile's `plan:` mapping into them (CLI > file > defaults); nothing here
//! parses a flag.

use std::path::PathBuf;

use bench_runner::UsageError;

/// Default wait for a launched server to answer, seconds (a large model loads for minutes).
pub const DEFAULT_READY_TIMEOUT: f64 = 600.0;
/// Default grace between SIGTERM and SIGKILL at teardown, seconds.
pub const DEFAULT_STOP_GRACE: f64 = 10.0;
/// Default directory of a plan's files.
pub const DEFAULT_PLAN_DIR: &str = "bench-plan";
/// Default window a trace's peak rate is read over, seconds.
pub const DEFAULT_DEMAND_WINDOW: f64 = 60.0;
/// Default path a launched server is polled at until it answers 200.
pub const DEFAULT_READY_PATH: &str = "/v1/models";

/// The precision a plan asks of each sweep's answer unless told otherwise (`--slo-precision`
/// with an SLO, else `--capacity-precision`): a replica count is only as sure as the rate it
/// divides by (docs/planning.md).
pub const DEFAULT_SLO_PRECISION: &str = "5%";

/// One server parameter and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name, as `{name}` in the serve command.
    pub name: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

/// The resolved settings of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSettings {
    /// The command that starts one configuration's server (`None`: the plan is for the target
    /// as it runs).
    pub serve: Option<String>,
    /// The parameters whose product are the configurations (`--params`).
    pub params: Vec<Param>,
    /// `--serve-params`: the configurations are this file's entries, not the product of
    /// `params` (which is then empty).
    pub serve_params: Option<PathBuf>,
    /// (parameter, load setting).
    pub links: Vec<Link>,
    /// Seconds to wait for a launched server to answer.
    pub ready_timeout: f64,
    /// The path polled until a launched server answers 200.
    pub ready_path: String,
    /// Seconds between SIGTERM and SIGKILL at teardown.
    pub stop_grace: f64,
    /// `None`: the trace's peak rate over `demand_window` seconds.
    pub demand: Option<f64>,
    /// The window a trace's peak rate is read over, seconds.
    pub demand_window: f64,
    /// The factor the demand grows by (1: none).
    pub growth: f64,
    /// GPUs one replica uses: a product of numbers and `{param}`s.
    pub gpus_per_replica: String,
    /// The price of one GPU for an hour.
    pub gpu_hour_cost: Option<f64>,
    /// The plan's directory.
    pub dir: PathBuf,
    /// Keep the configurations whose run a previous plan finished.
    pub resume: bool,
}

impl Default for PlanSettings {
    /// No serve command, no parameter, every default.
    fn default() -> Self {
        PlanSettings {
            serve: None,
            params: Vec::new(),
            serve_params: None,
            links: Vec::new(),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            ready_path: DEFAULT_READY_PATH.into(),
            stop_grace: DEFAULT_STOP_GRACE,
            demand: None,
            demand_window: DEFAULT_DEMAND_WINDOW,
            growth: 1.0,
            gpus_per_replica: "1".into(),
            gpu_hour_cost: None,
            dir: PathBuf::from(DEFAULT_PLAN_DIR),
            resume: false,
        }
    }
}

fn usage(msg: String) -> UsageError {
    UsageError::new(msg)
}

/// Parses `NAME=V1,V2,...` (`origin` names it in errors).
pub fn parse_param(text: &str, origin: &str) -> Result<Param, UsageError> {
    let Some((name, values)) = text.split_once('=') else {
        return Err(usage(format!(
            "{origin} `{text}`: expected NAME=V1,V2,... (e.g. max_num_seqs=8,16)"
        )));
    };
    let name = name.trim();
    check_name(name, origin)?;
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(usage(format!("{origin} `{text}`: an empty value")));
    }
    Ok(Param {
        name: name.into(),
        values,
    })
}

/// Checks a parameter's name (a `--params` name or a `--serve-params` key): letters, digits,
/// `_` and `-`, and not `port`.
pub fn check_name(name: &str, origin: &str) -> Result<(), UsageError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok || name == "port" {
        return Err(usage(format!(
            "{origin}: `{name}` is not a parameter name (letters, digits, `_`, `-`; `port` is bench's)"
        )));
    }
    Ok(())
}

/// Parses `PARAM=SETTING`.
pub fn parse_link(text: &str, origin: &str) -> Result<Link, UsageError> {
    let (p, s) = text.split_once('=').ok_or_else(|| {
        usage(format!(
            "{origin} `{text}`: expected PARAM=SETTING (e.g. max_num_seqs=max_concurrency)"
        ))
    })?;
    let s = s.trim().replace('-', "_");
    if !LINKABLE.contains(&s.as_str()) {
        return Err(usage(format!(
            "{origin} `{text}`: `{s}` cannot follow a parameter (one of: {})",
            LINKABLE.join(", ")
        )));
    }
    Ok((p.trim().to_string(), s))
}

/// The load settings a parameter may set.
pub const LINKABLE: [&str; 4] = [
    "max_concurrency",
    "max_requests",
    "max_seconds",
    "sweep_size",
];

/// A load setting that follows a parameter: (parameter, setting).
pub type Link = (String, String);

/// Checks a plan's settings, whatever gave them: each parameter named once; each link to a
/// parameter (a `--serve-params` file's keys are checked once it is read); a serve command for
/// parameters and for a `--serve-params` file, which is not given with `--params`; times, the
/// demand and the growth positive; a price of 0 or more; a ready path from `/`. `origin(flag)`
/// says where a setting came from as the user wrote it (`--demand`, or the profile's key), for
/// the error, a usage error naming the first culprit.
pub fn check(plan: &PlanSettings, origin: &dyn Fn(&str) -> String) -> Result<(), UsageError> {
    let mut names = std::collections::BTreeSet::new();
    for p in &plan.params {
        if !names.insert(p.name.as_str()) {
            return Err(usage(format!("--params: `{}` given twice", p.name)));
        }
    }
    for (p, _) in plan.links.iter().filter(|_| plan.serve_params.is_none()) {
        if !names.contains(p.as_str()) {
            return Err(usage(format!(
                "--link: `{p}` is not a parameter given by --params"
            )));
        }
    }
    if plan.serve.is_none() && !plan.params.is_empty() {
        return Err(usage(
            "--params needs --serve: a parameter is a setting of a server bench starts".into(),
        ));
    }
    if let Some(p) = &plan.serve_params {
        let flag = origin("serve-params");
        if plan.serve.is_none() {
            return Err(usage(format!(
                "{flag} {}: needs --serve, the command its entries configure",
                p.display()
            )));
        }
        if !plan.params.is_empty() {
            return Err(usage(format!(
                "{flag} {}: lists the configurations itself; give it or --params, not both",
                p.display()
            )));
        }
    }
    let positive = [
        ("demand", plan.demand),
        ("demand-window", Some(plan.demand_window)),
        ("growth", Some(plan.growth)),
        ("ready-timeout", Some(plan.ready_timeout)),
        ("stop-grace", Some(plan.stop_grace)),
    ];
    for (flag, v) in positive {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(usage(format!(
                "{}: {v} must be a positive number",
                origin(flag)
            )));
        }
    }
    if let Some(c) = plan.gpu_hour_cost.filter(|c| !(c.is_finite() && *c >= 0.0)) {
        return Err(usage(format!(
            "{}: {c} must be a price of 0 or more",
            origin("gpu-hour-cost")
        )));
    }
    if !plan.ready_path.starts_with('/') {
        return Err(usage(format!(
            "--ready-path `{}`: must start with `/`",
            plan.ready_path
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checks_name_the_setting_where_it_came_from() {
        let flag = |f: &str| format!("--{f}");
        assert!(check(&PlanSettings::default(), &flag).is_ok());
        let bad = |p: PlanSettings| check(&p, &|f| format!("p.yaml: plan: {f}")).map_err(|e| e.0);
        let e = bad(PlanSettings {
            growth: -1.0,
            ..PlanSettings::default()
        });
        assert_eq!(
            e,
            Err("p.yaml: plan: growth: -1 must be a positive number".into())
        );
        let n = Param {
            name: "n".into(),
            values: vec!["1".into()],
        };
        let e = bad(PlanSettings {
            params: vec![n.clone()],
            ..PlanSettings::default()
        });
        assert!(e.is_err_and(|e| e.starts_with("--params needs --serve")));
        let e = bad(PlanSettings {
            serve: Some("srv {n}".into()),
            params: vec![n.clone(), n],
            ..PlanSettings::default()
        });
        assert_eq!(e, Err("--params: `n` given twice".into()));
        let e = bad(PlanSettings {
            ready_path: "health".into(),
            ..PlanSettings::default()
        });
        assert!(e.is_err_and(|e| e.contains("must start with `/`")));
    }
}
