//! `bench plan`, the front end of the deployment plan (`bench-plan`, docs/planning.md): the
//! flags and the profile resolved once into the plan's settings and the sweeps' base settings,
//! the plan run with the CLI as its [`Front`] (its lines on stderr, signals, each sweep run
//! through the runner with the watchers `bench sweep` has), then the console, the progress
//! file's end and the exit code. The configurations, the servers, the fleets and the plan's
//! files are the plan crate's.

use std::path::PathBuf;
use std::process::ExitCode;

use bench_plan::{Front, PlanReport, PlanSettings, Prepared, Swept};
use bench_runner::{Settings, ShardPlan};
use clap::Args;

use crate::settings::plan::PlanArgs;
use crate::settings::{self, CommonArgs, ToFile as _};
use crate::watch::Watch;
use crate::{signals, UsageError};

/// Arguments of `bench plan`.
#[derive(Debug, Args)]
#[command(
    after_help = "Writes plan.json, plan.csv and plan.html to the plan's directory, with \
    each configuration's run and server log under it. The method, the demand, the intervals \
    and every assumption are described in docs/planning.md."
)]
pub struct PlanCmdArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `bench plan`.
pub fn run(args: PlanCmdArgs) -> anyhow::Result<ExitCode> {
    let profile = settings::profile_of(&args.common)?;
    let name = profile
        .as_ref()
        .map_or_else(String::new, |(p, _)| p.display().to_string());
    let file = profile.as_ref().and_then(|(_, f)| f.plan.as_ref());
    let plan = settings::plan::resolve(&args.plan, file, &name)?;
    let configs = bench_plan::prepared::configurations(&plan)?;
    let common = precise_by_default(&args.common, profile.as_ref().map(|(_, f)| f));
    let base = settings::resolve_plan_base(&common, plan.serve.is_some())?;
    let prepared = bench_plan::prepare(plan, configs, &base)?;
    if args.common.show_config {
        return show_config(&prepared);
    }
    let shard = crate::run::distributed(&common, &base.settings)?;
    let outputs = bench_plan::files::outputs(&args.common.report.output)?;
    let dir = prepared.settings.dir.clone();
    // The progress file: emptied and started here; each sweep appends its lines.
    let watch = Watch::resolve(&args.common.report)?;
    let progress = match &watch.file {
        Some(p) => {
            let f = crate::progress_file::open(p, true)?;
            drop(f.events("plan", None, watch.file_every()));
            Some(f)
        }
        None => None,
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        UsageError::new(format!("--plan-dir {}: cannot create: {e}", dir.display()))
    })?;
    if prepared.settings.resume {
        let path = dir.join("plan.json");
        if path.exists() && bench_plan::files::read(&path).is_none() {
            eprintln!(
                "{} is unreadable (not a plan): it is written anew from the configurations (--resume)",
                path.display()
            );
        }
    }
    let front = CliFront {
        interrupted: signals::watch("the plan stops after this configuration")?,
        shard,
        watch,
    };
    let report = bench_plan::run::run(&prepared, &outputs, now_seconds(), &front)?;
    print!(
        "{}",
        bench_plan::render_plan(&report, crate::console_out::console_width())
    );
    eprintln!("plan saved to {}", dir.join("plan.json").display());
    if let Some(f) = progress {
        let files = bench_plan::files::all(&dir, &outputs);
        f.close(None, Some(&dir.join("plan.json")), &files, None);
    }
    Ok(exit_code(&report, &front.interrupted))
}

/// The CLI as the plan's front end: lines on stderr, the signals heard, each sweep run as
/// `bench sweep` runs it (the shard and the watchers resolved once for all).
struct CliFront {
    interrupted: signals::Interrupted,
    shard: ShardPlan,
    watch: Watch,
}

impl Front for CliFront {
    fn say(&self, line: &str) {
        eprintln!("{line}");
    }

    fn interrupted(&self) -> bool {
        self.interrupted.exit_code().is_some()
    }

    fn guard_group(&self, group: i32) {
        signals::guard_group(group);
    }

    fn sweep(&self, config: &str, settings: Settings) -> Swept {
        let (code, report) =
            crate::run::plan_sweep(settings, self.shard.clone(), &self.watch, config);
        Swept {
            report,
            ended: code.map(|c| format!("{c:?}")).map_err(|e| format!("{e:#}")),
        }
    }
}

/// The sweep's flags with the precision of the answer the plan divides by set to
/// [`bench_plan::settings::DEFAULT_SLO_PRECISION`] when neither the flags nor the profile set
/// one: `--slo-precision` when there is an SLO, `--capacity-precision` when there is none.
fn precise_by_default(common: &CommonArgs, file: Option<&settings::FileSettings>) -> CommonArgs {
    use bench_plan::settings::DEFAULT_SLO_PRECISION;
    let mut c = common.clone();
    let slo = c.load.slo.is_some() || file.is_some_and(|f| f.slo.is_some());
    let slo_given =
        c.load.slo_precision.is_some() || file.is_some_and(|f| f.slo_precision.is_some());
    let max_given =
        c.load.capacity_precision.is_some() || file.is_some_and(|f| f.capacity_precision.is_some());
    if slo && !slo_given {
        c.load.slo_precision = Some(DEFAULT_SLO_PRECISION.into());
    }
    if !slo && !max_given {
        c.load.capacity_precision = Some(DEFAULT_SLO_PRECISION.into());
    }
    c
}

