//! What bench's tests share across crates (a dev-dependency only).
//!
//! Scratch directories: one rule for where a test writes its files, so that no test writes
//! outside `target/` and two test processes never share a directory. Cargo gives integration
//! tests their temporary directory at compile time (`env!("CARGO_TARGET_TMPDIR")`), so the
//! caller passes it.
//!
//! The timing lock: one per test process (each binary links its own copy of the static).
//!
//! The import graph ([`imports`]): every crate's modules read from their source, for the
//! report's layering test and the workspace's no-circle test (which lives there). It owns no
//! test of a crate's behaviour; those stay with their crates.
//!
//! Parquet datasets and hub-cache trees ([`parquet`]) that tests write for themselves.

use std::path::{Path, PathBuf};

pub mod imports;
pub mod parquet;

/// `<base>/bench-<name>-<pid>`: the scratch directory of `name` for this test process.
pub fn scratch_path(base: &str, name: &str) -> PathBuf {
    Path::new(base).join(format!("bench-{name}-{}", std::process::id()))
}

/// [`scratch_path`], created if missing (what an earlier call put there stays).
pub fn kept(base: &str, name: &str) -> PathBuf {
    let d = scratch_path(base, name);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
    d
}

/// [`scratch_path`], emptied first.
pub fn fresh(base: &str, name: &str) -> PathBuf {
    let _ = std::fs::remove_dir_all(scratch_path(base, name));
    kept(base, name)
}

/// The one lock of a test binary's timing tests. A crate whose integration tests run in one
/// process (`tests/it/main.rs`, libtest's default thread count: 2 on the test machine), where
/// each former file was a process of its own, could run a test that compares wall-clock times
/// with a closed form or with the simulator's log next to a CPU-bound test of another file.
/// Timing tests hold it exclusively ([`timing_lock`]): they run one at a time against each
/// other and never next to a CPU-heavy test, which holds it shared ([`cpu_heavy_lock`],
/// [`cpu_heavy_lock_blocking`]) and so still runs next to anything else.
static TIMING: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Taken by a test that compares wall-clock timings: see `TIMING`.
pub async fn timing_lock() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    TIMING.write().await
}

/// Taken by an async test that loads the CPU: see `TIMING`.
pub async fn cpu_heavy_lock() -> tokio::sync::RwLockReadGuard<'static, ()> {
    TIMING.read().await
}

/// Taken by a synchronous test that loads the CPU (never inside a runtime): see `TIMING`.
pub fn cpu_heavy_lock_blocking() -> tokio::sync::RwLockReadGuard<'static, ()> {
    TIMING.blocking_read()
}
