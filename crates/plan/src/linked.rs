//! Each configuration's sweep settings: the base settings the caller resolved once, with the
//! configuration's linked load settings (`--link`) and, once its server listens, its URL set;
//! checked as the resolution checks those settings. Nothing is resolved a second time.

use bench_profile::Profile;
use bench_runner::{Settings, UsageError};

use crate::configs::Config;
use crate::settings::PlanSettings;

/// What the base settings cannot say and a link may change: whether the user gave
/// `--max-seconds` and `--precision-budget` (when not, they follow the benchmark's end: no
/// time limit once a count ends it, a budget of [`bench_core::DEFAULT_BUDGET_LENGTHS`] times
/// the time limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Given {
    /// `--max-seconds` (or the profile's `max_seconds`) was given.
    pub max_seconds: bool,
    /// `--precision-budget` (or the profile's `precision_budget`) was given.
    pub precision_budget: bool,
}

/// The settings every sweep of a plan starts from, resolved once by the caller: a sweep with
/// no file of its own (each configuration's run writes its `run.json`), and no target when a
/// server is launched for each configuration (its URL is set once it listens).
#[derive(Debug, Clone, PartialEq)]
pub struct Base {
    /// The sweep's settings.
    pub settings: Settings,
    /// What the user gave of what a link may change.
    pub given: Given,
}

/// The load settings a configuration's links set, parsed.
#[derive(Debug, Default)]
struct Linked {
    max_concurrency: Option<u32>,
    sweep_size: Option<u32>,
    max_requests: Option<u64>,
    max_seconds: Option<f64>,
}

/// The values `config` gives the linked settings; a value that is not one is a usage error
/// naming the link.
fn linked_values(plan: &PlanSettings, config: &Config) -> Result<Linked, UsageError> {
    let mut l = Linked::default();
    for (param, setting) in &plan.links {
        let v = config.values.get(param).map_or("", String::as_str);
        let bad = || {
            UsageError::new(format!(
                "--link {param}={setting}: `{v}` is not a value for {setting}"
            ))
        };
        match setting.as_str() {
            "max_concurrency" => l.max_concurrency = Some(v.parse().map_err(|_| bad())?),
            "max_requests" => l.max_requests = Some(v.parse().map_err(|_| bad())?),
            "max_seconds" => {
                let s: f64 = v.parse().map_err(|_| bad())?;
                if !(s.is_finite() && s > 0.0) {
                    return Err(bad());
                }
                l.max_seconds = Some(s);
            }
            "sweep_size" => l.sweep_size = Some(v.parse().map_err(|_| bad())?),
            other => {
                return Err(UsageError::new(format!(
                    "--link: unknown setting `{other}`"
                )))
            }
        }
    }
    Ok(l)
}

/// The sweep settings of `config`: `base` with the load settings its links name set from its
/// values, the benchmarks rebuilt when their shape changed, and the limits checked again.
pub fn sweep_settings(
    base: &Base,
    plan: &PlanSettings,
    config: &Config,
) -> Result<Settings, UsageError> {
    let l = linked_values(plan, config)?;
    let mut s = base.settings.clone();
    let load = &mut s.load;
    if l.max_concurrency.is_some() || l.sweep_size.is_some() {
        load.build.max_concurrency = l.max_concurrency.or(load.build.max_concurrency);
        load.build.sweep_size = l.sweep_size.unwrap_or(load.build.sweep_size);
        load.profile = Profile::build(load.rate_type, &load.rate, &load.build)
            .map_err(|e| UsageError::new(format!("--link: {e}")))?;
    }
    if let Some(m) = l.max_requests {
        if let Some(n) = load.num_prompts.filter(|n| *n != m) {
            return Err(UsageError::new(format!(
                "--num-prompts {n} and --max-requests {m} disagree (they are the same setting); give one"
            )));
        }
        load.limits.max_requests = Some(m);
        // A count ends the benchmark on its own: no time limit unless one was given.
        if !base.given.max_seconds {
            load.limits.max_seconds = None;
        }
    }
    if let Some(secs) = l.max_seconds {
        load.limits.max_seconds = Some(secs);
    }
    if l.max_requests.is_some() || l.max_seconds.is_some() {
        precision_follows(&mut load.limits, base.given)?;
    }
    load.limits
        .validate()
        .map_err(|e| UsageError::new(e.to_string()))?;
    bench_scheduler::Scheduler::<bench_worker::Worker>::validate_profile(
        &load.profile,
        &load.limits,
        &load.warmup,
        &load.cooldown,
    )
    .map_err(|e| UsageError::new(e.to_string()))?;
    Ok(s)
}

