//! The simulator's integration tests, over HTTP with a minimal hyper client.
//!
//! One test binary with a module per former `tests/*.rs` file: each file used to be its own
//! binary that compiled and linked the whole dependency tree again. A test is named by its
//! module, e.g. `cargo test -p bench-mock --test mock MODULE::` runs one former file.

mod api;
mod capacity;
mod common;
mod faults;
mod prefix_cache;
mod replicas;
mod request_log;
mod spec_decode;
mod transport;
