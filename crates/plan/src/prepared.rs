//! A plan checked before anything starts: its configurations, each one's sweep settings
//! (the base settings with its links applied), where the servers listen, and the demand. A
//! bad configuration, link or demand stops the plan here, with a usage error.

use bench_core::Slo;
use bench_runner::{Settings, UsageError};

use crate::configs::{self, Config};
use crate::fleet::Demand;
use crate::linked::{self, Base};
use crate::port::{self, Fixed};
use crate::settings::PlanSettings;

/// A plan ready to run.
#[derive(Debug)]
pub struct Prepared {
    /// The plan's settings.
    pub settings: PlanSettings,
    /// The configurations, in the order they run.
    pub configs: Vec<Config>,
    /// Each configuration's sweep settings (without its server's URL, set once it listens).
    pub sweeps: Vec<Settings>,
    /// Where the launched servers listen when the user named it (`--target` with `--serve`).
    pub fixed_target: Option<Fixed>,
    /// The SLO the sweeps search for (`None`: each replica runs at its capacity).
    pub slo: Option<Slo>,
    /// The demand the fleets are sized for.
    pub demand: Demand,
}

/// The configurations of `plan`: its `--serve-params` file's entries, or the product of its
/// parameters; the serve command and the GPU expression checked against them.
pub fn configurations(plan: &PlanSettings) -> Result<Vec<Config>, UsageError> {
    if let Some(t) = &plan.serve {
        configs::check_not_empty(t)?;
    }
    let all = match &plan.serve_params {
        Some(file) => crate::listed::read(plan, file)?,
        None => configs::product(&plan.params),
    };
    if let (Some(t), None) = (&plan.serve, &plan.serve_params) {
        configs::check_template(t, &plan.params, &plan.links)?;
    }
    configs::check_gpus(plan, &all)?;
    Ok(all)
}

/// Checks `plan` and its `configs` ([`configurations`]) against `base` (the sweeps'
/// settings, resolved once by the caller), and applies each configuration to the base.
pub fn prepare(
    plan: PlanSettings,
    configs: Vec<Config>,
    base: &Base,
) -> Result<Prepared, UsageError> {
    if configs.is_empty() {
        return Err(UsageError::new("--params: no configuration to plan"));
    }
    let fixed_target = port::fixed_target(plan.serve.is_some(), &base.settings.target.targets)?;
    let sweeps = configs
        .iter()
        .map(|c| linked::sweep_settings(base, &plan, c))
        .collect::<Result<Vec<_>, _>>()?;
    let demand = crate::demand::demand_of(&plan, &base.settings.data)?;
    Ok(Prepared {
        slo: base.settings.load.build.slo.clone(),
        settings: plan,
        configs,
        sweeps,
        fixed_target,
        demand,
    })
}
