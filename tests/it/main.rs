//! The workspace's integration tests: one binary, a module per subject. Each runs the real
//! `bench` binary or the library in-process against the built-in simulator, a loopback capture
//! server or a real server installed by `.ci/setup`, on ephemeral loopback ports.
//!
//! Timed modules (their tests take `common::serial()`) are run one test per process by
//! `.ci/lanes.py`; the others run together in its low-priority lane (docs/testing.md).

mod common;

mod bad_input;
mod cancellation;
mod capacity_sweep;
mod ci_example;
mod descriptor_table;
mod fault_matrix;
mod fuzz_props;
mod gpu_metrics;
mod honest_windows;
mod images_cli;
mod intervals;
mod kept_result;
mod kubernetes_example;
mod library;
mod live_view;
mod llamacpp;
mod mock_server_cli;
mod model_mix;
mod peer_flags;
mod plan;
mod plan_safety;
mod pooling_cli;
mod precision;
mod profiles;
mod progress_file;
mod python_package;
mod rampup;
mod raw_faults;
mod reasoning_cli;
mod regression_gate;
mod repeat_trials;
mod report_cli;
mod run_failures;
mod server_metrics;
mod session_affinity;
mod sessions_report;
mod shards;
mod signals_secrets;
mod spec_decode;
mod steady_latency;
mod sustained;
mod sweep_mock;
mod targets;
mod tool_calls;
mod trace_replay;
mod trace_sweep;
