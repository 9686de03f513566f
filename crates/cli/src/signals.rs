//! SIGINT (Ctrl-C) and SIGTERM (what containers and CI send to stop a job). The first one
//! takes the graceful path: the running benchmark is closed and marked interrupted, the report
//! is written, and bench exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM).
//! A second one exits at once with its own code; the files then hold every finished benchmark
//! (they are replaced atomically after each one).

use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
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
            exit_now(second);
        });
    Ok((state, task))
}

/// The process group of a server `bench plan` launched (0: none), killed before a second
/// signal exits at once, so that no server outlives bench.
static GUARDED_GROUP: AtomicI32 = AtomicI32::new(0);

/// Names the process group a second signal must kill before exiting (0 clears it).
pub fn guard_group(group: i32) {
    GUARDED_GROUP.store(group, Ordering::SeqCst);
}

/// Kills the guarded process group, if any, gives the terminal back when the live view has
/// it, and exits with `code`.
fn exit_now(code: u8) -> ! {
    crate::live::term::restore();
    bench_plan::launch::kill_group(GUARDED_GROUP.load(Ordering::SeqCst));
    std::process::exit(i32::from(code));
}

/// Watches SIGINT and SIGTERM on a thread of its own for as long as the process lives, for a
/// command that runs several runs in turn (`bench plan`): the first signal is stored in the
/// returned state (each run's own listener closes its benchmark), a second kills the guarded
/// group and exits at once.
pub fn watch(what: &'static str) -> anyhow::Result<Interrupted> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal watcher")?;
    let (mut int, mut term) = rt.block_on(async {
        let int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
        let term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
        anyhow::Ok((int, term))
    })?;
    let state = Interrupted::default();
    let shared = state.clone();
    std::thread::spawn(move || {
        rt.block_on(async move {
            let first = next(&mut int, &mut term).await;
            shared.0.store(first, Ordering::Release);
            eprintln!("{}: {what}", describe(first));
            let second = next(&mut int, &mut term).await;
            eprintln!("{} again: exiting now", describe(second));
            exit_now(second);
        })
    });
    Ok(state)
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
