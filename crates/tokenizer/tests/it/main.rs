//! The tokenizer's integration tests: the built-in tokenizer, the Hub, the environment.
//!
//! One test binary with a module per former `tests/*.rs` file: each file used to be its own
//! binary that compiled and linked the whole dependency tree again. A test is named by its
//! module, e.g. `cargo test -p bench-tokenizer --test tokenizer MODULE::` runs one former file.

mod builtin;
mod env;
mod hub;
