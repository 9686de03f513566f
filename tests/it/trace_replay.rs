//! Trace replay end to end against the simulator: dispatch on the recorded schedule scaled by
//! the speed-up, the simulator's prefix cache hitting exactly where the trace's hash ids say
//! (the theoretical hit rate), bad trace files refused with exit 2, and `bench trace`.

use crate::common;

use common::{bench, f, fresh, mock_report, read_log, text, write_sim};

const BS: u64 = 16;

/// Rows of two families sharing block 1: even rows [1, 2, 3, u] (64 tokens), odd rows
/// [1, 5, u] (48 tokens), `u` unique; 30 ms apart. Every block is full, so a row's cached
/// tokens are `BS` times its blocks seen before (the simulator never caches a prompt's last
/// token, which here always lies in the unique block).
fn rows(n: u64) -> Vec<(u64, Vec<u64>)> {
    (0..n)
        .map(|i| {
            let ids = if i % 2 == 0 {
                vec![1, 2, 3, 100 + i]
            } else {
                vec![1, 5, 100 + i]
            };
            (i * 30, ids)
        })
        .collect()
}

fn write_trace(dir: &std::path::Path, rows: &[(u64, Vec<u64>)]) -> std::path::PathBuf {
    let body: String = rows
        .iter()
        .map(|(t, ids)| {
            format!(
                "{{\"timestamp\": {t}, \"input_length\": {}, \"output_length\": 4, \"hash_ids\": {ids:?}}}\n",
                ids.len() as u64 * BS
            )
        })
        .collect();
    let p = dir.join("trace.jsonl");
    std::fs::write(&p, body).expect("write trace");
    p
}

/// Blocks of each row already sent by an earlier row (an unbounded cache's hits).
fn seen_before(rows: &[(u64, Vec<u64>)]) -> Vec<u64> {
    let mut seen = std::collections::HashSet::new();
    rows.iter()
        .map(|(_, ids)| ids.iter().filter(|h| !seen.insert(**h)).count() as u64)
        .collect()
}

#[test]
fn replay_follows_the_schedule_and_hits_the_prefix_cache_as_the_trace_says() {
    let dir = fresh("trace", "replay");
    let rows = rows(12);
    let trace = write_trace(&dir, &rows);
    let log = dir.join("requests.jsonl");
    let sim = write_sim(
        &dir,
        "prefix_cache_blocks: 4096\nblock_size: 16\nprefill_rate: 100000\n",
        Some(&log),
    );
    let data = format!("trace={},block_size=16", trace.display());
    // One request in flight, so each row meets the cache every earlier row left (no race
    // between a prompt's prefill and the next arrival); the schedule is still the trace's.
    let report = mock_report(
        "run",
        "replay",
        &dir,
        Some(&sim),
        &[
            "--data",
            &data,
            "--speedup",
            "4,2",
            "--max-concurrency",
            "1",
            "--save-records",
        ],
    );
    let seen = seen_before(&rows);
    let theoretical = seen.iter().sum::<u64>() as f64
        / rows.iter().map(|(_, ids)| ids.len() as u64).sum::<u64>() as f64;
    let extra = &report["environment"]["extra"]["trace"];
    assert_eq!(f(extra, &["rows"]), 12.0);
    assert!((f(extra, &["theoretical_hit_rate"]) - theoretical).abs() < 1e-12);
    // Closed form: row 0 none, odd rows 1 of 3 (then block 5 too: 2 of 3), even rows 3 of 4
    // from row 2 on.
    assert_eq!(seen, vec![0, 1, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2]);

    let benchmarks = report["benchmarks"].as_array().expect("benchmarks");
    assert_eq!(benchmarks.len(), 2);
    for (b, speedup) in benchmarks.iter().zip([4.0, 2.0]) {
        assert_eq!(b["label"], format!("trace@{speedup:.2}x"));
        let mut recs: Vec<&serde_json::Value> =
            b["records"].as_array().expect("records").iter().collect();
        recs.sort_by_key(|r| r["id"].as_u64());
        assert_eq!(recs.len(), rows.len(), "requests sent = rows");
        let t0 = f(recs[0], &["scheduled"]);
        for (r, (at_ms, ids)) in recs.iter().copied().zip(&rows) {
            let want = (*at_ms as f64 * 1e6 / speedup).round();
            assert_eq!(
                f(r, &["scheduled"]) - t0,
                want,
                "scheduled at the recorded offset"
            );
            assert_eq!(f(r, &["prompt_tokens"]), (ids.len() as u64 * BS) as f64);
            assert_eq!(f(r, &["output_tokens"]), 4.0);
        }
    }

    // The simulator's log, in arrival order: each benchmark's replay meets only its own
    // earlier rows (a fresh salt per benchmark), exactly as far as the hash ids agree.
    let mut lines = read_log(&log);
    // Written as requests end; `id` is the arrival number.
    lines.sort_by_key(|l| l["id"].as_u64());
    assert_eq!(lines.len(), 2 * rows.len());
    let mut cached_total = 0.0;
    let mut prompt_total = 0.0;
    for (i, line) in lines.iter().enumerate() {
        let row = i % rows.len();
        let cached = f(line, &["cached_tokens"]);
        let prompt = f(line, &["prompt_tokens"]);
        assert_eq!(
            cached,
            (seen[row] * BS) as f64,
            "request {i}: cached tokens"
        );
        assert_eq!(
            prompt - cached,
            ((rows[row].1.len() as u64 - seen[row]) * BS) as f64,
            "request {i}: prefill work"
        );
        cached_total += cached;
        prompt_total += prompt;
    }
    assert!((cached_total / prompt_total - theoretical).abs() < 1e-12);

    // What the simulator answered (`usage.prompt_tokens_details.cached_tokens`), as the
    // worker recorded it per request and the report sums it per benchmark: the log's counts,
    // hence the theoretical hit rate (every block full: cached / prompt tokens = blocks seen /
    // blocks).
    for b in benchmarks {
        let mut recs: Vec<&serde_json::Value> =
            b["records"].as_array().expect("records").iter().collect();
        recs.sort_by_key(|r| r["id"].as_u64());
        for (r, s) in recs.iter().zip(&seen) {
            assert_eq!(f(r, &["cached_tokens"]), (s * BS) as f64, "{r}");
        }
        let c = &b["cached_tokens"];
        assert_eq!(f(c, &["requests"]), rows.len() as f64);
        assert_eq!(
            f(c, &["cached_tokens"]),
            (seen.iter().sum::<u64>() * BS) as f64
        );
        assert!((f(c, &["hit_rate"]) - theoretical).abs() < 1e-12, "{c}");
    }
}