/// Now, RFC 3339 to the second.
fn now_seconds() -> String {
    let now = std::time::SystemTime::now();
    let whole = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| std::time::UNIX_EPOCH + std::time::Duration::from_secs(d.as_secs()))
        .unwrap_or(now);
    crate::shard::rfc3339(whole)
}

/// 130/143 after a signal, 1 when no configuration could be planned, else 0.
fn exit_code(report: &PlanReport, interrupted: &signals::Interrupted) -> ExitCode {
    match interrupted.exit_code() {
        Some(c) => ExitCode::from(c),
        None if report.ranked().is_empty() => ExitCode::FAILURE,
        None => ExitCode::SUCCESS,
    }
}

/// `--show-config`: the first configuration's sweep settings as a profile, with the plan's own
/// under `plan:` (secrets masked: a secret parameter's values, and the serve command's); it
/// loads again.
fn show_config(prepared: &Prepared) -> anyhow::Result<ExitCode> {
    let first = &prepared.sweeps[0];
    let mut file = first.to_file();
    if first.target.targets.is_empty() && !first.target.mock {
        // Each configuration's server gets its own port: no target to show.
        file.target = None;
    }
    let plan: &PlanSettings = &prepared.settings;
    file.plan = Some(settings::plan::to_file(plan));
    file.output = None;
    print!("{}", serde_yaml::to_string(&file)?);
    Ok(ExitCode::SUCCESS)
}

/// The plan in `path` (JSON or YAML), `None` when the file holds no plan (a run, say).
pub(crate) fn read_plan(path: &std::path::Path) -> Option<PlanReport> {
    bench_plan::files::read(path)
}

/// `bench report PLAN`: writes `outputs` and returns the console text.
pub(crate) fn rerender(
    report: &PlanReport,
    outputs: &[PathBuf],
    width: Option<u16>,
) -> anyhow::Result<String> {
    let paths = bench_plan::files::outputs(outputs)?;
    bench_plan::files::write(report, &paths)?;
    Ok(bench_plan::render_plan(report, width))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_plan::settings::Param;

    /// A plan of `links` over the parameters `params` (name, values), with a serve command.
    fn plan(params: &[(&str, &[&str])], links: &[(&str, &str)]) -> PlanSettings {
        PlanSettings {
            serve: Some("srv {port}".into()),
            params: params
                .iter()
                .map(|(n, v)| Param {
                    name: n.to_string(),
                    values: v.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
            links: links
                .iter()
                .map(|(p, s)| (p.to_string(), s.to_string()))
                .collect(),
            demand: Some(10.0),
            ..PlanSettings::default()
        }
    }

    /// Each configuration's settings, the base resolved once with its links applied and its
    /// server's URL set, are those the command line's resolution gives for the sweep with the
    /// linked flags set: the rule of a link is the rule of its flag, nothing resolved twice.
    #[test]
    fn a_configurations_settings_are_what_resolving_its_linked_flags_gives() {
        let url = "http://127.0.0.1:9";
        let cases = [
            (
                plan(
                    &[("n", &["8", "16"]), ("m", &["40"])],
                    &[("n", "max_concurrency"), ("m", "max_requests")],
                ),
                CommonArgs::default(),
            ),
            (
                plan(
                    &[("s", &["3", "7"]), ("z", &["4"])],
                    &[("s", "max_seconds"), ("z", "sweep_size")],
                ),
                {
                    let mut c = CommonArgs::default();
                    c.load.precision = Some("5%".into());
                    c
                },
            ),
        ];
        for (plan, common) in cases {
            let configs = bench_plan::prepared::configurations(&plan).expect("configs");
            let base = settings::resolve_plan_base(&common, true).expect("base");
            assert!(base.settings.target.targets.is_empty(), "no placeholder");
            let links = plan.links.clone();
            let prepared = bench_plan::prepare(plan, configs, &base).expect("prepared");
            for (c, s) in prepared.configs.iter().zip(&prepared.sweeps) {
                let mut a = common.clone();
                a.target.target = vec![url.into()];
                a.report.no_output = true;
                for (p, setting) in &links {
                    let v = &c.values[p];
                    match setting.as_str() {
                        "max_concurrency" => a.load.max_concurrency = v.parse().ok(),
                        "max_requests" => a.load.max_requests = v.parse().ok(),
                        "max_seconds" => a.load.max_seconds = v.parse().ok(),
                        "sweep_size" => a.load.sweep_size = v.parse().ok(),
                        other => panic!("{other}"),
                    }
                }
                let resolved = settings::resolve(&a, None, &[], true).expect("resolved");
                let applied = bench_plan::linked::aimed_at(s.clone(), url);
                assert_eq!(applied, resolved, "{}", c.name);
            }
        }
    }
}
