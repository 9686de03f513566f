//! The plan's loop: each configuration in turn (launched, swept, torn down), its fleet sized
//! and the configurations ranked, the plan's files written after each.

use std::path::PathBuf;

use crate::files::{self, FileError};
use crate::fleet::{self, PlanReport, PLAN_SCHEMA_VERSION};
use crate::front::Front;
use crate::one::{self, One};
use crate::prepared::Prepared;

/// Runs every configuration of `plan` in turn and returns the plan, ranked; its files (the
/// plan's own in its directory, and `outputs`) are written after each configuration. `created`
/// is when the plan started (RFC 3339).
pub fn run(
    plan: &Prepared,
    outputs: &[PathBuf],
    created: String,
    front: &dyn Front,
) -> Result<PlanReport, FileError> {
    let mut report = PlanReport {
        plan_schema_version: PLAN_SCHEMA_VERSION,
        created,
        demand: plan.demand.clone(),
        basis: fleet::basis_of(plan.slo.as_ref()),
        slo: plan.slo.clone(),
        gpu_hour_cost: plan.settings.gpu_hour_cost,
        configs: Vec::new(),
    };
    let paths = files::all(&plan.settings.dir, outputs);
    for (config, settings) in plan.configs.iter().zip(&plan.sweeps) {
        let one = One {
            plan,
            front,
            config,
            settings,
        };
        let done = one::run(&one, &report);
        report.configs.push(done);
        fleet::rank(&mut report.configs);
        files::write(&report, &paths)?;
    }
    Ok(report)
}
