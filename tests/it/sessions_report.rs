//! Issue 14, metrics per turn, end to end: the real `bench` binary runs sessions against its
//! in-process simulator (`--mock`), and the per-turn figures of its JSON report are checked
//! against the simulator's closed form (docs/simulator.md, "A chat turn with the prefix
//! cache") and against its request log (`log_requests`). Each benchmark lasts a few seconds;
//! the tolerances hold on a loaded 2-core machine.

use crate::common;

use common::{f, fresh, mock_report, read_log, serial, write_sim};
use serde_json::Value;

/// Runs `bench run --mock --backend openai-chat` with simulator settings `sim` (YAML lines,
/// the request log added) and `args`; returns the first benchmark of the JSON report and the
/// simulator's log lines.
fn run(name: &str, sim: &str, args: &[&str]) -> (Value, Vec<Value>) {
    let dir = fresh("sessions", name);
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, sim, Some(&log));
    let args = [&["--backend", "openai-chat"], args].concat();
    let v = mock_report("run", name, &dir, Some(&cfg), &args);
    let entries = read_log(&log);
    let _ = std::fs::remove_dir_all(&dir);
    (v["benchmarks"][0].clone(), entries)
}

fn turns(b: &Value) -> &Vec<Value> {
    b["sessions"]["turns"].as_array().expect("sessions.turns")
}

const P: u64 = 400; // user message tokens per turn
const N: u64 = 16; // output tokens per turn
const BLOCK: u64 = 16;
const OVERHEAD_MS: f64 = 2.0;
const RATE: f64 = 5000.0; // prefill tokens/s

/// Prompt tokens of turn `k` (from 1): `k` user messages and `k - 1` replies.
fn prompt(k: u64) -> u64 {
    k * P + (k - 1) * N
}

/// Cached tokens of turn `k` (docs/simulator.md): the blocks of turn `k - 1`'s prompt and
/// reply, never the last prompt token.
fn cached(k: u64) -> u64 {
    if k == 1 {
        return 0;
    }
    let before = prompt(k - 1) + N;
    BLOCK * ((before - 1) / BLOCK).min((prompt(k) - 1) / BLOCK)
}

/// Unloaded TTFT of turn `k`: prefill of the uncached part.
fn ttft_ms(k: u64, cache: bool) -> f64 {
    let c = if cache { cached(k) } else { 0 };
    OVERHEAD_MS + (prompt(k) - c) as f64 / RATE * 1000.0
}

/// One user, four-turn sessions back to back, 16 turns: 4 sessions, all completed. One user,
/// so no two prefills ever share a step and every turn's unloaded TTFT is the closed form's
/// (two users' sessions ran in step on a quiet machine, and apart under load).
fn one_user(name: &str, cache_blocks: u32) -> (Value, Vec<Value>) {
    let sim = format!(
        "max_batch: 64\nstep_base_ms: 4\nstep_per_seq_ms: 0\nprefill_overhead_ms: {OVERHEAD_MS}\nprefill_rate: {RATE}\nprefix_cache_blocks: {cache_blocks}\nblock_size: {BLOCK}\n"
    );
    let data = format!("turns=4,prompt_tokens={P},output_tokens={N}");
    run(
        name,
        &sim,
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "1",
            "--max-requests",
            "16",
            "--data",
            &data,
        ],
    )
}

/// The milliseconds from `from` to `to` (log keys, Unix ns) of the log's requests of turn `k`.
fn logged_ms(log: &[Value], k: u64, from: &str, to: &str) -> Vec<f64> {
    log.iter()
        .filter(|e| e["prompt_tokens"].as_u64() == Some(prompt(k)))
        .map(|e| {
            let at = |key: &str| e[key].as_f64().unwrap_or_else(|| panic!("{key}: {e}"));
            (at(to) - at(from)) / 1e6
        })
        .collect()
}

