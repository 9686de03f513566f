//! Deterministic record sets for the report's tests: a small sweep with completed,
//! incomplete and errored requests, warmup and cooldown, built from a fixed-seed generator.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bench_core::Strategy;
use bench_core::{Chunk, Nanos, Outcome, RequestRecord, TimeoutPhase, TokenSource, Window};
use bench_report::{
    Accumulator, BenchmarkMeta, BenchmarkReport, Environment, RunReport, ShardFile, ShardRun,
    StatsOptions,
};

pub const MS: Nanos = 1_000_000;
pub const S: Nanos = 1_000_000_000;

/// A sweep's capacity answer of `rate` req/s at 10 output tokens a request, measured by
/// `concurrent@8`, with an SLO answer of `rate - 2` (the trials' and the shards' fixtures).
pub fn swept_capacity(rate: f64) -> bench_core::Capacity {
    bench_core::Capacity {
        slo_max_requests_per_s: Some(rate - 2.0),
        ..bench_core::Capacity::measured(rate, 10.0 * rate, "concurrent@8".into())
    }
}

/// The SLO search's bracket from `low` to `high` at 5% after `steps` steps.
pub fn bracket(low: Option<f64>, high: Option<f64>, steps: u32) -> bench_core::SloBracket {
    bench_core::SloBracket {
        low,
        high,
        tolerance: 0.05,
        steps,
        refinement: None,
    }
}

/// A tiny fixed-seed generator (xorshift), so fixtures never change between platforms.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
}

/// One request: sent at `dispatched`, first token after `ttft`, then `gaps` between chunks
/// (one token each), ending `tail` after the last chunk.
#[allow(clippy::too_many_arguments)]
pub fn record(
    id: u64,
    scheduled: Nanos,
    slot: Nanos,
    dispatched: Nanos,
    ttft: Option<Nanos>,
    gaps: &[Nanos],
    tail: Nanos,
    prompt_tokens: u32,
    outcome: Outcome,
) -> RequestRecord {
    let mut chunks = Vec::new();
    let mut end = dispatched;
    if let Some(t) = ttft {
        let mut at = dispatched + t;
        chunks.push(Chunk::answer(at, 1));
        for g in gaps {
            at += g;
            chunks.push(Chunk::answer(at, 1));
        }
        end = at;
    }
    end += tail;
    RequestRecord {
        target: None,
        model: None,
        cached_tokens: None,
        session: None,
        reasoning: None,
        images: None,
        id,
        scheduled,
        slot,
        dispatched,
        headers: Some(dispatched + MS),
        output_tokens: chunks.len() as u32,
        chunks,
        end,
        prompt_tokens,
        prompt_tokens_source: TokenSource::Usage,
        output_tokens_source: TokenSource::Usage,
        requested_output_tokens: Some(16),
        outcome,
    }
}

fn wall() -> SystemTime {
    // 2025-05-15 16:59:28 UTC, a fixed date for stable snapshots.
    UNIX_EPOCH + Duration::from_secs(1_747_328_368)
}

#[allow(clippy::too_many_arguments)]
/// Simulated server: TTFT grows with concurrency; `n` requests at the given send times.
fn benchmark(
    rng: &mut Rng,
    strategy: Strategy,
    sends: &[Nanos],
    base_ttft_ms: u64,
    gap_ms: u64,
    opts: &StatsOptions,
    stop: Nanos,
    warmup: Nanos,
    cooldown: Nanos,
) -> bench_report::BenchmarkReport {
    let mut acc = Accumulator::new(opts);
    let start = sends.first().copied().unwrap_or(0);
    let mut end = start;
    for (i, &send) in sends.iter().enumerate() {
        let queue = if i % 7 == 3 { rng.range(1, 20) * MS } else { 0 };
        let delay = rng.range(20, 400) * 1_000;
        let slot = send + queue;
        let dispatched = slot + delay;
        let ttft =
            (base_ttft_ms + rng.range(0, base_ttft_ms / 2 + 1)) * MS + rng.range(0, 999) * 1_000;
        let n = rng.range(8, 24) as usize;
        let gaps: Vec<Nanos> = (0..n - 1)
            .map(|_| gap_ms * MS + rng.range(0, gap_ms * 400) * 1_000)
            .collect();
        let prompt = 120 + rng.range(0, 16) as u32;
        let mut r = if i % 11 == 5 {
            record(
                i as u64,
                send,
                slot,
                dispatched,
                None,
                &[],
                30 * MS,
                prompt,
                Outcome::Http {
                    status: 503,
                    body: "overloaded".into(),
                    retry_after_ms: None,
                },
            )
        } else if i % 13 == 8 {
            record(
                i as u64,
                send,
                slot,
                dispatched,
                Some(ttft),
                &gaps[..3],
                0,
                prompt,
                Outcome::Timeout {
                    phase: TimeoutPhase::Idle,
                },
            )
        } else {
            record(
                i as u64,
                send,
                slot,
                dispatched,
                Some(ttft),
                &gaps,
                MS / 2,
                prompt,
                Outcome::Completed,
            )
        };
        if r.end > stop {
            // Cancelled at the stop: keep what arrived before it.
            r.chunks.retain(|c| c.at <= stop);
            r.output_tokens = r.chunks.len() as u32;
            r.end = stop;
            r.outcome = Outcome::Cancelled;
        }
        end = end.max(r.end);
        acc.add(r);
    }
    let mut meta = BenchmarkMeta::new(strategy, start, end, wall());
    meta.window = bench_core::Window {
        open: start + warmup,
        close: end.saturating_sub(cooldown),
        cooldown: cooldown > 0,
    };
    meta.stop_reason = "max_duration".into();
    acc.finish(meta)
}

