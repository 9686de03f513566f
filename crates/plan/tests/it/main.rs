//! The plan crate's integration tests: the plan's figures and files on a fixed sweep
//! ([`plan`]) and its page in a browser ([`plan_page`]). The report crate's test fixtures
//! (`common`: the sample sweep, the schema validator) and Chromium helpers are the same files,
//! not copies.

#[path = "../../../report/tests/it/chromium.rs"]
mod chromium;
#[path = "../../../report/tests/it/common.rs"]
mod common;
mod plan;
mod plan_page;
