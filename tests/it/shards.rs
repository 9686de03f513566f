//! Distributed runs on one machine (docs/distributed.md): N `bench run --shard I/N
//! --start-at T` processes against one `bench mock-server` on loopback, merged by
//! `bench merge`. The merged run is checked against ground truth: the simulator's request
//! log (counts), the single-process schedule (every intended send offset, to the
//! nanosecond) and a histogram built from every request's raw timings (percentiles). No
//! timing figure is compared, so the machine's speed does not matter.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use bench_core::RequestRecord;
use bench_report::Dist;
use common::{bench, fresh, mock_server, read_log, text, write_sim, Killed};
use serde_json::Value;

/// The simulator as its own process, killed on drop.
/// `bench mock-server --port 0` with the request log of `dir`; its URL.
fn start_sim(dir: &Path) -> (Killed, String, PathBuf) {
    let log = dir.join("log.jsonl");
    let cfg = write_sim(dir, "step_base_ms: 1\n", Some(&log));
    let cfg = cfg.to_str().expect("a UTF-8 path");
    let (server, url) = mock_server(&["--port", "0", "--config", cfg]);
    (server, url, log)
}

/// A shared start a few seconds ahead (unix seconds), time enough for every process to start.
fn start_at() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    format!("{:.3}", now.as_secs_f64() + 3.0)
}

