//! Issue 47, session affinity end to end: the real `bench` binary runs sessions against its
//! in-process simulator with two replicas behind one port, sending each session's number in
//! `x-session-id` (`--session-header`) and recording the replica each response names in
//! `x-served-by` (`--replica-header`). With `balance: session-affinity` every session stays on
//! one replica and finds its history in that replica's prefix cache; with round-robin its
//! turns alternate and the cached share falls. Each session's replicas, cached and prompt
//! tokens in the report equal the simulator's log grouped by the header it logged.

use std::collections::{BTreeMap, BTreeSet};

use crate::common;

use common::{fresh, mock_report, read_log, write_sim};
use serde_json::Value;

/// Per session (its number): (replicas touched, prompt tokens, cached tokens).
type Sessions = BTreeMap<u64, (u64, u64, u64)>;

/// Runs one user's four-turn sessions on two replicas balanced by `balance`; returns the
/// report's `sessions.cache` and the log's figures per session.
fn run(balance: &str) -> (Value, Sessions) {
    let dir = fresh("affinity", balance);
    let log = dir.join("log.jsonl");
    let sim = format!(
        "replicas: 2\nbalance: {balance}\nprefix_cache_blocks: 4096\nblock_size: 16\nstep_base_ms: 1\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 1000000\nignore_eos: true\n"
    );
    let cfg = write_sim(&dir, &sim, Some(&log));
    let v = mock_report(
        "run",
        balance,
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
            "24",
            "--data",
            "turns=4,prompt_tokens=200,output_tokens=16",
            "--session-header",
            "x-session-id",
            "--replica-header",
            "x-served-by",
        ],
    );
    let entries = read_log(&log);
    let _ = std::fs::remove_dir_all(&dir);
    let mut logged: BTreeMap<u64, (BTreeSet<u64>, u64, u64)> = BTreeMap::new();
    for e in &entries {
        let session: u64 = e["session"]
            .as_str()
            .unwrap_or_else(|| panic!("no session header logged: {e}"))
            .parse()
            .expect("a session number");
        let s = logged.entry(session).or_default();
        s.0.insert(e["replica"].as_u64().expect("replica"));
        s.1 += e["prompt_tokens"].as_u64().expect("prompt");
        s.2 += e["cached_tokens"].as_u64().expect("cached");
    }
    let logged = logged
        .into_iter()
        .map(|(k, (r, p, c))| (k, (r.len() as u64, p, c)))
        .collect();
    (v["benchmarks"][0]["sessions"]["cache"].clone(), logged)
}

/// The report's per-session figures, keyed like the log's.
fn reported(cache: &Value) -> Sessions {
    cache["per_session"]
        .as_array()
        .expect("per_session")
        .iter()
        .map(|r| {
            let u = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k}: {r}"));
            (
                u("session"),
                (u("replicas"), u("prompt_tokens"), u("cached_tokens")),
            )
        })
        .collect()
}

#[test]
fn session_affinity_keeps_sessions_on_one_replica_and_raises_their_cached_share() {
    let (affinity, affinity_log) = run("session-affinity");
    let (round_robin, round_robin_log) = run("round-robin");
    for (name, cache, log) in [
        ("affinity", &affinity, &affinity_log),
        ("round-robin", &round_robin, &round_robin_log),
    ] {
        assert_eq!(reported(cache), *log, "{name}: the report against the log");
        assert_eq!(cache["sessions"].as_u64(), Some(6), "{name}: {cache}");
    }
    let one = |c: &Value| c["one_replica"].as_u64().expect("one_replica");
    assert_eq!(one(&affinity), 6, "every session on one replica");
    assert_eq!(
        one(&round_robin),
        0,
        "round-robin alternates every session's turns"
    );
    let share = |c: &Value| c["cached_share_mean"].as_f64().expect("share");
    let used: BTreeSet<u64> = affinity_log.keys().copied().collect();
    assert_eq!(used.len(), 6);
    eprintln!(
        "mean per-session cached share: affinity {:.3}, round-robin {:.3}",
        share(&affinity),
        share(&round_robin)
    );
    // One user, so round-robin sends turn k of every session to replica (k - 1) mod 2: turn 3
    // finds only turn 1's prefix, turn 4 turn 2's; affinity finds the whole history.
    assert!(
        share(&affinity) > share(&round_robin) + 0.15,
        "affinity {} against round-robin {}",
        share(&affinity),
        share(&round_robin)
    );
}
