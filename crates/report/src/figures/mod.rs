//! The figures: what a run measured, computed from its requests and kept in the report.
//!
//! This tree owns the data model and the JSON schema ([`model`], with the trials' and the
//! precision check's records), the histograms ([`hist`]), the accumulator that turns requests
//! into one benchmark's report ([`stats`], with [`compact`], [`chunks`], [`cached`],
//! [`images`], the per-target counts of
//! [`targets`] and the sessions of [`turns`]), the 95% intervals ([`interval`]), the capacity
//! answers and their intervals ([`capacity`], [`capacity_interval`]), the precision check
//! ([`precision`]), repeated trials ([`trials`]), the exact merge of shards ([`merge`],
//! [`turns_merge`]), the options that decide what is computed ([`options`]) and the
//! timestamps stored in the report ([`time_fmt`]).
//!
//! It may import `bench_core`, `bench_servermetrics`, other figure modules and the crate's
//! [`crate::Error`]; never a view (`crate::views`): figures produce numbers and records, not
//! text. No module here imports one that imports it back (`tests/layers.rs` checks both).

pub(crate) mod cached;
pub(crate) mod capacity;
pub(crate) mod capacity_interval;
pub(crate) mod chunks;
pub(crate) mod compact;
pub(crate) mod hist;
pub(crate) mod images;
pub(crate) mod interval;
pub(crate) mod merge;
pub(crate) mod model;
pub(crate) mod models;
#[cfg(test)]
mod models_tests;
pub(crate) mod options;
pub(crate) mod precision;
pub(crate) mod session_cache;
pub(crate) mod stats;
pub(crate) mod targets;
pub(crate) mod time_fmt;
pub(crate) mod trials;
pub(crate) mod turns;
pub(crate) mod turns_merge;
#[cfg(test)]
mod turns_tests;
