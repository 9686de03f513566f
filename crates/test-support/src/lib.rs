//! What bench's tests share across crates (a dev-dependency only).
//!
//! Scratch directories: one rule for where a test writes its files, so that no test writes
//! outside `target/` and two test processes never share a directory. Cargo gives integration
//! tests their temporary directory at compile time (`env!("CARGO_TARGET_TMPDIR")`), so the
//! caller passes it.

use std::path::{Path, PathBuf};

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
