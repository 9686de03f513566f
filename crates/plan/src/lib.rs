//! The deployment plan (`bench plan`, docs/planning.md): which server configuration serves a
//! demand at the SLO for the least, and with how many replicas. Its one job is the plan, and
//! every planning rule lives here:
//!
//! - [`settings`]: the plan's typed settings and their rules (a parameter's and a link's
//!   words, the defaults, [`settings::check`]); [`configs`] and [`listed`]: the configurations (`--params`' product, or
//!   `--serve-params` entries), the serve command filled in, the GPUs of a replica, secrets
//!   masked;
//! - [`linked`]: each configuration's sweep settings, the base settings the caller resolved
//!   once with the configuration's links (`--link`) applied and its server's URL set;
//! - [`prepared`]: the plan checked before anything starts; [`demand`]: the demand it sizes
//!   for; [`port`]: where each server listens;
//! - [`launch`]: a configuration's server started in a process group of its own, polled until
//!   ready, torn down as a group, with a watchdog that tears it down if bench dies;
//! - [`run`] and `one`: the loop, each configuration launched, swept (its `RunReport` in
//!   memory), torn down, its fleet sized and ranked;
//! - [`fleet`]: the plan's figures, from each sweep's report: the replicas that serve the
//!   demand at the SLO (on the lower end of the rate's interval), GPUs, cost, energy per
//!   token, Pareto points, the ranking, and the plan's schema ([`PlanReport`]);
//! - [`view`]: the plan's console, CSV and HTML page, drawn with `bench-report`'s tables and
//!   charts ([`bench_report::draw`]); [`files`]: plan.json, plan.csv, plan.html written and
//!   read back.
//!
//! It does not parse flags or profile files, print, or handle signals (the CLI does, through
//! [`Front`]), and it does not drive a run: each sweep goes through the runner
//! (`bench-runner`), called by the front end's [`Front::sweep`].

pub mod configs;
pub mod demand;
pub mod files;
pub mod fleet;
mod front;
pub mod launch;
pub mod linked;
pub mod listed;
mod one;
pub mod port;
pub mod prepared;
pub mod run;
pub mod settings;
pub mod view;

pub use fleet::{
    basis_of, fleet, pareto_front, pareto_points, rank, status_of, ConfigStatus, Costs, Demand,
    Fleet, ParetoPoint, PlanBasis, PlanConfig, PlanReport, PLAN_SCHEMA_VERSION,
};
pub use front::{Front, Swept};
pub use linked::{Base, Given};
pub use prepared::{prepare, Prepared};
pub use settings::PlanSettings;
pub use view::{recommendation, render_plan, render_plan_csv, render_plan_html};