/// A fixed sweep: synchronous, throughput and two constant rates.
pub fn sample_run(opts: &StatsOptions) -> RunReport {
    let mut rng = Rng::new(42);
    let mut run = RunReport::new(
        "93e36b31-b454-471d-ba62-6b2671585485",
        "2025-05-15T16:59:28.000000Z",
    );
    run.config = serde_json::json!({
        "profile": "sweep",
        "args": {"max_number": null, "max_duration": 10.0, "warmup_duration": 1.0},
        "data": "prompt_tokens=128,output_tokens=16",
    });
    run.environment = Environment {
        tool_version: "0.1.0".into(),
        target: "http://127.0.0.1:8000".into(),
        model: "example_model".into(),
        backend: "openai_completions".into(),
        host: "example-host".into(),
        processor: Some("example_processor".into()),
        os: "linux-x86_64".into(),
        cpus: 2,
        ..Environment::default()
    };
    // synchronous: one at a time.
    let mut t = 0;
    let mut sends = Vec::new();
    for _ in 0..12 {
        sends.push(t);
        t += 700 * MS;
    }
    run.benchmarks.push(benchmark(
        &mut rng,
        Strategy::Synchronous,
        &sends,
        40,
        20,
        opts,
        9 * S,
        0,
        0,
    ));
    // throughput: all at once.
    let t0 = 10 * S;
    let sends: Vec<Nanos> = (0..40).map(|_| t0).collect();
    run.benchmarks.push(benchmark(
        &mut rng,
        Strategy::Throughput {
            max_concurrency: 512,
        },
        &sends,
        300,
        45,
        opts,
        t0 + 1_500 * MS,
        0,
        0,
    ));
    for (k, rate) in [(0u64, 4.0f64), (1, 8.0)] {
        let t0 = (13 + 6 * k) * S;
        let sends: Vec<Nanos> = (0..20)
            .map(|i| t0 + (i as f64 / rate * 1e9) as Nanos)
            .collect();
        run.benchmarks.push(benchmark(
            &mut rng,
            Strategy::Constant {
                rate,
                max_concurrency: None,
            },
            &sends,
            60 + 40 * k,
            22 + 5 * k,
            opts,
            t0 + 5 * S,
            500 * MS,
            200 * MS,
        ));
    }
    run
}

