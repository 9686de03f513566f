//! The loader's integration tests: synthetic prompts, files, sessions, traces.
//!
//! One test binary with a module per former `tests/*.rs` file: each file used to be its own
//! binary that compiled and linked the whole dependency tree again. A test is named by its
//! module, e.g. `cargo test -p bench-loader --test loader MODULE::` runs one former file.

mod common;
mod files;
mod parquet;
mod props;
mod sessions;
mod spec;
mod synthetic;
mod trace;