/// Each turn against the closed form and the log. The closed form is the engine's: from the
/// request reaching it (`submitted_unix_ns`) to its first token: the log's requests of the turn
/// show it within 1 ms below and 10 above for the fastest, 20 for every one (a token is written
/// when the task holding the connection runs: +1.5 to +4 ms on a quiet machine, one request of
/// 16 at +10.6 with two busy loops beside the run). The server's own work before that (reading, tokenizing a chat prompt
/// of up to 1,648 tokens, hashing its blocks) is CPU time, not the model's: 8-33 ms in a debug
/// build on a quiet machine, 55 with two busy loops beside it, which failed the old check of
/// the client's fastest request against the closed form + 40 ms in a CI run. The client's
/// TTFT is held by the log's of the same requests (head received to first token): never below
/// it, and its mean within 20 ms above.
fn check_turn_ttft(b: &Value, log: &[Value], cache: bool) {
    for (i, t) in turns(b).iter().enumerate() {
        let k = i as u64 + 1;
        assert_eq!(f(t, &["turn"]), k as f64);
        assert_eq!(f(t, &["requests", "completed"]), 4.0, "turn {k}: {t}");
        let want = ttft_ms(k, cache);
        let engine = logged_ms(log, k, "submitted_unix_ns", "first_token_unix_ns");
        assert_eq!(engine.len(), 4, "turn {k} in the log");
        let least = engine.iter().copied().fold(f64::MAX, f64::min);
        assert!(
            least >= want - 1.0 && engine.iter().all(|&e| e <= want + 20.0) && least <= want + 10.0,
            "cache {cache}, turn {k}: the engine's TTFT {engine:.1?} ms, closed form {want:.1} ms"
        );
        let server = logged_ms(log, k, "arrival_unix_ns", "first_token_unix_ns");
        let server = server.iter().sum::<f64>() / 4.0;
        let (got, fastest) = (f(t, &["ttft_ms", "mean"]), f(t, &["ttft_ms", "min"]));
        eprintln!(
            "cache {cache}, turn {k}: client TTFT mean {got:.1} ms (least {fastest:.1}), \
             server's {server:.1}, engine's {:.1} to {:.1}, closed form {want:.1}",
            engine.iter().copied().fold(f64::MAX, f64::min),
            engine.iter().copied().fold(0.0, f64::max),
        );
        assert!(
            got >= server - 1.0 && got <= server + 20.0,
            "cache {cache}, turn {k}: client TTFT {got:.1} ms, simulator's {server:.1} ms"
        );
    }
}

#[test]
fn per_turn_ttft_drops_with_the_prefix_cache_and_grows_without_it() {
    let _one = serial();
    let (on, on_log) = one_user("cache-on", 4096);
    let (off, off_log) = one_user("cache-off", 0);
    for (b, log, cache) in [(&on, &on_log, true), (&off, &off_log, false)] {
        assert_eq!(turns(b).len(), 4, "{b}");
        assert_eq!(f(b, &["sessions", "started"]), 4.0);
        assert_eq!(f(b, &["sessions", "completed"]), 4.0);
        // The log's cache hits are the closed form's.
        for e in log {
            let p = e["prompt_tokens"].as_u64().expect("prompt");
            let k = (1..=4).find(|&k| prompt(k) == p).expect("a turn's prompt");
            let want = if cache { cached(k) } else { 0 };
            assert_eq!(e["cached_tokens"].as_u64(), Some(want), "turn {k}: {e}");
        }
        check_turn_ttft(b, log, cache);
    }
    // Turn 4: 2 + 1648 / 5000 s = 331.6 ms without the cache, 2 + 416 / 5000 s = 85.2 ms with
    // it (turn 1: 82 ms either way).
    // Each turn's fastest request as the client saw it: the cache's effect.
    let t = |b: &Value, k: usize| f(&turns(b)[k - 1], &["ttft_ms", "min"]);
    for k in 1..=4 {
        eprintln!(
            "turn {k}: least TTFT {:.1} ms with the cache (closed form {:.1}), {:.1} ms without ({:.1})",
            t(&on, k),
            ttft_ms(k as u64, true),
            t(&off, k),
            ttft_ms(k as u64, false)
        );
    }
    assert!(
        t(&on, 4) < 0.5 * t(&off, 4),
        "{} vs {}",
        t(&on, 4),
        t(&off, 4)
    );
    assert!(
        t(&off, 4) > 3.0 * t(&off, 1),
        "{} vs {}",
        t(&off, 4),
        t(&off, 1)
    );
    assert!(
        t(&on, 4) < 1.5 * t(&on, 1),
        "{} vs {}",
        t(&on, 4),
        t(&on, 1)
    );
}