/// `run` with server metrics on every benchmark, summarized from synthetic vLLM expositions
/// (queue depth growing with the benchmark's index, a TTFT histogram, an unknown metric).
#[allow(dead_code)]
pub fn with_server_metrics(mut run: RunReport) -> RunReport {
    use bench_servermetrics::{
        parse::parse,
        snapshot::fold,
        summary::{summarize, Span, Timed},
    };
    let scrape = |at: Nanos, running: f64, waiting: f64, tokens: f64, ttft: [f64; 3], boundary| {
        let text = format!(
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} {running}\n\
             # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\n\
             # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{model_name=\"m\"}} {}\n\
             # TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{{model_name=\"m\"}} {tokens}\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.05\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"0.1\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_sum{{model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_count{{model_name=\"m\"}} {}\n\
             some_other_gauge 3\n",
            running / 64.0,
            ttft[0],
            ttft[1],
            ttft[2],
            ttft[2] * 0.06,
            ttft[2],
        );
        Timed {
            at,
            snap: fold(&parse(&text).expect("valid")),
            boundary,
        }
    };
    for (i, b) in run.benchmarks.iter_mut().enumerate() {
        let (start, end) = (b.timeline.start_ns, b.timeline.end_ns);
        let k = (i + 1) as f64;
        let mut scrapes = vec![scrape(start, 0.0, 0.0, 1000.0, [0.0, 0.0, 0.0], true)];
        for j in 1..=4u64 {
            let at = start + (end - start) * j / 5;
            scrapes.push(scrape(
                at,
                4.0 * k,
                k * j as f64,
                1000.0 + 100.0 * j as f64,
                [j as f64, 2.0 * j as f64, 2.0 * j as f64],
                false,
            ));
        }
        scrapes.push(scrape(
            end,
            0.0,
            0.0,
            1000.0 + 500.0 * k,
            [10.0, 20.0 * k, 20.0 * k],
            true,
        ));
        b.server_metrics = summarize(
            &scrapes,
            Span::whole(start, end),
            "http://127.0.0.1:8000/metrics",
            1.0,
        );
    }
    run
}

/// A run of one session benchmark: two users running four-turn sessions back to back (1 s
/// pauses), TTFT falling after turn 1 as a prefix cache would make it, prompts growing by the
/// history; one session errors on its third turn, the last is cut by the end.
#[allow(dead_code)]
pub fn session_run(opts: &StatsOptions) -> RunReport {
    let mut run = sample_run(opts);
    run.benchmarks.clear();
    run.config = serde_json::json!({"data": "turns=4,prompt_tokens=128,output_tokens=16"});
    let mut acc = Accumulator::new(opts);
    let mut rng = Rng::new(7);
    let (mut id, mut end_all) = (0u64, 0);
    for user in 0..2u64 {
        let mut t = user * 300 * MS;
        for s in 0..4u64 {
            let session = 2 * s + user;
            let start = t;
            for k in 1..=4u32 {
                let ttft = if k == 1 { 90 } else { 25 + 3 * k as u64 } * MS + rng.range(0, 9) * MS;
                let gaps: Vec<Nanos> = (0..15).map(|_| (14 + rng.range(0, 3)) * MS).collect();
                let prompt = 128 * k + 16 * (k - 1);
                let outcome = match (session, k) {
                    (5, 3) => Outcome::Http {
                        status: 503,
                        body: "overloaded".into(),
                        retry_after_ms: None,
                    },
                    (7, 2) => Outcome::Cancelled,
                    _ => Outcome::Completed,
                };
                let failed = outcome != Outcome::Completed;
                let mut r = if failed {
                    record(id, t, t, t, None, &[], 20 * MS, prompt, outcome)
                } else {
                    record(id, t, t, t, Some(ttft), &gaps, MS, prompt, outcome)
                };
                r.session = Some(bench_core::SessionTurn {
                    session,
                    turn: k,
                    turns: 4,
                    start,
                    kind: bench_core::TurnKind::User,
                    tool_call: false,
                    replica: None,
                });
                id += 1;
                t = r.end + S;
                end_all = end_all.max(r.end);
                acc.add(r);
                if failed {
                    break;
                }
            }
        }
    }
    let mut meta = BenchmarkMeta::new(Strategy::Concurrent { streams: 2 }, 0, end_all, wall());
    meta.stop_reason = "max_seconds".into();
    meta.sessions = Some(bench_core::SessionCounts {
        started: 8,
        completed: 6,
        cut: 1,
        errored: 1,
    });
    run.benchmarks.push(acc.finish(meta));
    run
}

/// Reasoning: the closed form of [`reasoning_run`]'s requests.
pub const R_TTFT: Nanos = 40 * MS;
pub const R_GAP: Nanos = 5 * MS;
pub const R_SWITCH: Nanos = 7 * MS;
pub const A_GAP: Nanos = 10 * MS;
pub const R_TOKENS: u32 = 6;
pub const A_TOKENS: u32 = 4;

