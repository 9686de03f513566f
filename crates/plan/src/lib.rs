//! The deployment plan (`bench plan`, docs/planning.md): the home of its rules. A new planning
//! rule goes here.
//!
//! What it holds so far: [`launch`], a configuration's server started in a process group of
//! its own, polled until ready, torn down as a group, with a watchdog that tears it down if
//! bench dies. Still elsewhere, to move here (issue 45, point 2): the configurations
//! (`--params`, `--serve-params`, `--link`) and the plan's loop in the CLI's `plan/` and
//! `settings/plan.rs`, and fleet sizing, ranking, Pareto points, energy and cost with the
//! plan's report in `bench-report` (`figures/plan.rs`, `views/plan_view.rs`).
//!
//! It does not run the sweeps (the runner, `bench-runner`, does), parse flags or print (the
//! CLI), nor handle signals (the CLI names the group a second signal must kill).

pub mod launch;
