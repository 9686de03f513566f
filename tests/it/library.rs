//! The library example (`examples/library.rs`) run as a test: its sweep against the in-process
//! simulator, through bench-runner's public API, states the simulator's closed-form capacity.

#[allow(dead_code)]
#[path = "../../examples/library.rs"]
mod example;

use crate::common::serial;

/// The simulator's closed-form requests/s with its batch always full (docs/simulator.md):
/// each request holds a slot for its prefill's steps and `n - 1` decode steps.
fn closed_form(prompt: f64, n: f64) -> f64 {
    let c = bench_mock::MockConfig::default();
    let step = c.step_base_ms + c.step_per_seq_ms * f64::from(c.max_batch);
    let prefill = c.prefill_overhead_ms + prompt / c.prefill_rate * 1000.0;
    let held = ((prefill / step).ceil() + n - 1.0) * step;
    f64::from(c.max_batch) / (held / 1000.0)
}

/// The sweep's capacity is the quick start's (`honest_windows` holds the CLI's within 3%); 5%
/// here is the claim for the example.
#[test]
fn the_library_example_states_the_closed_form_capacity_within_5_percent() {
    let _one = serial();
    let want = closed_form(256.0, 128.0);
    assert!(
        (want - 34.45).abs() < 0.01,
        "the default simulator's {want}"
    );
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // The run as a task of the runtime, as the CLI runs it (records travel between its tasks).
    let got = rt
        .block_on(async { tokio::spawn(example::sweep()).await })
        .expect("the sweep's task")
        .expect("the sweep ran")
        .expect("a capacity");
    eprintln!("library sweep: capacity {got:.3} req/s, closed form {want:.3}");
    assert!(
        (got / want - 1.0).abs() < 0.05,
        "{got:.2} req/s against the closed form's {want:.2}"
    );
}
