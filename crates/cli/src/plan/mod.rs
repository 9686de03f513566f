//! `bench plan`: for each server configuration (the Cartesian product of `--params`), start the
//! server (`--serve`), sweep it as `bench sweep` does, tear it down; then size a fleet for the
//! demand at the SLO from each sweep's answer, rank the configurations by cost and recommend
//! one (docs/planning.md).
//!
//! The parts: [`configs`] (the product, the serve command, GPUs, linked settings), [`one`] (one
//! configuration: launch, sweep, record), this file (settings, the loop, the files and the
//! console). One server's process group, readiness, teardown and watchdog are
//! `bench_plan::launch`'s.

mod configs;
mod listed;
mod one;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bench_report::{PlanReport, PLAN_SCHEMA_VERSION};
use clap::Args;

use crate::settings::plan::{PlanArgs, PlanSettings};
use crate::settings::{self, CommonArgs, ToFile as _};
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

/// What every configuration's run shares.
pub(crate) struct Context<'a> {
    pub plan: &'a PlanSettings,
    pub common: &'a CommonArgs,
    /// Where the launched servers listen when the user named it (`--target` with `--serve`).
    pub fixed_target: Option<(String, std::net::SocketAddr)>,
    pub interrupted: signals::Interrupted,
}

/// `bench plan`.
pub fn run(args: PlanCmdArgs) -> anyhow::Result<ExitCode> {
    let profile = settings::profile_of(&args.common)?;
    let name = profile
        .as_ref()
        .map_or_else(String::new, |(p, _)| p.display().to_string());
    let file = profile.as_ref().and_then(|(_, f)| f.plan.as_ref());
    let plan = settings::plan::resolve(&args.plan, file, &name)?;
    if let Some(t) = &plan.serve {
        configs::check_not_empty(t)?;
    }
    let all = match &plan.serve_params {
        Some(file) => listed::read(&plan, file)?,
        None => configs::product(&plan.params),
    };
    if let (Some(t), None) = (&plan.serve, &plan.serve_params) {
        configs::check_template(t, &plan.params, &plan.links)?;
    }
    configs::check_gpus(&plan, &all)?;
    let common = precise_by_default(&args.common, profile.as_ref().map(|(_, f)| f));
    let fixed_target = fixed_target(&plan, &common)?;
    let (slo, data) = check_sweeps(&common, &plan, &all)?;
    let demand = demand_of(&plan, &data)?;
    if args.common.show_config {
        return show_config(&common, &plan, &all);
    }
    let outputs = plan_outputs(&args.common.report.output)?;
    // The progress file: emptied and started here; each sweep appends its lines.
    let watch = crate::watch::Watch::resolve(&args.common.report)?;
    let progress = match &watch.file {
        Some(p) => {
            let f = crate::progress_file::open(p, true)?;
            drop(f.events("plan", None, watch.file_every()));
            Some(f)
        }
        None => None,
    };
    std::fs::create_dir_all(&plan.dir).map_err(|e| {
        UsageError::new(format!(
            "--plan-dir {}: cannot create: {e}",
            plan.dir.display()
        ))
    })?;
    if plan.resume {
        let path = plan.dir.join("plan.json");
        if path.exists() && read_plan(&path).is_none() {
            eprintln!(
                "{} is unreadable (not a plan): it is written anew from the configurations (--resume)",
                path.display()
            );
        }
    }
    let ctx = Context {
        plan: &plan,
        common: &common,
        fixed_target,
        interrupted: signals::watch("the plan stops after this configuration")?,
    };
    let mut report = PlanReport {
        plan_schema_version: PLAN_SCHEMA_VERSION,
        created: now_seconds(),
        demand,
        basis: bench_report::basis_of(slo.as_ref()),
        slo,
        gpu_hour_cost: plan.gpu_hour_cost,
        configs: Vec::new(),
    };
    for c in &all {
        let done = one::run(&ctx, c, &report);
        report.configs.push(done);
        bench_report::rank(&mut report.configs);
        write_plan(&report, &plan.dir, &outputs)?;
    }
    print!(
        "{}",
        bench_report::render_plan(&report, crate::console_out::console_width())
    );
    eprintln!("plan saved to {}", plan.dir.join("plan.json").display());
    if let Some(f) = progress {
        let mut files: Vec<PathBuf> = ["plan.json", "plan.csv", "plan.html"]
            .map(|f| plan.dir.join(f))
            .into();
        files.extend(outputs.iter().cloned());
        f.close(None, Some(&plan.dir.join("plan.json")), &files, None);
    }
    Ok(exit_code(&report, &ctx.interrupted))
}