/// Runs `count` shards of `bench run <args>` side by side and returns their result files.
fn run_shards(dir: &Path, url: &str, count: u32, args: &[&str]) -> Vec<PathBuf> {
    let at = start_at();
    let children: Vec<(PathBuf, Child)> = (0..count)
        .map(|i| {
            let out = dir.join(format!("shard-{i}.json"));
            let child = common::bench_command()
                .args(["run", "--target", url, "--quiet", "--console", "none"])
                .args(["--save-records", "--start-at", &at])
                .arg("--shard")
                .arg(format!("{i}/{count}"))
                .arg("--output")
                .arg(&out)
                .args(args)
                .env("RUST_LOG", "warn")
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn shard");
            (out, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(out, child)| {
            let o = child.wait_with_output().expect("shard");
            assert!(o.status.success(), "shard: {}", text(&o.stderr));
            out
        })
        .collect()
}

/// `bench merge <files> -o dir/merged.json` (clocks of one machine: a generous skew bound,
/// since a loaded machine may start a process late); the merged run.
fn merge(dir: &Path, files: &[PathBuf]) -> Value {
    let merged = dir.join("merged.json");
    let mut args: Vec<String> = vec!["merge".into(), "--console".into(), "none".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--max-skew", "60", "-o"].map(String::from));
    args.push(merged.display().to_string());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = bench(&a);
    assert!(out.status.success(), "merge: {}", text(&out.stderr));
    read_json(&merged)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
}

/// A benchmark's records.
fn records(b: &Value) -> Vec<RequestRecord> {
    serde_json::from_value(b["records"].clone()).expect("records")
}

/// Intended send offsets from the benchmark's own start, sorted.
fn offsets(b: &Value) -> Vec<u64> {
    let t0 = b["timeline"]["start_ns"].as_u64().expect("start_ns");
    let mut v: Vec<u64> = records(b).iter().map(|r| r.scheduled - t0).collect();
    v.sort_unstable();
    v
}

/// The single-process run of `args` against `url` (its first benchmark).
fn single(dir: &Path, url: &str, args: &[&str]) -> Value {
    let out = dir.join("single.json");
    let mut a = vec!["run", "--target", url, "--quiet", "--console", "none"];
    a.extend(["--save-records", "--output", out.to_str().expect("utf8")]);
    a.extend(args);
    let o = bench(&a);
    assert!(o.status.success(), "single: {}", text(&o.stderr));
    read_json(&out)
}

/// Checks the merged e2el summary against one histogram of every shard's raw timings (of its
/// steady requests, which its latency figures take).
fn percentiles_match_raw(merged: &Value, shard_files: &[PathBuf]) {
    let mut raw = Dist::new();
    for f in shard_files {
        let b = &read_json(f)["benchmarks"][0];
        // The shard's latency figures take its steady requests (docs/metrics.md, "Steady
        // state"), when it had a steady state.
        let tl = &b["timeline"];
        let (from, to) = (
            tl["steady_start_ns"].as_u64().unwrap_or(0),
            tl["steady_end_ns"].as_u64().unwrap_or(u64::MAX),
        );
        for r in records(b) {
            if r.status() == bench_core::Status::Completed && r.dispatched >= from && r.end <= to {
                raw.record(r.end.saturating_sub(r.dispatched) as f64 / 1000.0);
            }
        }
    }
    let m = &merged["benchmarks"][0]["metrics"]["e2el_ms"];
    let ps: Vec<f64> = m["percentiles"]
        .as_object()
        .expect("percentiles")
        .keys()
        .map(|k| k[1..].parse().expect("pNN"))
        .collect();
    assert!(!ps.is_empty());
    let want = raw.summary(&ps);
    assert_eq!(m["count"].as_u64(), Some(want.count));
    for (k, v) in &want.percentiles {
        assert_eq!(m["percentiles"][k].as_f64(), Some(*v), "e2el {k}");
    }
    assert_eq!(m["median"].as_f64(), Some(want.median));
    assert_eq!(m["max"].as_f64(), Some(want.max));
    assert_eq!(m["min"].as_f64(), Some(want.min));
    let mean = m["mean"].as_f64().expect("mean");
    assert!(
        (mean - want.mean).abs() <= 1e-9 * want.mean,
        "{mean} vs {}",
        want.mean
    );
}

#[test]
fn constant_rate_shards_merge_to_the_single_process_run() {
    let dir = fresh("shards", "constant");
    let (_sim, url, log) = start_sim(&dir);
    let load = [
        "--rate-type",
        "constant",
        "--rate",
        "50",
        "--max-requests",
        "61",
        "--data",
        "prompt_tokens=16,output_tokens=4",
    ];
    let files = run_shards(&dir, &url, 3, &load);
    let merged = merge(&dir, &files);
    let served = read_log(&log).len() as u64;
    let b = &merged["benchmarks"][0];
    assert_eq!(served, 61, "the shards sent 61 requests between them");
    assert_eq!(b["requests"]["total"].as_u64(), Some(served));
    assert_eq!(b["requests"]["completed"].as_u64(), Some(served));
    assert_eq!(merged["merged"]["count"].as_u64(), Some(3));
    assert_eq!(b["rates"]["target_rate"].as_f64(), Some(50.0));
    // Each shard's share: 21, 20, 20 requests at a third of the rate.
    for (i, f) in files.iter().enumerate() {
        let s = read_json(f);
        assert_eq!(s["shard"]["index"].as_u64(), Some(i as u64));
        let sb = &s["benchmarks"][0];
        assert_eq!(sb["requests"]["total"].as_u64(), Some(21 - (i > 0) as u64));
        assert_eq!(sb["rates"]["target_rate"].as_f64(), Some(50.0 / 3.0));
    }
    // The union of the shards' intended send offsets is the single-process schedule.
    let union: Vec<u64> = {
        let mut v: Vec<u64> = files
            .iter()
            .flat_map(|f| offsets(&read_json(f)["benchmarks"][0]))
            .collect();
        v.sort_unstable();
        v
    };
    let whole = single(&dir, &url, &load);
    assert_eq!(union, offsets(&whole["benchmarks"][0]));
    percentiles_match_raw(&merged, &files);
    clocks_are_recorded(&merged, &files);
}

/// Every shard measured its clocks, and the merged run lists them: on one machine the
/// simulator's `Date` and the shards' wall clocks are one clock, so every shard's bounds on
/// its offset from the server hold 0 and no two shards are proven apart.
fn clocks_are_recorded(merged: &Value, files: &[PathBuf]) {
    for (i, f) in files.iter().enumerate() {
        let c = &read_json(f)["shard"]["clock"];
        assert!(c["wall_minus_run_start_ms"].is_f64(), "shard {i}: {c}");
        assert!(c["wall_minus_run_end_ms"].is_f64(), "shard {i}: {c}");
        let b = &c["server_offset_ms"];
        let (lo, hi) = (b[0].as_f64().expect("low"), b[1].as_f64().expect("high"));
        assert!(lo <= 0.0 && 0.0 <= hi, "shard {i}: [{lo}, {hi}]");
        assert!(hi - lo >= 1000.0, "whole seconds: at least 1 s wide");
        assert_eq!(&merged["merged"]["shards"][i]["clock"], c);
    }
    assert_eq!(merged["merged"]["min_clock_skew_ms"].as_f64(), Some(0.0));
}

#[test]
fn poisson_shards_split_the_seeded_schedule_and_a_rate_list_runs_on_every_shard() {
    let dir = fresh("shards", "poisson");
    let (_sim, url, log) = start_sim(&dir);
    let load = [
        "--rate-type",
        "poisson",
        "--rate",
        "40,80",
        "--seed",
        "11",
        "--max-requests",
        "30",
        "--data",
        "prompt_tokens=8,output_tokens=2",
    ];
    let files = run_shards(&dir, &url, 2, &load);
    let merged = merge(&dir, &files);
    let served = read_log(&log).len() as u64;
    assert_eq!(served, 60);
    let benches = merged["benchmarks"].as_array().expect("benchmarks");
    assert_eq!(benches.len(), 2, "the fixed plan ran on both shards");
    let total: u64 = benches
        .iter()
        .map(|b| b["requests"]["total"].as_u64().unwrap_or_default())
        .sum();
    assert_eq!(total, served);
    let whole = single(&dir, &url, &load);
    for k in 0..2 {
        let mut union: Vec<u64> = files
            .iter()
            .flat_map(|f| offsets(&read_json(f)["benchmarks"][k]))
            .collect();
        union.sort_unstable();
        assert_eq!(union, offsets(&whole["benchmarks"][k]), "benchmark {k}");
    }
}

#[test]
fn concurrent_streams_split_with_the_remainder() {
    let dir = fresh("shards", "concurrent");
    let (_sim, url, log) = start_sim(&dir);
    let load = [
        "--rate-type",
        "concurrent",
        "--rate",
        "5",
        "--max-requests",
        "40",
        "--data",
        "prompt_tokens=8,output_tokens=2",
    ];
    let files = run_shards(&dir, &url, 2, &load);
    let merged = merge(&dir, &files);
    assert_eq!(read_log(&log).len(), 40);
    assert_eq!(
        merged["benchmarks"][0]["requests"]["total"].as_u64(),
        Some(40)
    );
    for (f, streams) in files.iter().zip([3, 2]) {
        let b = &read_json(f)["benchmarks"][0];
        let peak = b["rates"]["peak_concurrency"].as_u64().expect("peak");
        assert!(
            peak <= streams,
            "shard of {streams} streams had {peak} in flight"
        );
    }
    // Fewer streams than shards: refused before anything runs.
    let o = bench(&[
        "run",
        "--target",
        &url,
        "--rate-type",
        "concurrent",
        "--rate",
        "1",
        "--max-requests",
        "4",
        "--shard",
        "1/2",
        "--start-at",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("cannot be split over 2 shards"));
}

/// Bursts and the throughput probe across shards: a burst's requests are split (the union is
/// the single burst, every request sent at the start), throughput's concurrency cap is split
/// like concurrent streams; the merged counts are the simulator's. Synchronous (one request
/// at a time) cannot be split and is refused before anything runs.
#[test]
fn burst_and_throughput_shards_merge_and_synchronous_is_refused() {
    let dir = fresh("shards", "shapes");
    let (_sim, url, log) = start_sim(&dir);
    let data = ["--data", "prompt_tokens=8,output_tokens=2"];
    let mut seen = 0;
    for (shape, rate, requests) in [("burst", "9", None), ("throughput", "", Some("30"))] {
        let mut load = vec!["--rate-type", shape];
        if !rate.is_empty() {
            load.extend(["--rate", rate]);
        }
        if let Some(n) = requests {
            load.extend(["--max-requests", n, "--max-concurrency", "6"]);
        }
        load.extend(data);
        let sub = dir.join(shape);
        std::fs::create_dir_all(&sub).expect("mkdir");
        let files = run_shards(&sub, &url, 3, &load);
        let merged = merge(&sub, &files);
        let want: u64 = requests.unwrap_or(rate).parse().expect("count");
        let b = &merged["benchmarks"][0];
        assert_eq!(b["requests"]["total"].as_u64(), Some(want), "{shape}");
        assert_eq!(b["requests"]["completed"].as_u64(), Some(want), "{shape}");
        seen += want as usize;
        assert_eq!(read_log(&log).len(), seen, "{shape}: the simulator's log");
        if shape == "burst" {
            // Every shard's share went at its start: the single burst, split.
            let shares: Vec<u64> = files
                .iter()
                .map(|f| {
                    read_json(f)["benchmarks"][0]["requests"]["total"]
                        .as_u64()
                        .expect("n")
                })
                .collect();
            assert_eq!(shares, [3, 3, 3], "{shape}");
        }
    }
    let o = bench(&[
        "run",
        "--target",
        &url,
        "--rate-type",
        "synchronous",
        "--max-requests",
        "4",
        "--shard",
        "1/3",
        "--start-at",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("cannot be split over 3 shards"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert_eq!(read_log(&log).len(), seen, "nothing was sent");
}

/// Runs `bench merge` on `files`; asserts exit code 2 with one line containing `want`.
fn refused(files: &[&Path], want: &str) {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = bench(&a);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{want}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(want), "want `{want}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Writes `v` to `dir/name`.
fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).expect("json")).expect("write");
    p
}

#[test]
fn mismatched_shards_are_refused_with_one_line() {
    let dir = fresh("shards", "refused");
    let (_sim, url, _log) = start_sim(&dir);
    let load = [
        "--rate-type",
        "constant",
        "--rate",
        "40",
        "--max-requests",
        "8",
        "--data",
        "prompt_tokens=8,output_tokens=2",
    ];
    let files = run_shards(&dir, &url, 2, &load);
    let (a, b) = (files[0].as_path(), files[1].as_path());
    refused(&[a], "shard 1 is missing");
    refused(&[a, a], "shard 0 is given twice");
    let mut other = read_json(b);
    other["config"]["max_requests"] = serde_json::json!(9);
    let c = write(&dir, "other-settings.json", &other);
    refused(&[a, &c], "setting `max_requests` differs");
    let mut late = read_json(b);
    late["benchmarks"][0]["timeline"]["start_ns"] = serde_json::json!(5_000_000_000u64);
    let c = write(&dir, "late.json", &late);
    refused(&[a, &c], "more than --max-skew");
    // A shard whose clock is 5 s ahead of the target's (by its Date header): refused.
    let mut ahead = read_json(b);
    ahead["shard"]["clock"]["server_offset_ms"] = serde_json::json!([5000.0, 6100.0]);
    let c = write(&dir, "ahead.json", &ahead);
    refused(&[a, &c], "their clocks differ by at least");
    let mut three = read_json(b);
    three["shard"]["count"] = serde_json::json!(3);
    let c = write(&dir, "three.json", &three);
    refused(&[a, &c], "does not belong with");
    let mut plain = read_json(b);
    plain.as_object_mut().expect("object").remove("shard");
    let c = write(&dir, "plain.json", &plain);
    refused(&[a, &c], "not a shard result");
    let c = dir.join("broken.json");
    std::fs::write(&c, "{").expect("write");
    refused(&[a, &c], "broken.json");
    // The console ends with the shards and their clocks.
    let o = bench(&[
        "merge",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("Shards: 2 merged"), "{out}");
    assert!(out.contains("wall - target clock in ["), "{out}");
    // `bench report` on the shards of one run merges them too.
    let o = bench(&[
        "report",
        "--console",
        "none",
        a.to_str().expect("utf8"),
        b.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn trace_replay_shards_split_its_rows() {
    let dir = fresh("shards", "trace");
    let (_sim, url, log) = start_sim(&dir);
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces/plain.jsonl");
    let data = format!("trace={}", trace.display());
    let rows = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .count() as u64;
    let load = ["--speedup", "8", "--data", &data];
    let files = run_shards(&dir, &url, 3, &load);
    let merged = merge(&dir, &files);
    assert_eq!(read_log(&log).len() as u64, rows);
    assert_eq!(
        merged["benchmarks"][0]["requests"]["total"].as_u64(),
        Some(rows)
    );
    let mut union: Vec<u64> = files
        .iter()
        .flat_map(|f| offsets(&read_json(f)["benchmarks"][0]))
        .collect();
    union.sort_unstable();
    let whole = single(&dir, &url, &load);
    assert_eq!(union, offsets(&whole["benchmarks"][0]));
    percentiles_match_raw(&merged, &files);
}

/// The turn (from 1) of a logged prompt of `turns=3,prompt_tokens=40,output_tokens=4` over
/// chat: turn k sends k user messages of 40 tokens and k - 1 replies of 4.
fn turn_of_prompt(prompt: u64) -> u64 {
    (1..=3)
        .find(|k| k * 40 + (k - 1) * 4 == prompt)
        .unwrap_or_else(|| panic!("prompt {prompt} is no turn's"))
}

/// A summary of `values` (microseconds) at the merged summary's percentiles must equal the
/// merged summary `m` (count, min, max, median and percentiles exactly; mean to rounding).
fn summary_matches(m: &Value, values: &[f64], what: &str) {
    let mut raw = Dist::new();
    for v in values {
        raw.record(*v);
    }
    let ps: Vec<f64> = m["percentiles"]
        .as_object()
        .map(|o| o.keys().map(|k| k[1..].parse().expect("pNN")).collect())
        .unwrap_or_default();
    let want = raw.summary(&ps);
    assert_eq!(m["count"].as_u64(), Some(want.count), "{what} count");
    for (k, v) in &want.percentiles {
        assert_eq!(m["percentiles"][k].as_f64(), Some(*v), "{what} {k}");
    }
    for k in ["median", "min", "max"] {
        let got = m[k].as_f64().expect(k);
        let w = match k {
            "median" => want.median,
            "min" => want.min,
            _ => want.max,
        };
        assert_eq!(got, w, "{what} {k}");
    }
    let mean = m["mean"].as_f64().expect("mean");
    assert!(
        (mean - want.mean).abs() <= 1e-9 * want.mean.max(1.0),
        "{what} mean"
    );
}

#[test]
fn session_shards_split_whole_sessions_and_merge_their_figures() {
    let dir = fresh("shards", "sessions");
    let (_sim, url, log) = start_sim(&dir);
    let load = [
        "--backend",
        "openai-chat",
        "--rate-type",
        "constant",
        "--rate",
        "20",
        "--max-requests",
        "30",
        "--data",
        "turns=3,prompt_tokens=40,output_tokens=4",
    ];
    let files = run_shards(&dir, &url, 3, &load);
    let merged = merge(&dir, &files);
    let log = read_log(&log);
    let b = &merged["benchmarks"][0];
    let s = &b["sessions"];
    assert_eq!(log.len(), 30, "the shards sent 30 turns between them");
    assert_eq!(b["requests"]["total"].as_u64(), Some(30));
    // The counts against the simulator's log: every started session sent its turn 1 once,
    // every completed one completed its turn 3.
    let logged = |k: u64, ok: bool| {
        log.iter()
            .filter(|e| turn_of_prompt(e["prompt_tokens"].as_u64().expect("prompt")) == k)
            .filter(|e| !ok || (e["status"] == 200 && e["end"] == "completed"))
            .count() as u64
    };
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert_eq!(n(s, "started"), logged(1, false), "{s}");
    assert_eq!(n(s, "completed"), logged(3, true), "{s}");
    assert_eq!(
        n(s, "started"),
        n(s, "completed") + n(s, "cut") + n(s, "errored")
    );
    let shard_sum: u64 = files
        .iter()
        .map(|f| n(&read_json(f)["benchmarks"][0]["sessions"], "started"))
        .sum();
    assert_eq!(n(s, "started"), shard_sum);
    // Each session wholly on one shard, numbered as in one run: no number on two shards,
    // every turn of a session on its session's shard, and every started session once.
    let mut owner: std::collections::BTreeMap<u64, usize> = Default::default();
    let mut all: Vec<RequestRecord> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        for r in records(&read_json(f)["benchmarks"][0]) {
            let t = r.session.expect("a session turn");
            assert_eq!(
                t.session % 3,
                i as u64,
                "session {} on shard {i}",
                t.session
            );
            assert_eq!(*owner.entry(t.session).or_insert(i), i);
            all.push(r);
        }
    }
    assert_eq!(owner.len() as u64, n(s, "started"));
    // The merged figures are those of the union of every shard's requests and sessions.
    let durations: Vec<f64> = all
        .iter()
        .filter_map(|r| {
            let t = r.session?;
            (t.turn == t.turns && r.status() == bench_core::Status::Completed)
                .then(|| r.end.saturating_sub(t.start) as f64 / 1000.0)
        })
        .collect();
    assert_eq!(durations.len() as u64, n(s, "completed"));
    summary_matches(&s["duration_ms"], &durations, "session duration");
    // One row per turn some session reached: which turns those are depends on how soon turn 1
    // ended (a starved machine may end the run before any session's turn 3), the log says.
    let rows = s["turns"].as_array().expect("turn rows");
    let reached = (1..=3).filter(|&k| logged(k, false) > 0).count();
    assert!(reached >= 1);
    assert_eq!(rows.len(), reached, "{s}");
    for (row, k) in rows.iter().zip(1u64..) {
        let mine: Vec<&RequestRecord> = all
            .iter()
            .filter(|r| r.session.is_some_and(|t| u64::from(t.turn) == k))
            .collect();
        assert_eq!(n(&row["requests"], "total"), logged(k, false), "turn {k}");
        let done: Vec<&&RequestRecord> = mine
            .iter()
            .filter(|r| r.status() == bench_core::Status::Completed)
            .collect();
        let e2el: Vec<f64> = done
            .iter()
            .map(|r| r.end.saturating_sub(r.dispatched) as f64 / 1000.0)
            .collect();
        summary_matches(&row["e2el_ms"], &e2el, &format!("turn {k} e2el"));
        let prompts: u64 = done.iter().map(|r| u64::from(r.prompt_tokens)).sum();
        assert_eq!(n(&row["prompt_tokens"], "total"), prompts, "turn {k}");
        assert_eq!(n(&row["prompt_tokens"], "count"), done.len() as u64);
    }
}
