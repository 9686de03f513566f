//! Issue 47, tool-calling sessions end to end: the real `bench` binary runs sessions carrying
//! tool definitions against its in-process simulator, which answers a seeded share of user
//! turns with a tool call; bench sends the tool result as the next request. Every request's
//! prompt count is checked against the simulator's request log, exactly: bench's own count (the
//! usage is turned off, so the report's prompt tokens are the loader's counts of the
//! definitions, the messages, the tool calls and results) equals the simulator's, row by row
//! of the per-turn report, and both follow the closed form of docs/metrics.md, "Tool calls".

use std::collections::BTreeMap;

use crate::common;

use common::{fresh, mock_report, read_log, write_sim};
use serde_json::Value;

const P: u64 = 60; // user message tokens
const N: u64 = 12; // output tokens (a reply, or a tool call's arguments)
const TOOLS: u64 = 2;
const TOOL_TOKENS: u64 = 150; // per definition
const R: u64 = 40; // tool result tokens
const TURNS: u64 = 3;

/// (count, total, min, max) of a row's prompt tokens.
type Row = (u64, u64, u64, u64);

fn add(rows: &mut BTreeMap<(u64, bool), Row>, key: (u64, bool), p: u64) {
    let r = rows.entry(key).or_insert((0, 0, u64::MAX, 0));
    *r = (r.0 + 1, r.1 + p, r.2.min(p), r.3.max(p));
}

/// The log's requests as per-turn rows, keyed by (turn, tool result): one user, so the log is
/// in session order and the request after a tool call is its tool result. Checks each entry's
/// closed form on the way.
fn log_rows(log: &[Value]) -> BTreeMap<(u64, bool), Row> {
    let mut rows = BTreeMap::new();
    let (mut after_call, mut calls, mut last_turn) = (false, 0, 0);
    for e in log {
        assert_eq!(e["status"], 200, "{e}");
        let p = e["prompt_tokens"].as_u64().expect("prompt");
        let tools = e["tool_tokens"].as_u64().unwrap_or(0);
        // Without the tool parts the prompt is k user messages and k - 1 replies.
        let base = p - tools;
        assert_eq!((base + N) % (P + N), 0, "{e}");
        let k = (base + N) / (P + N);
        if k < last_turn || (k == 1 && !after_call) {
            calls = 0; // a new session
        }
        last_turn = k;
        if after_call {
            calls += 1;
        }
        assert_eq!(tools, TOOLS * TOOL_TOKENS + calls * (N + R), "{e}");
        add(&mut rows, (k, after_call), p);
        let call = e["tool_call"].as_bool().unwrap_or(false);
        assert!(
            !(call && after_call),
            "a tool result is answered in text: {e}"
        );
        after_call = call;
    }
    rows
}

#[test]
fn tool_call_sessions_count_definitions_calls_and_results_as_the_simulator_does() {
    let dir = fresh("tools", "counts");
    let log = dir.join("log.jsonl");
    let sim = "tool_call_share: 0.5\nseed: 7\nignore_eos: true\nstep_base_ms: 1\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 1000000\n";
    let cfg = write_sim(&dir, sim, Some(&log));
    let data = format!(
        "turns={TURNS},prompt_tokens={P},output_tokens={N},tools={TOOLS},tool_tokens={TOOL_TOKENS},tool_result_tokens={R}"
    );
    let v = mock_report(
        "run",
        "tools",
        &dir,
        Some(&cfg),
        &[
            "--backend",
            "openai-chat",
            "--rate-type",
            "concurrent",
            "--rate",
            "1",
            "--max-requests",
            "40",
            "--data",
            &data,
            // No usage: the report's prompt tokens are bench's own counts.
            "--extra-body",
            r#"{"stream_options": {"include_usage": false}}"#,
        ],
    );
    let entries = read_log(&log);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(entries.len(), 40);
    let want = log_rows(&entries);
    let b = &v["benchmarks"][0];
    assert_eq!(
        b["tokens"]["prompt"]["sources"]["tokenizer"].as_u64(),
        Some(40),
        "every prompt count is bench's own"
    );
    let mut got = BTreeMap::new();
    for t in b["sessions"]["turns"].as_array().expect("turns") {
        let tool = match t.get("kind") {
            None => false,
            Some(k) if k == "tool_result" => true,
            Some(k) => panic!("kind {k}"),
        };
        let p = &t["prompt_tokens"];
        let u = |k: &str| p[k].as_u64().expect("tokens");
        assert_eq!(t["requests"]["completed"].as_u64(), Some(u("count")), "{t}");
        assert_eq!(t["output_tokens"]["min"].as_u64(), Some(N), "{t}");
        got.insert(
            (t["turn"].as_u64().expect("turn"), tool),
            (u("count"), u("total"), u("min"), u("max")),
        );
    }
    eprintln!("per-turn rows (turn, tool result) -> (count, total, min, max): {got:?}");
    assert_eq!(
        got, want,
        "bench's per-turn prompt counts against the simulator's log"
    );
    let tool_rows: u64 = want.iter().filter(|(k, _)| k.1).map(|(_, r)| r.0).sum();
    let user_rows: u64 = want.iter().filter(|(k, _)| !k.1).map(|(_, r)| r.0).sum();
    // A share of 0.5 over 20-odd user turns: both kinds, surely, from this seed.
    assert!(
        tool_rows >= 5 && user_rows >= 15,
        "{tool_rows} tool, {user_rows} user"
    );
    // The tool result's request adds the call (N) and the result (R) to the user turn's prompt.
    let first = want[&(1, false)];
    assert_eq!(first.2, TOOLS * TOOL_TOKENS + P);
    assert_eq!(want[&(1, true)].2, first.2 + N + R);
}
