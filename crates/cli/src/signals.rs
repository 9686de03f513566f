//! SIGINT (Ctrl-C) and SIGTERM (what containers and CI send to stop a job). The first one
//! takes the graceful path: the running benchmark is closed and marked interrupted, the report
//! is written, and bench exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM).
//! A second one exits at once with its own code; the files then hold every finished benchmark
//! (they are replaced atomically after each one).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use anyhow::Context as _;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::task::JoinHandle;

/// Exit code after SIGINT.
pub const SIGINT_EXIT: u8 = 130;
/// Exit code after SIGTERM.
pub const SIGTERM_EXIT: u8 = 143;

/// Which signal, if any, interrupted the run (shared with the listening task).
#[derive(Debug, Clone, Default)]
pub struct Interrupted(Arc<AtomicU8>);

impl Interrupted {
    /// The exit code of the first signal received, `None` when none came.
    pub fn exit_code(&self) -> Option<u8> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            c => Some(c),
        }
    }
}

/// Listens for SIGINT and SIGTERM; `stop` is called on the first one. Returns the shared state
/// and the listening task (abort it when the run is over).
pub fn listen(
    stop: impl FnOnce() + Send + 'static,
) -> anyhow::Result<(Interrupted, JoinHandle<()>)> {
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let state = Interrupted::default();
    let shared = state.clone();
    let task =
        tokio::spawn(async move {
            let first = next(&mut int, &mut term).await;
            shared.0.store(first, Ordering::Release);
            eprintln!(
            "{}: closing the current benchmark and writing the report ({} again to exit at once)",
            describe(first),
            if first == SIGINT_EXIT { "Ctrl-C" } else { "a second signal" }
        );
            stop();
            let second = next(&mut int, &mut term).await;
            eprintln!(
                "{} again: exiting now; finished benchmarks are in the output files",
                describe(second)
            );
            std::process::exit(i32::from(second));
        });
    Ok((state, task))
}

async fn next(int: &mut Signal, term: &mut Signal) -> u8 {
    tokio::select! {
        _ = int.recv() => SIGINT_EXIT,
        _ = term.recv() => SIGTERM_EXIT,
    }
}

fn describe(code: u8) -> &'static str {
    if code == SIGTERM_EXIT {
        "terminated (SIGTERM)"
    } else {
        "interrupted (SIGINT)"
    }
}
