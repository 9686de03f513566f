//! The report crate's integration tests.
//!
//! One test binary with a module per former `tests/*.rs` file, as the other crates have: the
//! twelve binaries built in 10.1 s of a 2-core machine's wall time after a touch of their
//! sources, the one in 5.7 s, and its tests run side by side in one process (28 s, against
//! about 100 s one binary after another). A test is named by its module, e.g.
//! `cargo test -p bench-report --test report_it golden::` runs one former file. The data they
//! read (`golden/`, `expected/`, `seeds/`, `data/`) stays in `tests/`, found from the
//! manifest's folder.

mod capacity_intervals;
mod chromium;
mod closed_loop_intervals;
mod common;
mod console;
mod files;
mod golden;
mod html_chromium;
mod interval_coverage;
mod layers;
mod merge;
mod reasoning;
