//! The worker's integration tests: loopback servers, the simulator, the fast parser.
//!
//! One test binary with a module per former `tests/*.rs` file: each file used to be its own
//! binary that compiled and linked the whole dependency tree again. A test is named by its
//! module, e.g. `cargo test -p bench-worker --test worker MODULE::` runs one former file.

mod common;
mod fastparse;
mod images;
mod loopback;
mod messages;
mod no_stream;
mod pooling;
mod reasoning;
mod responses;
mod sessions;
mod simulator;
