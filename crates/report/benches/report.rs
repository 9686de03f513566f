//! Cost of the statistics and of rendering: `cargo bench -p bench-report --bench report`.
//!
//! - `accumulate/*`: `Accumulator::add` for 10,000 requests of 64 chunks each, then `finish`
//!   (compact summaries vs also keeping the whole records; `finish_sessions`: the same requests
//!   as turns of ten-turn sessions, so the per-turn rows are computed too).
//! - `render/*`: console, JSON and HTML of a 10-benchmark sweep.
//! - `precision/*` (`--precision`, docs/performance.md "Precision"): `PrecisionCheck::add` for
//!   10,000 requests of 128 chunks sent in one second (10,000 req/s); one `estimate` over
//!   them; one `Accumulator::intervals_at` (the confirmation) over the same requests.
//!
//! Also prints the resident memory each accumulator holds for 100,000 such requests.

use std::hint::black_box;
use std::time::SystemTime;

use bench_core::Strategy;
use bench_core::{Chunk, Outcome, RequestRecord, TokenSource};
use bench_report::{Accumulator, BenchmarkMeta, RunReport, StatsOptions};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const MS: u64 = 1_000_000;

fn records(n: usize, chunks: usize) -> Vec<RequestRecord> {
    (0..n)
        .map(|i| {
            let t0 = i as u64 * 10 * MS;
            let first = t0 + 50 * MS + (i as u64 % 17) * MS;
            let cs: Vec<Chunk> = (0..chunks)
                .map(|j| {
                    Chunk::answer(
                        first + j as u64 * (20 * MS + (i as u64 * 7 + j as u64 * 13) % 5_000_000),
                        1,
                    )
                })
                .collect();
            let end = cs.last().map_or(first, |c| c.at) + MS / 2;
            RequestRecord {
                target: None,
                model: None,
                cached_tokens: None,
                session: None,
                reasoning: None,
                images: None,
                id: i as u64,
                scheduled: t0,
                slot: t0,
                dispatched: t0 + 30_000,
                headers: Some(t0 + MS),
                chunks: cs,
                end,
                prompt_tokens: 256,
                prompt_tokens_source: TokenSource::Usage,
                output_tokens: chunks as u32,
                output_tokens_source: TokenSource::Usage,
                requested_output_tokens: Some(chunks as u32),
                outcome: if i % 50 == 7 {
                    Outcome::Http {
                        status: 503,
                        body: String::new(),
                        retry_after_ms: None,
                    }
                } else {
                    Outcome::Completed
                },
            }
        })
        .collect()
}

/// `r` as a turn of a ten-turn session (sessions of ten consecutive records), so `finish`
/// also computes the per-turn rows.
fn as_turn(mut r: RequestRecord) -> RequestRecord {
    r.session = Some(bench_core::SessionTurn {
        session: r.id / 10,
        turn: (r.id % 10) as u32 + 1,
        turns: 10,
        start: r.dispatched,
        kind: bench_core::TurnKind::User,
        tool_call: false,
        replica: None,
    });
    r
}

fn meta(n: usize) -> BenchmarkMeta {
    let end = n as u64 * 10 * MS + 5_000 * MS;
    BenchmarkMeta::new(
        Strategy::Constant {
            rate: 100.0,
            max_concurrency: None,
        },
        0,
        end,
        SystemTime::UNIX_EPOCH,
    )
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4)
}

fn memory_report() {
    for keep in [false, true] {
        let opts = StatsOptions {
            keep_records: keep,
            ..StatsOptions::default()
        };
        // Records are made a thousand at a time, so what stays resident is the accumulator's.
        let before = rss_kib();
        let mut acc = Accumulator::new(&opts);
        for i in 0..100 {
            for mut r in records(1_000, 64) {
                r.id += i * 1_000;
                acc.add(r);
            }
        }
        let after = rss_kib();
        eprintln!(
            "memory: keep_records={keep}: accumulator holds ~{} MiB for 100,000 requests x 64 chunks (RSS delta)",
            after.saturating_sub(before) / 1024
        );
        black_box(acc.len());
    }
}