/// One request of a reasoning model: its first chunk `R_TTFT` after the send, `R_TOKENS`
/// reasoning chunks `R_GAP` apart, the first answer chunk `R_SWITCH` after the last of them,
/// then `A_TOKENS - 1` more answer chunks `A_GAP` apart; usage counts the reasoning tokens.
pub fn reasoning_record(id: u64, dispatched: Nanos) -> RequestRecord {
    let mut chunks = Vec::new();
    let mut at = dispatched + R_TTFT;
    for i in 0..R_TOKENS {
        if i > 0 {
            at += R_GAP;
        }
        chunks.push(Chunk::reasoning(at, 1));
    }
    at += R_SWITCH;
    chunks.push(Chunk::answer(at, 1));
    for _ in 1..A_TOKENS {
        at += A_GAP;
        chunks.push(Chunk::answer(at, 1));
    }
    RequestRecord {
        target: None,
        model: None,
        cached_tokens: None,
        session: None,
        reasoning: Some(bench_core::ReasoningTokens {
            tokens: R_TOKENS,
            source: TokenSource::Usage,
        }),
        images: None,
        id,
        scheduled: dispatched,
        slot: dispatched,
        dispatched,
        headers: Some(dispatched + MS),
        chunks,
        end: at + MS,
        prompt_tokens: 32,
        prompt_tokens_source: TokenSource::Usage,
        output_tokens: R_TOKENS + A_TOKENS,
        output_tokens_source: TokenSource::Usage,
        requested_output_tokens: Some(R_TOKENS + A_TOKENS),
        outcome: Outcome::Completed,
    }
}

/// A run of one synchronous benchmark of ten [`reasoning_record`]s, one every 200 ms.
pub fn reasoning_run(opts: &StatsOptions) -> RunReport {
    let mut run = RunReport::new("reasoning-run", "2026-01-01T00:00:00.000000Z");
    run.environment.backend = "openai-chat".into();
    let mut acc = Accumulator::new(opts);
    let mut end = 0;
    for i in 0..10u64 {
        let r = reasoning_record(i, i * 200 * MS);
        end = end.max(r.end);
        acc.add(r);
    }
    let mut meta = BenchmarkMeta::new(Strategy::Synchronous, 0, end, wall());
    meta.stop_reason = "max_requests".into();
    run.benchmarks.push(acc.finish(meta));
    run
}

/// SplitMix64: a small seeded generator for the in-process coverage trials
/// (`interval_coverage.rs`, `closed_loop_intervals.rs`), whose counts are stated in the docs and
/// must never change.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        (-2.0 * self.unit().ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

/// The report's JSON Schema (docs/report-schema.json), compiled.
pub fn schema_validator() -> jsonschema::Validator {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/report-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file"))
            .expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("valid JSON Schema")
}

pub fn iv(low: f64, high: f64) -> bench_report::Interval {
    bench_report::Interval { low, high }
}

/// An open-loop benchmark at `rate` that completed `rate` req/s (interval +-3%), with median
/// TTFT `ttft` ms and its interval.
pub fn rung(
    base: &bench_report::BenchmarkReport,
    rate: f64,
    ttft: f64,
    ttft_iv: (f64, f64),
) -> bench_report::BenchmarkReport {
    let mut b = base.clone();
    b.strategy = bench_core::Strategy::Constant {
        rate,
        max_concurrency: None,
    };
    b.label = b.strategy.label();
    b.rates.target_rate = Some(rate);
    b.rates.requests_per_s = rate;
    // Judged kept up by its in-flight count, as a sweep's rate must be to count.
    b.rates.sustained = Some(bench_core::Sustained {
        verdict: bench_core::Verdict::KeptUp,
        arrivals_per_s: rate,
        departures_per_s: rate,
        departures_interval: iv(0.98 * rate, 1.02 * rate),
        growth_per_s: 0.0,
        settled: true,
        from_ns: b.timeline.measure_start_ns,
        to_ns: b.timeline.measure_end_ns,
    });
    b.rates.unjudged = None;
    b.metrics.ttft_ms.median = ttft;
    let mut metrics = std::collections::BTreeMap::new();
    metrics.insert(
        "ttft_ms".to_string(),
        bench_report::MetricIntervals {
            median: Some(iv(ttft_iv.0, ttft_iv.1)),
            p90: None,
            p99: None,
        },
    );
    b.intervals = Some(bench_report::Intervals {
        method: "batch_means".into(),
        level: 0.95,
        batches: 5,
        batch_s: 2.0,
        requests_per_s: iv(0.97 * rate, 1.03 * rate),
        output_tokens_per_s: iv(10.0 * rate, 11.0 * rate),
        metrics,
    });
    b
}