/// The precision a plan asks of each sweep's answer unless told otherwise (`--slo-precision`
/// with an SLO, else `--capacity-precision`): a replica count is only as sure as the rate it
/// divides by (docs/planning.md).
pub const DEFAULT_SLO_PRECISION: &str = "5%";

/// The sweep's flags with the precision of the answer the plan divides by set to
/// [`DEFAULT_SLO_PRECISION`] when neither the flags nor the profile set one: `--slo-precision`
/// when there is an SLO, `--capacity-precision` when there is none.
fn precise_by_default(common: &CommonArgs, file: Option<&settings::FileSettings>) -> CommonArgs {
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

/// `--target` with `--serve`: the launched servers listen there (the command names the port
/// itself); refused when something already answers on it.
fn fixed_target(
    plan: &PlanSettings,
    common: &CommonArgs,
) -> anyhow::Result<Option<(String, std::net::SocketAddr)>> {
    let (Some(_), targets) = (&plan.serve, common.target.target.as_slice()) else {
        return Ok(None);
    };
    let url = match targets {
        [] => return Ok(None),
        [one] => one,
        _ => {
            return Err(UsageError::new(
                "--target: --serve starts one server per configuration; give one URL (where it listens) or none",
            )
            .into())
        }
    };
    let addr = socket_of(url).ok_or_else(|| {
        UsageError::new(format!("--target {url}: not a host:port bench can reach"))
    })?;
    if bench_plan::launch::in_use(addr) {
        return Err(UsageError::new(format!(
            "--target {url}: port {} is already in use, and --serve would start a server there",
            addr.port()
        ))
        .into());
    }
    Ok(Some((url.clone(), addr)))
}

/// The socket address of a target URL, parsed by the worker's rule
/// ([`bench_worker::target_host_port`]).
fn socket_of(url: &str) -> Option<std::net::SocketAddr> {
    use std::net::ToSocketAddrs as _;
    let (host, port) = bench_worker::target_host_port(url).ok()?;
    (host.as_str(), port).to_socket_addrs().ok()?.next()
}

/// `--show-config`: the first configuration's sweep settings as a profile, with the plan's own
/// under `plan:` (the serve command as written: the user typed it); it loads again.
fn show_config(
    common: &CommonArgs,
    plan: &PlanSettings,
    all: &[configs::Config],
) -> anyhow::Result<ExitCode> {
    let mut a = configs::linked_args(common, plan, &all[0])?;
    a.report.output = Vec::new();
    a.report.no_output = true;
    let per_config = plan.serve.is_some() && a.target.target.is_empty();
    if per_config {
        a.target.target = vec!["http://127.0.0.1:1".into()];
    }
    let mut file = settings::resolve(&a, None, &[], true)?.to_file();
    if per_config {
        // Each configuration's server gets its own port: no target to show.
        file.target = None;
    }
    file.plan = Some(plan.to_file());
    file.output = None;
    print!("{}", serde_yaml::to_string(&file)?);
    Ok(ExitCode::SUCCESS)
}

/// The demand: `--demand`, or the peak rate of the trace the sweeps replay over
/// `--demand-window` (docs/planning.md, "The demand"), grown by `--growth`.
fn demand_of(
    plan: &PlanSettings,
    data: &settings::DataSettings,
) -> anyhow::Result<bench_report::Demand> {
    if let Some(d) = plan.demand {
        return Ok(bench_report::Demand::new(d, plan.growth, "--demand"));
    }
    let no = || {
        UsageError::new(
            "no demand to plan for: give --demand REQ_PER_S (requests/s of the load given), or a trace (--data trace=FILE) whose peak rate is the demand",
        )
    };
    let spec = bench_loader::DataSpec::parse(&data.data, data.data_column.as_deref())
        .map_err(|e| UsageError::new(format!("--data: {e}")))?;
    let bench_loader::DataSpec::Trace(trace) = spec else {
        return Err(no().into());
    };
    let window = (plan.demand_window * 1e9) as bench_core::Nanos;
    let peak = bench_loader::trace::peak_rate(&trace, window)
        .map_err(|e| UsageError::new(e.to_string()))?
        .ok_or_else(|| {
            UsageError::new(format!(
                "{}: under two rows over time: no rate to plan for (give --demand)",
                trace.path.display()
            ))
        })?;
    let source = format!(
        "peak of {} over {} s windows",
        trace.path.display(),
        plan.demand_window
    );
    Ok(bench_report::Demand::new(peak, plan.growth, source))
}

/// Resolves every configuration's sweep settings before anything starts (so bad flags stop the
/// plan with exit 2), and returns the SLO and the data they share.
fn check_sweeps(
    common: &CommonArgs,
    plan: &PlanSettings,
    all: &[configs::Config],
) -> anyhow::Result<(Option<bench_core::Slo>, settings::DataSettings)> {
    let mut last = None;
    for c in all {
        let mut a = configs::linked_args(common, plan, c)?;
        if plan.serve.is_some() && a.target.target.is_empty() {
            a.target.target = vec!["http://127.0.0.1:1".into()];
        }
        a.report.output = vec![PathBuf::from("run.json")];
        last = Some(settings::resolve(&a, None, &[], true)?);
    }
    let s = last.ok_or_else(|| UsageError::new("--params: no configuration to plan"))?;
    Ok((s.load.build.slo, s.data))
}

/// The user's `--output` files, for the plan (by extension: json, yaml, csv, html).
fn plan_outputs(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    for p in paths {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !matches!(ext, "json" | "yaml" | "yml" | "csv" | "html") {
            return Err(UsageError::new(format!(
                "--output {}: a plan is written as .json, .yaml, .csv or .html",
                p.display()
            ))
            .into());
        }
    }
    Ok(paths.to_vec())
}

/// The plan's text in the format `path`'s extension names.
fn plan_text(report: &PlanReport, path: &Path) -> anyhow::Result<String> {
    Ok(
        match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "yaml" | "yml" => serde_yaml::to_string(report)?,
            "csv" => bench_report::render_plan_csv(report),
            "html" => bench_report::render_plan_html(report),
            _ => serde_json::to_string_pretty(report)? + "\n",
        },
    )
}