fn bench_accumulate(c: &mut Criterion) {
    memory_report();
    let mut g = c.benchmark_group("accumulate");
    g.sample_size(10);
    let n = 10_000;
    g.throughput(Throughput::Elements(n as u64));
    for keep in [false, true] {
        let opts = StatsOptions {
            keep_records: keep,
            ..StatsOptions::default()
        };
        g.bench_function(
            if keep {
                "add_keep_records"
            } else {
                "add_compact"
            },
            |b| {
                b.iter_batched(
                    || records(n, 64),
                    |recs| {
                        let mut acc = Accumulator::new(&opts);
                        for r in recs {
                            acc.add(r);
                        }
                        acc
                    },
                    BatchSize::LargeInput,
                )
            },
        );
    }
    let opts = StatsOptions::default();
    for sessions in [false, true] {
        let name = if sessions {
            "finish_sessions"
        } else {
            "finish"
        };
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let mut acc = Accumulator::new(&opts);
                    for r in records(n, 64) {
                        acc.add(if sessions { as_turn(r) } else { r });
                    }
                    acc
                },
                |acc| acc.finish(meta(n)),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn sweep() -> RunReport {
    let mut run = RunReport::new("bench", "2026-01-01T00:00:00Z");
    for k in 0..10 {
        let mut acc = Accumulator::new(&StatsOptions::default());
        for r in records(500, 64) {
            acc.add(r);
        }
        let mut m = meta(500);
        m.strategy = Strategy::Constant {
            rate: 1.0 + k as f64,
            max_concurrency: None,
        };
        run.benchmarks.push(acc.finish(m));
    }
    run
}

fn bench_render(c: &mut Criterion) {
    let run = sweep();
    let mut g = c.benchmark_group("render");
    g.sample_size(20);
    g.bench_function("guidellm_console", |b| {
        b.iter(|| bench_report::render_guidellm(black_box(&run), Some(120)))
    });
    g.bench_function("vllm_console", |b| {
        b.iter(|| {
            bench_report::render_vllm(
                black_box(&run),
                &bench_report::VllmConsoleOptions::default(),
            )
        })
    });
    g.bench_function("json", |b| {
        b.iter(|| bench_report::render_json(black_box(&run)))
    });
    g.bench_function("html", |b| {
        b.iter(|| bench_report::render_html(black_box(&run)))
    });
    g.finish();
}

fn bench_precision(c: &mut Criterion) {
    let mut g = c.benchmark_group("precision");
    g.sample_size(10);
    let n = 10_000;
    let strategy = meta(n).strategy;
    // At 10,000 req/s: the same requests with every time divided by 100 (10k in a second),
    // so the bins fill as they would at that rate.
    let recs: Vec<RequestRecord> = records(n, 128)
        .into_iter()
        .map(|mut r| {
            r.dispatched /= 100;
            r.end /= 100;
            for c in &mut r.chunks {
                c.at /= 100;
            }
            r
        })
        .collect();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("add", |b| {
        b.iter(|| {
            let mut check = bench_report::PrecisionCheck::new(strategy.clone(), 0, Some(0));
            for r in &recs {
                check.add(r, true);
            }
            check
        })
    });
    let mut check = bench_report::PrecisionCheck::new(strategy.clone(), 0, Some(0));
    for r in &recs {
        check.add(r, true);
    }
    let end = meta(n).end / 100;
    g.throughput(Throughput::Elements(1));
    g.bench_function("estimate", |b| b.iter(|| check.estimate(black_box(end))));
    let mut acc = Accumulator::new(&StatsOptions::default());
    for r in recs {
        acc.add(r);
    }
    let mut m = meta(n);
    m.end /= 100;
    m.window.close = m.end;
    m.sending_end = m.end;
    g.bench_function("intervals_at_10k_requests", |b| {
        b.iter(|| acc.intervals_at(black_box(&m), 1.0))
    });
    g.finish();
}

criterion_group!(benches, bench_accumulate, bench_render, bench_precision);
criterion_main!(benches);