/// The turn (from 1) of a prompt of the cut benchmark's data: user messages of 90 to 110
/// tokens, replies of 16, so turn k's prompt lies in [90k + 16(k-1), 110k + 16(k-1)].
fn turn_of(prompt: u64) -> usize {
    (1..=4u64)
        .find(|&k| (90 * k + 16 * (k - 1)..=110 * k + 16 * (k - 1)).contains(&prompt))
        .unwrap_or_else(|| panic!("prompt {prompt} is no turn's")) as usize
}

#[test]
fn session_counts_and_per_turn_prompts_match_the_log_when_the_end_cuts_sessions() {
    let _one = serial();
    // A new session every 250 ms for 2 s, 200 ms pauses; sessions last about 0.9 s, so the
    // last ones are cut by the end; 10% of requests are answered 500 (their sessions error).
    let sim = "max_batch: 64\nstep_base_ms: 4\nstep_per_seq_ms: 0.1\nprefill_overhead_ms: 2\nprefill_rate: 10000\nprefix_cache_blocks: 4096\nseed: 3\nfaults:\n  http_500: 0.1\n";
    let (b, log) = run(
        "cut",
        sim,
        &[
            "--rate-type",
            "constant",
            "--rate",
            "4",
            "--max-seconds",
            "2",
            "--think-time",
            "200ms",
            "--data",
            "turns=4,prompt_tokens=100,prompt_tokens_stdev=10,prompt_tokens_min=90,prompt_tokens_max=110,output_tokens=16",
        ],
    );
    assert_eq!(b["stop_reason"], "max_seconds");
    let count = |k: usize, ok: bool| {
        log.iter()
            .filter(|e| turn_of(e["prompt_tokens"].as_u64().expect("prompt")) == k)
            .filter(|e| !ok || (e["status"] == 200 && e["end"] == "completed"))
            .count() as f64
    };
    let errors = log.iter().filter(|e| e["status"] != 200).count() as f64;
    let s = &b["sessions"];
    let (started, completed) = (f(s, &["started"]), f(s, &["completed"]));
    let (cut, errored) = (f(s, &["cut"]), f(s, &["errored"]));
    // Every started session sent turn 1; every completed one completed turn 4; a failed turn
    // ends its session; the rest were cut.
    assert_eq!(started, count(1, false), "{s}");
    assert_eq!(completed, count(4, true), "{s}");
    assert_eq!(errored, errors, "{s}");
    assert_eq!(started, completed + cut + errored);
    assert!(cut >= 1.0 && completed >= 1.0 && errored >= 1.0, "{s}");
    assert_eq!(f(&s["duration_ms"], &["count"]), completed);
    // Turn k's prompt figures are the log's (usage): requests, total, min and max.
    let rows = turns(&b);
    assert_eq!(rows.len(), 4);
    for (i, t) in rows.iter().enumerate() {
        let k = i + 1;
        let mine: Vec<u64> = log
            .iter()
            .filter(|e| e["status"] == 200 && e["end"] == "completed")
            .filter_map(|e| e["prompt_tokens"].as_u64())
            .filter(|&p| turn_of(p) == k)
            .collect();
        let p = &t["prompt_tokens"];
        assert_eq!(f(t, &["requests", "completed"]), mine.len() as f64, "{t}");
        assert_eq!(
            f(t, &["requests", "total"]),
            count(k, false),
            "turn {k}: {t}"
        );
        assert_eq!(f(p, &["count"]), mine.len() as f64);
        assert_eq!(
            f(p, &["total"]),
            mine.iter().sum::<u64>() as f64,
            "turn {k}"
        );
        assert_eq!(f(p, &["min"]), *mine.iter().min().expect("some") as f64);
        assert_eq!(f(p, &["max"]), *mine.iter().max().expect("some") as f64);
        assert_eq!(f(t, &["output_tokens", "total"]), 16.0 * mine.len() as f64);
    }
}
