//! The deployment plan (`bench plan`, docs/planning.md): which server configuration serves a
//! demand at the SLO for the least, and with how many replicas. Its one job is the plan, and
//! every planning rule lives here:
//!
//! - [`settings`]: the plan's typed settings and the rules of their words (parameters, links,
//!   defaults); [`configs`] and [`listed`]: the configurations (`--params`' product, or
//!   `--serve-params` entries), the serve command filled in, the GPUs of a replica, secrets
//!   masked;
//! - [`linked`]: each configuration's sweep settings, the base settings the caller resolved
//!   once with the configuration's links (`--link`) applied and its server's URL set;
//! - [`prepared`]: the plan checked before anything starts; [`demand`]: the demand it sizes
//!   for; [`port`]: where each server listens;
//! - [`launch`]: a configuration's server started in a process group of its own, polled until
//!   ready, torn down as a group, with a watchdog that tears it down if bench dies;
//! - [`run`] and `one`: the loop, each configuration launched, swept (its `RunReport` in
//!   memory), torn down, its fleet sized and ranked; [`files`]: plan.json, plan.csv,
//!   plan.html.
//!
//! Still in `bench-report`, to move here: fleet sizing, ranking, Pareto points, energy and
//! cost, and the plan's views (`figures/plan.rs`, `views/plan_view.rs`).
//!
//! It does not parse flags or profile files, print, or handle signals (the CLI does, through
//! [`Front`]), and it does not drive a run: each sweep goes through the runner
//! (`bench-runner`), called by the front end's [`Front::sweep`].

pub mod configs;
pub mod demand;
pub mod files;
mod front;
pub mod launch;
pub mod linked;
pub mod listed;
mod one;
pub mod port;
pub mod prepared;
pub mod run;
pub mod settings;

pub use front::{Front, Swept};
pub use linked::{Base, Given};
pub use prepared::{prepare, Prepared};
pub use settings::PlanSettings;
