//! The per-model rows of a benchmark ([`crate::figures::models`]) as the accumulator makes
//! them and `bench merge` adds them.

use bench_core::{Outcome, RequestRecord};

use crate::figures::models::{merge, ModelFigures};
use crate::figures::options::StatsOptions;
use crate::figures::stats::{Accumulator, BenchmarkMeta};
use crate::test_support::record;

fn req(id: u64, model: Option<u32>, ttft_ms: u64, outcome: Outcome) -> RequestRecord {
    // Chunks at ttft, ttft + 10, ttft + 20 ms after dispatch at 1 s + id ms.
    let t0 = 1_000_000_000 + id * 1_000_000;
    let ms = 1_000_000;
    let at = [
        t0 + ttft_ms * ms,
        t0 + (ttft_ms + 10) * ms,
        t0 + (ttft_ms + 20) * ms,
    ];
    RequestRecord {
        id,
        model,
        outcome,
        ..record(t0, &at, at[2])
    }
}

#[test]
fn each_model_counts_its_requests_and_takes_its_share_of_the_rates() {
    let names = ["base".to_string(), "lora".to_string()];
    let mut acc = Accumulator::new(&StatsOptions::default()).with_models(&names);
    for i in 0..6 {
        acc.add(req(i, Some(0), 5, Outcome::Completed));
    }
    for i in 6..8 {
        acc.add(req(i, Some(1), 50, Outcome::Completed));
    }
    let http = Outcome::Http {
        status: 404,
        body: String::new(),
        retry_after_ms: None,
    };
    acc.add(req(8, Some(1), 50, http));
    // Abandoned before any worker saw it: no model.
    acc.add(req(9, None, 50, Outcome::Cancelled));
    let meta = BenchmarkMeta::new(
        bench_core::Strategy::Synchronous,
        0,
        3_000_000_000,
        std::time::SystemTime::UNIX_EPOCH,
    );
    let b = acc.finish(meta);
    let rows = b.models.as_ref().expect("rows");
    let row = |r: &ModelFigures| (r.requests, r.completed, r.errored, r.output_tokens);
    assert_eq!(row(&rows[0]), (6, 6, 0, 18));
    assert_eq!(row(&rows[1]), (3, 2, 1, 6));
    assert_eq!(rows[0].median("ttft_ms"), Some(5.0));
    assert_eq!(rows[1].p99("ttft_ms"), Some(50.0));
    assert_eq!(rows[1].median("itl_ms"), Some(10.0));
    let share = b.rates.requests_per_s * 6.0 / 8.0;
    assert!((rows[0].requests_per_s - share).abs() < 1e-9);
    let sum: f64 = rows.iter().map(|r| r.output_tokens_per_s).sum();
    assert!((sum - b.rates.output_tokens_per_s).abs() < 1e-9);
    // Merging the benchmark with itself doubles the counts and keeps the latencies.
    let both = [&b, &b];
    let rates = (b.rates.requests_per_s, b.rates.output_tokens_per_s);
    let m = merge(both.iter().filter_map(|x| x.models.as_ref()), rates)
        .expect("merge")
        .expect("rows");
    assert_eq!(row(&m[1]), (6, 4, 2, 12));
    assert_eq!(m[1].ttft_ms.count, 4);
    assert_eq!(m[0].median("ttft_ms"), Some(5.0));
    // One model: no rows.
    let mut one = Accumulator::new(&StatsOptions::default()).with_models(&names[..1]);
    one.add(req(0, Some(0), 5, Outcome::Completed));
    let meta = BenchmarkMeta::new(
        bench_core::Strategy::Synchronous,
        0,
        3_000_000_000,
        std::time::SystemTime::UNIX_EPOCH,
    );
    assert_eq!(one.finish(meta).models, None);
}