#[test]
fn bad_traces_are_refused_with_exit_2_naming_file_and_line() {
    let dir = fresh("trace", "bad");
    let p = dir.join("back.jsonl");
    std::fs::write(
        &p,
        "{\"timestamp\": 5, \"input_length\": 3, \"hash_ids\": [1]}\n{\"timestamp\": 2, \"input_length\": 3, \"hash_ids\": [1]}\n",
    )
    .expect("write");
    let data = format!("trace={}", p.display());
    for args in [
        vec![
            "run",
            "--mock",
            "--quiet",
            "--speedup",
            "1",
            "--data",
            &data,
        ],
        vec!["trace", p.to_str().expect("utf8")],
    ] {
        let out = bench(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "trace {} line 2: timestamp goes back 3 ms",
                p.display()
            )),
            "{err}"
        );
    }
    // A row whose length does not fit its hash ids: refused, or fitted under fit=length.
    let unfit = dir.join("unfit.jsonl");
    std::fs::write(
        &unfit,
        "{\"timestamp\": 0, \"input_length\": 16, \"hash_ids\": [1]}\n{\"timestamp\": 5, \"input_length\": 40, \"hash_ids\": [1, 2]}\n",
    )
    .expect("write");
    let arg = format!("trace={},block_size=16", unfit.display());
    let data = format!("{arg},format=mooncake");
    for args in [
        vec!["run", "--mock", "--quiet", "--data", &data],
        vec!["trace", &arg],
    ] {
        let out = bench(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "trace {} line 2: input_length 40 does not fit 2 hash_ids of 16 tokens",
                unfit.display()
            )),
            "{err}"
        );
    }
    let out = bench(&["trace", &format!("{arg},fit=length")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains("rows           2 (0 skipped, 1 fitted to their hash_ids by fit=length)"),
        "{t}"
    );
    assert!(t.contains("total 48"), "{t}");
    // A trace load without a trace is named; a sweep over a trace with Poisson arrivals, or
    // over a trace without a mean rate, is refused.
    let out = bench(&["run", "--mock", "--quiet", "--speedup", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--rate-type trace replays a trace: give --data trace=FILE"));
    let q = write_trace(&dir, &rows(4));
    let data = format!("trace={},block_size=16", q.display());
    let out = bench(&[
        "sweep",
        "--mock",
        "--quiet",
        "--data",
        &data,
        "--sweep-rate-type",
        "poisson",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(
        "--sweep-rate-type poisson: a sweep over a trace replays the trace's own arrival times"
    ));
    let one = dir.join("one.jsonl");
    std::fs::write(
        &one,
        "{\"timestamp\": 0, \"input_length\": 16, \"hash_ids\": [1]}\n",
    )
    .expect("write");
    let one_data = format!("trace={},block_size=16", one.display());
    let out = bench(&["sweep", "--mock", "--quiet", "--data", &one_data]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "--data {one_data}: a sweep over a trace states capacity as a multiple of the trace's mean rate, and this trace has none"
        )),
        "{err}"
    );
    let out = bench(&[
        "run",
        "--mock",
        "--quiet",
        "--rate-type",
        "constant",
        "--rate",
        "1",
        "--speedup",
        "2",
        "--data",
        &data,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("speedup: applies to --rate-type trace, not constant"));
    let out = bench(&[
        "run",
        "--mock",
        "--quiet",
        "--rate",
        "1",
        "--speedup",
        "2",
        "--data",
        &data,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("speedup and rate both give the speed-ups of a trace; give one")
    );
}

#[test]
fn bench_trace_prints_the_figures_of_a_trace() {
    let dir = fresh("trace", "inspect");
    let rows = rows(10);
    let p = write_trace(&dir, &rows);
    let arg = format!("trace={},block_size=16", p.display());
    let out = bench(&["trace", &arg, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(f(&v, &["rows"]), 10.0);
    assert_eq!(f(&v, &["duration_s"]), 0.27);
    assert!((f(&v, &["mean_rate"]) - 9.0 / 0.27).abs() < 1e-9);
    // Five rows of 64 tokens and five of 48.
    assert_eq!(f(&v, &["prompt_tokens", "mean"]), 56.0);
    assert_eq!(f(&v, &["prompt_tokens", "p50"]), 48.0);
    assert_eq!(f(&v, &["prompt_tokens", "p90"]), 64.0);
    assert_eq!(f(&v, &["prompt_tokens", "total"]), 560.0);
    assert_eq!(f(&v, &["output_tokens", "max"]), 4.0);
    let seen: u64 = seen_before(&rows).iter().sum();
    assert_eq!(f(&v, &["blocks"]), 35.0);
    assert_eq!(f(&v, &["blocks_seen"]), seen as f64);
    assert_eq!(f(&v, &["theoretical_hit_rate"]), seen as f64 / 35.0);
    let out = bench(&["trace", &arg]);
    let t = text(&out.stdout);
    assert!(t.contains("rows           10 (0 skipped)"), "{t}");
    assert!(
        t.contains(&format!(
            "hit rate       {:.1}% (theoretical",
            100.0 * seen as f64 / 35.0
        )),
        "{t}"
    );
}

#[test]
fn the_console_states_the_fidelity_of_each_replay() {
    let dir = fresh("trace", "fidelity");
    let p = write_trace(&dir, &rows(12));
    let data = format!("trace={},block_size=16", p.display());
    let out = bench(&[
        "run",
        "--mock",
        "--quiet",
        "--console",
        "vllm",
        "--data",
        &data,
        "--speedup",
        "4",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    // 6 rows of 64 tokens and 6 of 48; 4 output tokens each.
    assert!(
        t.contains("trace fidelity trace@4.00x: 12 of 12 rows sent; prompt tokens 672 of 672 recorded; output tokens 48 of 48 recorded; queue p99 "),
        "{t}"
    );
    // 26 of 42 blocks seen before; the default simulator has no prefix cache, so neither its
    // answers nor its counters say anything of one.
    assert!(
        t.contains("; prefix cache hit rate: theoretical 61.9%, server-reported cached tokens -, server counters -\n"),
        "{t}"
    );
    // A trace as --data replays at its recorded speed without --rate-type.
    let out = bench(&[
        "run",
        "--mock",
        "--quiet",
        "--console",
        "vllm",
        "--data",
        &data,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("trace fidelity trace@1.00x: 12 of 12 rows sent"));
    // A window of the first 5 rows.
    let out = bench(&[
        "run",
        "--mock",
        "--quiet",
        "--console",
        "vllm",
        "--data",
        &data,
        "--speedup",
        "4",
        "--max-requests",
        "5",
    ]);
    let t = text(&out.stdout);
    assert!(
        t.contains("trace fidelity trace@4.00x: 5 of 12 rows sent; prompt tokens 288 of 672 recorded; output tokens 20 of 48 recorded"),
        "{t}"
    );
}

/// Rows sharing a `session_id` replay as one session: its first row at its recorded offset,
/// each later row `delay` (scaled by the speed-up) after the previous answer, resending the
/// history (earlier messages and the server's actual replies) before its own message.
#[test]
fn sessions_in_a_trace_replay_as_multi_turn_sessions() {
    let dir = fresh("trace", "sessions");
    let p = dir.join("sessions.jsonl");
    // Session "a" (2 turns, 200 ms apart after the answer), session 7 (a number; 2 turns,
    // 100 ms), and a row of no session between them.
    std::fs::write(
        &p,
        r#"{"timestamp": 0, "session_id": "a", "input_length": 32, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 10, "session_id": 7, "input_length": 16, "output_length": 4, "hash_ids": [3]}
{"session_id": "a", "delay": 200, "input_length": 16, "output_length": 4, "hash_ids": [4]}
{"timestamp": 50, "input_length": 16, "output_length": 4, "hash_ids": [5]}
{"session_id": 7, "delay": 100, "input_length": 16, "output_length": 4, "hash_ids": [6]}
"#,
    )
    .expect("write");
    let log = dir.join("requests.jsonl");
    let sim = write_sim(
        &dir,
        "prefix_cache_blocks: 4096\nblock_size: 16\nprefill_rate: 100000\n",
        Some(&log),
    );
    let data = format!("trace={},block_size=16", p.display());
    let speedup: f64 = 2.0;
    let report = mock_report(
        "run",
        "sessions",
        &dir,
        Some(&sim),
        &[
            "--data",
            &data,
            "--speedup",
            "2",
            "--backend",
            "openai-chat",
            "--save-records",
        ],
    );
    let b = &report["benchmarks"][0];
    assert_eq!(f(b, &["sessions", "started"]), 3.0, "{}", b["sessions"]);
    assert_eq!(f(b, &["sessions", "completed"]), 3.0);
    let mut recs: Vec<&serde_json::Value> =
        b["records"].as_array().expect("records").iter().collect();
    recs.sort_by_key(|r| r["id"].as_u64());
    assert_eq!(recs.len(), 5);
    // Released in row order: session "a", session 7, the lone row, then the later turns.
    let turn = |r: &serde_json::Value| (f(r, &["session", "turn"]), f(r, &["session", "turns"]));
    let t0 = f(recs[0], &["scheduled"]);
    for (r, at_ms) in recs[..3].iter().zip([0.0f64, 10.0, 50.0]) {
        assert_eq!(turn(r).0, 1.0);
        assert_eq!(f(r, &["scheduled"]) - t0, (at_ms * 1e6 / speedup).round());
    }
    assert_eq!(
        turn(recs[2]),
        (1.0, 1.0),
        "a row of no session is a session of one turn"
    );
    // Each later turn: `delay / speedup` after its session's first answer, never before.
    for (first, later, delay_ms) in [(0, 4, 200.0), (1, 3, 100.0)] {
        let (a, b2) = (recs[first], recs[later]);
        assert_eq!(turn(b2), (2.0, 2.0));
        assert_eq!(
            f(a, &["session", "session"]),
            f(b2, &["session", "session"])
        );
        let pause = f(b2, &["scheduled"]) - f(a, &["end"]);
        assert!(pause >= delay_ms * 1e6 / speedup, "pause {pause} ns");
        assert!(f(b2, &["dispatched"]) >= f(b2, &["scheduled"]));
    }
    // The history, resent verbatim: turn 2's prompt is turn 1's prompt, its 4-token reply and
    // the new 16-token message (a chat prompt counts message contents), and the simulator's
    // prefix cache finds turn 1's prompt and reply in it (whole 16-token blocks, never the
    // last token), as for any multi-turn session.
    // The simulator numbers requests as they arrive, and two first turns sent 5 ms apart on
    // two new connections can arrive in either order (one run in many, on a loaded machine),
    // so each turn is found by its length: session "a" opens with 32 tokens, session 7 with 16.
    let lines = read_log(&log);
    let prompt = |l: &serde_json::Value| f(l, &["prompt_tokens"]);
    assert_eq!(lines.len(), 5);
    for p1 in [32.0, 16.0] {
        let p2 = p1 + 4.0 + 16.0;
        assert!(lines.iter().any(|l| prompt(l) == p1), "no turn of {p1}");
        let later: Vec<_> = lines.iter().filter(|l| prompt(l) == p2).collect();
        assert_eq!(later.len(), 1, "one turn of {p2} tokens: {lines:?}");
        let cached = 16.0 * ((p1 + 4.0 - 1.0) / 16.0).floor();
        assert_eq!(f(later[0], &["cached_tokens"]), cached, "{}", later[0]);
    }
    let out = bench(&["trace", &data, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((f(&v, &["rows"]), f(&v, &["sessions"])), (5.0, 2.0));
    assert_eq!(
        f(&report["environment"]["extra"]["trace"], &["sessions"]),
        2.0
    );
    // A delay with no earlier row of its session, or without a session, is refused.
    for (body, want) in [
        (
            "{\"session_id\": \"z\", \"delay\": 5, \"input_length\": 16, \"hash_ids\": [1]}\n",
            "line 1: no timestamp, and no earlier row of session_id z",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 16, \"hash_ids\": [1]}\n{\"delay\": 5, \"input_length\": 16, \"hash_ids\": [1]}\n",
            "line 2: no timestamp, and a delay without a session_id",
        ),
    ] {
        let q = dir.join("bad.jsonl");
        std::fs::write(&q, body).expect("write");
        let arg = format!("trace={},format=mooncake", q.display());
        let out = bench(&["trace", &arg]);
        common::usage_error(&out, want, "");
    }
}
