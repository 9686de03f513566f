//! bench as a library: an adaptive sweep against the in-process simulator through
//! `bench-runner`'s public API, with an observer printing one line per finished benchmark,
//! then the capacity the returned report states (docs/library.md).
//!
//! `cargo run --release --example library` prints a capacity near the simulator's closed
//! form, 34.45 req/s at the default 256 prompt and 128 output tokens (`tests/it/library.rs`
//! runs this file's [`sweep`] and holds it within 5%).

use std::sync::Arc;

use bench_runner::{BenchmarkReport, Events, Runner, Settings};

/// Prints one line per finished benchmark.
struct Lines;

impl Events for Lines {
    fn benchmark_finished(&self, index: usize, b: &BenchmarkReport) {
        println!(
            "{:>2}  {:<22} {:>8.2} req/s {:>9.1} output tok/s",
            index + 1,
            b.label,
            b.rates.requests_per_s,
            b.rates.output_tokens_per_s
        );
    }
}

/// Runs `bench sweep --mock`'s settings, writing no file, and returns the sweep's capacity
/// (requests/s), `None` when the sweep stated none.
pub async fn sweep() -> Result<Option<f64>, bench_runner::Error> {
    let mut settings = Settings::mock_sweep();
    // No report file: the report comes back in memory.
    settings.report.default_output = false;
    let finished = Runner::new(settings).events(Arc::new(Lines)).run().await?;
    if let Some(e) = finished.failure {
        return Err(e);
    }
    Ok(finished.report.capacity.map(|c| c.max_requests_per_s))
}

#[tokio::main]
async fn main() -> Result<(), bench_runner::Error> {
    match sweep().await? {
        Some(c) => println!("capacity: {c:.2} req/s"),
        None => println!("the sweep stated no capacity"),
    }
    Ok(())
}