/// Five rates: median TTFT 20 ms at the lowest (threshold 2 x 20 + 10 = 50 ms), surely under 50
/// at 4 req/s, unsure at 6 and 8 (point 45 and 60 ms), surely over at 10.
pub fn capacity_sweep() -> RunReport {
    let mut run = sample_run(&StatsOptions::default());
    let base = run.benchmarks[2].clone();
    run.benchmarks.truncate(2);
    for (rate, ttft, ttft_iv) in [
        (2.0, 20.0, (18.0, 22.0)),
        (4.0, 30.0, (25.0, 35.0)),
        (6.0, 45.0, (40.0, 55.0)),
        (8.0, 60.0, (45.0, 70.0)),
        (10.0, 200.0, (150.0, 250.0)),
    ] {
        run.benchmarks.push(rung(&base, rate, ttft, ttft_iv));
    }
    // The capacity is the top rate's (kept up): the SLO answer is never above it.
    let m = run.benchmarks[run.benchmarks.len() - 1].clone();
    let mut c = bench_core::Capacity {
        knee_requests_per_s: bench_report::knee(&run),
        slo: Some("ttft_median=40".parse().expect("slo")),
        slo_max_requests_per_s: Some(4.0),
        slo_bracket: Some(bracket(Some(4.0), Some(6.0), 1)),
        ..bench_core::Capacity::measured(
            m.rates.requests_per_s,
            m.rates.output_tokens_per_s,
            m.label.clone(),
        )
    };
    c.intervals = bench_report::capacity_intervals(&run, &c);
    run.capacity = Some(c);
    run
}

/// `b` summarised again from `records` over the same benchmark bounds and window (the records of a
/// benchmark kept, as the golden and merge tests compare them).
pub fn summarise(b: &BenchmarkReport, records: &[RequestRecord]) -> BenchmarkReport {
    let opts = StatsOptions {
        keep_records: true,
        ..StatsOptions::default()
    };
    let mut acc = Accumulator::new(&opts);
    for r in records {
        acc.add(r.clone());
    }
    let wall = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_747_328_368);
    let mut meta = BenchmarkMeta::new(
        b.strategy.clone(),
        b.timeline.start_ns,
        b.timeline.end_ns,
        wall,
    );
    meta.window = Window {
        open: b.timeline.measure_start_ns,
        close: b.timeline.measure_end_ns,
        cooldown: b.cooldown_s > 0.0,
    };
    meta.stop_reason = b.stop_reason.clone();
    acc.finish(meta)
}

/// `run`'s benchmarks split into the files of a run of `count` shards: the `j`-th record of a
/// benchmark goes to shard `shard_of(j, record)` (`None`: to none), each shard's benchmarks
/// summarised from its share ([`summarise`]); with the whole run summarised the same way (the
/// golden and merge tests' shards).
pub fn split_into_shards(
    run: &RunReport,
    count: u32,
    shard_of: impl Fn(usize, &RequestRecord) -> Option<u32>,
) -> (RunReport, Vec<ShardFile>) {
    let mut whole = run.clone();
    let mut shards: Vec<RunReport> = (0..count).map(|_| run.clone()).collect();
    for (k, b) in run.benchmarks.iter().enumerate() {
        let all = b.records.clone().expect("records kept");
        whole.benchmarks[k] = summarise(b, &all);
        for (i, s) in shards.iter_mut().enumerate() {
            let mine: Vec<RequestRecord> = all
                .iter()
                .enumerate()
                .filter(|(j, r)| shard_of(*j, r) == Some(i as u32))
                .map(|(_, r)| r.clone())
                .collect();
            s.benchmarks[k] = summarise(b, &mine);
        }
    }
    (whole, shard_files(shards, count))
}

/// `runs` as the shard files of a run of `count` shards, shard `i` the `i`-th.
pub fn shard_files(runs: Vec<RunReport>, count: u32) -> Vec<ShardFile> {
    runs.into_iter()
        .enumerate()
        .map(|(i, mut run)| {
            run.shard = Some(ShardRun {
                index: i as u32,
                count,
                start_at: Some("2025-05-15T16:59:28Z".into()),
                start_late_ms: Some(0.5),
                clock: None,
            });
            ShardFile {
                name: format!("shard-{i}.json"),
                run,
            }
        })
        .collect()
}
