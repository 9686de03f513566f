//! One configuration of a plan: launch its server (when there is a serve command), sweep it
//! as `bench sweep` does, tear the server down, and record the outcome with its fleet.

use std::path::Path;

use bench_runner::{RunReport, Settings};

use crate::configs::{self, Config};
use crate::fleet::{self, ConfigStatus, Costs, PlanConfig, PlanReport};
use crate::front::Front;
use crate::launch::{Launched, NotReady};
use crate::prepared::Prepared;

/// What one configuration's sweep needs: the plan, the front end, and the configuration with
/// its sweep settings.
pub(crate) struct One<'a> {
    pub plan: &'a Prepared,
    pub front: &'a dyn Front,
    pub config: &'a Config,
    pub settings: &'a Settings,
}

/// The configuration's record before it ran.
fn blank(plan: &Prepared, c: &Config) -> PlanConfig {
    PlanConfig {
        name: c.name.clone(),
        params: c.shown.clone(),
        command: None,
        status: ConfigStatus::Planned,
        reason: None,
        log_tail: Vec::new(),
        log_file: None,
        run_file: Some(format!("{}/run.json", c.slug())),
        gpus_per_replica: configs::gpus(&plan.settings.gpus_per_replica, c).unwrap_or(1.0),
        fleet: None,
        points: Vec::new(),
        rank: None,
    }
}

/// `pc` failed with `status` and `reason`.
fn failed(
    mut pc: PlanConfig,
    status: ConfigStatus,
    reason: String,
    tail: Vec<String>,
) -> PlanConfig {
    pc.status = status;
    pc.reason = Some(reason);
    pc.log_tail = tail;
    pc
}

/// `pc` with the secrets of `c` scrubbed from what the server or a failure wrote into it (its
/// reason and log tail), and the tail's control characters escaped
/// ([`bench_core::escape_controls`]).
fn scrubbed(mut pc: PlanConfig, c: &Config) -> PlanConfig {
    pc.reason = pc.reason.map(|r| c.scrub(&r));
    pc.log_tail = pc
        .log_tail
        .iter()
        .map(|l| bench_core::escape_controls(&c.scrub(l)).into_owned())
        .collect();
    pc
}

/// Rewrites the server's log with the secrets of `c` scrubbed from it (after the server
/// stopped: nothing writes it any more).
fn scrub_log(log: &Path, c: &Config) {
    if c.secrets().is_empty() {
        return;
    }
    let Ok(bytes) = std::fs::read(log) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes);
    let clean = c.scrub(&text);
    if clean != text {
        if let Err(e) = bench_report::write_atomic(log, clean.as_bytes()) {
            tracing::warn!("{}: cannot rewrite the server's log: {e}", c.name);
        }
    }
}

/// The fleet of `pc` from its sweep's report.
fn planned(mut pc: PlanConfig, run: &RunReport, report: &PlanReport) -> PlanConfig {
    let costs = Costs {
        gpus_per_replica: pc.gpus_per_replica,
        gpu_hour_cost: report.gpu_hour_cost,
    };
    let demand = report.demand.planned_requests_per_s;
    pc.fleet = fleet::fleet(run, report.basis, demand, costs);
    pc.status = fleet::status_of(pc.fleet.as_ref());
    pc.points = fleet::pareto_points(run, pc.gpus_per_replica);
    pc
}

/// A finished run of a previous plan in `file`, kept by `--resume`: one that holds a capacity
/// answer and was not interrupted. A file that is there but cannot be read as a run is said
/// to be unreadable (the configuration runs again).
fn resumable(front: &dyn Front, name: &str, file: &Path) -> Option<RunReport> {
    if !file.exists() {
        return None;
    }
    let run = match bench_report::read_run(file) {
        Ok(run) => run,
        Err(e) => {
            front.say(&format!(
                "{name}: {} is unreadable ({}); running it again (--resume)",
                file.display(),
                bench_core::escape_controls(&format!("{e:#}"))
            ));
            return None;
        }
    };
    let interrupted = run
        .benchmarks
        .iter()
        .any(|b| b.stop_reason == "interrupted");
    (run.capacity.is_some() && !interrupted).then_some(run)
}

