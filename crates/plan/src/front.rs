//! What the plan asks of the program that runs it (the CLI, or a program embedding bench):
//! to tell the user how it goes, to say when it was interrupted, to know the process group of
//! the server that runs, and to run each configuration's sweep.

use bench_runner::{RunReport, Settings};

/// How one configuration's sweep went.
#[derive(Debug)]
pub struct Swept {
    /// The sweep's report, as the runner returned it (`None` when the run did not start).
    pub report: Option<RunReport>,
    /// `Err`: why the sweep failed; `Ok`: how it ended (the CLI gives its exit code), said
    /// when it ended without a capacity answer.
    pub ended: Result<String, String>,
}

/// The program that runs a plan.
pub trait Front {
    /// A line for the user about the plan's progress (the CLI writes it to stderr).
    fn say(&self, line: &str);

    /// Whether the plan was interrupted: no configuration starts after it, and the one that
    /// runs is recorded as interrupted.
    fn interrupted(&self) -> bool;

    /// The process group of the server now running (0: none), which a second signal must
    /// kill ([`crate::launch::kill_group`]).
    fn guard_group(&self, group: i32);

    /// Runs one configuration's sweep, named `config`, with `settings` (its server's URL and
    /// its `run.json` set): through [`bench_runner::Runner`], with whatever watches the run,
    /// returning the report the runner returned. The runner writes `run.json`; nothing reads
    /// it back.
    fn sweep(&self, config: &str, settings: Settings) -> Swept;
}
