//! The scheduler's integration tests, on tokio's paused clock against a fake backend.
//!
//! One test binary with a module per former `tests/*.rs` file: each file used to be its own
//! binary that compiled and linked the whole dependency tree again. A test is named by its
//! module, e.g. `cargo test -p bench-scheduler --test scheduler MODULE::` runs one former file.

mod cancel;
mod ramp;
mod scheduler;
mod sessions;
mod support;
mod trace;