/// `--precision` after a link changed how a benchmark ends: it needs a time limit (the least a
/// benchmark runs), and its budget, unless given, is [`bench_core::DEFAULT_BUDGET_LENGTHS`]
/// times that limit; a given budget must be at least the limit.
fn precision_follows(limits: &mut bench_profile::Limits, given: Given) -> Result<(), UsageError> {
    let Some(p) = limits.precision.as_mut() else {
        return Ok(());
    };
    let Some(least) = limits.max_seconds else {
        return Err(UsageError::new(
            "--precision: runs a benchmark by time (at least --max-seconds, at most --precision-budget); it does not apply to a benchmark that ends by count (--max-requests, --num-prompts, burst, trace)",
        ));
    };
    if !given.precision_budget {
        p.budget_s = least * bench_core::DEFAULT_BUDGET_LENGTHS;
    } else if p.budget_s < least {
        return Err(UsageError::new(format!(
            "--precision-budget: expected seconds at least --max-seconds ({least}), got {}",
            p.budget_s
        )));
    }
    Ok(())
}

/// `settings` aimed at the server a configuration launched, at `url`: the only target, the
/// simulator off.
pub fn aimed_at(mut settings: Settings, url: &str) -> Settings {
    let t = &mut settings.target;
    t.targets = vec![url.to_string()];
    t.mock = false;
    t.mock_config = None;
    t.balance = None;
    settings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Param;

    fn plan(setting: &str, values: &[&str]) -> (PlanSettings, Vec<Config>) {
        let params = vec![Param {
            name: "n".into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }];
        let plan = PlanSettings {
            serve: Some("srv {port} {n}".into()),
            params: params.clone(),
            links: vec![("n".into(), setting.into())],
            ..PlanSettings::default()
        };
        (plan, crate::configs::product(&params))
    }

    fn base(given: Given) -> Base {
        Base {
            settings: Settings::mock_sweep(),
            given,
        }
    }

    #[test]
    fn a_linked_count_ends_the_benchmark_unless_a_time_limit_was_given() {
        let (p, all) = plan("max_requests", &["100"]);
        let s = sweep_settings(&base(Given::default()), &p, &all[0]).expect("linked");
        assert_eq!(s.load.limits.max_requests, Some(100));
        assert_eq!(s.load.limits.max_seconds, None, "a count ends it");
        let given = Given {
            max_seconds: true,
            ..Given::default()
        };
        let s = sweep_settings(&base(given), &p, &all[0]).expect("linked");
        assert_eq!(
            s.load.limits.max_seconds,
            Some(5.0),
            "the time limit given stays"
        );
    }

    #[test]
    fn linked_shapes_rebuild_the_sweep_and_bad_values_name_the_link() {
        let (p, all) = plan("max_concurrency", &["8", "x"]);
        let s = sweep_settings(&base(Given::default()), &p, &all[0]).expect("linked");
        assert_eq!(s.load.build.max_concurrency, Some(8));
        let want = Profile::build(s.load.rate_type, &s.load.rate, &s.load.build).expect("built");
        assert_eq!(s.load.profile, want);
        assert_ne!(s.load.profile, Settings::mock_sweep().load.profile);
        let e = sweep_settings(&base(Given::default()), &p, &all[1]).expect_err("x");
        assert_eq!(
            e.to_string(),
            "--link n=max_concurrency: `x` is not a value for max_concurrency"
        );
    }

    #[test]
    fn a_precision_budget_follows_a_linked_time_limit_unless_given() {
        let (p, all) = plan("max_seconds", &["20"]);
        let mut b = base(Given::default());
        b.settings.load.limits.precision = Some(bench_core::Precision {
            target: 0.05,
            budget_s: 5.0 * bench_core::DEFAULT_BUDGET_LENGTHS,
        });
        let s = sweep_settings(&b, &p, &all[0]).expect("linked");
        let budget = s.load.limits.precision.map(|p| p.budget_s);
        assert_eq!(budget, Some(20.0 * bench_core::DEFAULT_BUDGET_LENGTHS));
        let (p, all) = plan("max_requests", &["50"]);
        let e = sweep_settings(&b, &p, &all[0]).expect_err("by count");
        assert!(
            e.to_string()
                .starts_with("--precision: runs a benchmark by time"),
            "{e}"
        );
    }
}