/// Runs the configuration and returns its record.
pub(crate) fn run(one: &One<'_>, report: &PlanReport) -> PlanConfig {
    let (c, front) = (one.config, one.front);
    let pc = blank(one.plan, c);
    if front.interrupted() {
        return failed(
            pc,
            ConfigStatus::Interrupted,
            "not started: the plan was interrupted".into(),
            vec![],
        );
    }
    let dir = one.plan.settings.dir.join(c.slug());
    let run_file = dir.join("run.json");
    if one.plan.settings.resume {
        if let Some(run) = resumable(front, &c.name, &run_file) {
            front.say(&format!(
                "{}: kept from {} (--resume)",
                c.name,
                run_file.display()
            ));
            return planned(pc, &run, report);
        }
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return failed(
            pc,
            ConfigStatus::SweepFailed,
            format!("cannot create {}: {e}", dir.display()),
            vec![],
        );
    }
    let done = match &one.plan.settings.serve {
        None => sweep(one, pc, one.settings.clone(), &run_file, report),
        Some(t) => launched(one, pc, t, &run_file, report),
    };
    scrubbed(done, c)
}

/// Starts the configuration's server, waits for it, sweeps it and tears it down.
fn launched(
    one: &One<'_>,
    mut pc: PlanConfig,
    template: &str,
    run_file: &Path,
    report: &PlanReport,
) -> PlanConfig {
    let (c, front, plan) = (one.config, one.front, &one.plan.settings);
    let (url, addr) = match crate::port::listen_at(one.plan.fixed_target.as_ref()) {
        Ok(t) => t,
        Err(e) => {
            return failed(
                pc,
                ConfigStatus::FailedToStart,
                format!("no free port: {e}"),
                vec![],
            )
        }
    };
    let command = configs::render(template, c, addr.port());
    let shown = configs::render_shown(template, c, addr.port());
    pc.command = Some(shown.clone());
    let log = run_file.with_file_name("server.log");
    pc.log_file = Some(format!("{}/server.log", c.slug()));
    front.say(&format!(
        "{}: starting `{shown}` (log: {})",
        c.name,
        log.display()
    ));
    let mut server = match Launched::start(&command, &shown, &log, plan.stop_grace) {
        Ok(s) => s,
        Err(e) => {
            return failed(
                pc,
                ConfigStatus::FailedToStart,
                format!("cannot run sh: {e}"),
                vec![],
            )
        }
    };
    front.guard_group(server.group());
    let stop = || front.interrupted();
    if let Err(e) = server.wait_ready(addr, &plan.ready_path, plan.ready_timeout, stop) {
        let status = match e {
            NotReady::Interrupted => ConfigStatus::Interrupted,
            _ => ConfigStatus::FailedToStart,
        };
        drop(server);
        front.guard_group(0);
        scrub_log(&log, c);
        return failed(pc, status, e.to_string(), crate::launch::log_tail(&log));
    }
    let settings = crate::linked::aimed_at(one.settings.clone(), &url);
    let mut done = sweep(one, pc, settings, run_file, report);
    let died = server.exited();
    drop(server);
    front.guard_group(0);
    scrub_log(&log, c);
    if let Some(how) = died {
        done.status = ConfigStatus::Died;
        done.reason = Some(format!("the server exited during the sweep ({how})"));
        done.log_tail = crate::launch::log_tail(&log);
    }
    done
}

/// Sweeps the configuration with `settings` (its server's URL set), writing `run_file`.
fn sweep(
    one: &One<'_>,
    pc: PlanConfig,
    mut settings: Settings,
    run_file: &Path,
    report: &PlanReport,
) -> PlanConfig {
    let (c, front) = (one.config, one.front);
    settings.report.output = vec![run_file.to_path_buf()];
    settings.report.default_output = false;
    front.say(&format!("{}: sweeping", c.name));
    // The sweep's report comes back in memory; `run_file` is written for `--resume` and
    // `bench report`, never read back here.
    let swept = front.sweep(&c.name, settings);
    if front.interrupted() {
        let mut pc = match &swept.report {
            Some(run) => planned(pc, run, report),
            None => pc,
        };
        pc.status = ConfigStatus::Interrupted;
        pc.reason = Some("interrupted during the sweep".into());
        pc.fleet = None;
        return pc;
    }
    match (swept.ended, swept.report) {
        (_, Some(run)) if run.capacity.is_some() => planned(pc, &run, report),
        (Err(e), _) => failed(pc, ConfigStatus::SweepFailed, e, vec![]),
        (Ok(how), _) => failed(
            pc,
            ConfigStatus::SweepFailed,
            format!("the sweep ended ({how}) without a capacity answer"),
            vec![],
        ),
    }
}