/// The plan in `path` (JSON or YAML), `None` when the file holds no plan (a run, say).
pub(crate) fn read_plan(path: &Path) -> Option<PlanReport> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_yaml::Value = serde_yaml::from_str(&text).ok()?;
    value.get("plan_schema_version")?;
    serde_yaml::from_value(value).ok()
}

/// `bench report PLAN`: writes `outputs` and returns the console text.
pub(crate) fn rerender(
    report: &PlanReport,
    outputs: &[PathBuf],
    width: Option<u16>,
) -> anyhow::Result<String> {
    for path in plan_outputs(outputs)? {
        bench_report::write_atomic(&path, plan_text(report, &path)?.as_bytes())?;
    }
    Ok(bench_report::render_plan(report, width))
}

/// Writes plan.json, plan.csv and plan.html to the plan's directory and the user's outputs,
/// each replaced atomically (called after every configuration).
fn write_plan(report: &PlanReport, dir: &Path, outputs: &[PathBuf]) -> anyhow::Result<()> {
    let own = ["plan.json", "plan.csv", "plan.html"].map(|f| dir.join(f));
    for path in own.iter().chain(outputs) {
        bench_report::write_atomic(path, plan_text(report, path)?.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_come_from_urls() {
        assert_eq!(
            socket_of("http://127.0.0.1:8123/v1").map(|a| a.port()),
            Some(8123)
        );
        // The worker's rule: credentials in the URL are refused, as every run refuses them.
        assert_eq!(socket_of("http://user:pw@127.0.0.1:9/"), None);
        assert_eq!(socket_of("127.0.0.1:9"), None);
        assert_eq!(socket_of("http://127.0.0.1").map(|a| a.port()), Some(80));
        assert_eq!(socket_of("https://127.0.0.1").map(|a| a.port()), Some(443));
        assert_eq!(
            socket_of("http://[::1]:8000/v1").map(|a| a.to_string()),
            Some("[::1]:8000".into())
        );
    }
}
