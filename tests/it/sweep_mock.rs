//! End to end: the real `bench` binary against its in-process simulator (`--mock`).

use crate::common;

use std::path::PathBuf;

use common::{bench, text};

fn tmp(name: &str) -> PathBuf {
    common::tmp("e2e", name)
}

#[test]
fn sweep_mock_runs_every_benchmark_and_writes_the_report() {
    let _one = common::serial();
    let dir = tmp("sweep");
    let json = dir.join("run.json");
    let csv = dir.join("run.csv");
    let out = bench(&[
        "sweep",
        "--mock",
        "--max-seconds",
        "1",
        "--sweep-size",
        "4",
        "--sweep-mode",
        "guidellm",
        "--max-concurrency",
        "32",
        "--data",
        "prompt_tokens=32,output_tokens=8",
        "--console",
        "both",
        "--output",
        json.to_str().expect("utf8"),
        "--output",
        csv.to_str().expect("utf8"),
    ]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    // Both consoles, every row.
    for want in [
        "Benchmarks Stats",
        "Serving Benchmark Result",
        "synchronous",
        "throughput",
        "constant@",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
    // Plain progress lines on a non-terminal stderr.
    assert!(stderr.contains("[1/4] synchronous"), "{stderr}");

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    // The 4 planned benchmarks, each maybe followed by runs of the same rate twice and four
    // times as long: a rate whose verdict was unsure runs again (docs/profiles.md, "Rung
    // length"), which on a loaded machine a 1 s rung may be (a CI run: 5 benchmarks).
    let all = run["benchmarks"].as_array().expect("benchmarks");
    let mut b: Vec<&serde_json::Value> = Vec::new();
    for x in all {
        if b.last().is_none_or(|p| p["label"] != x["label"]) {
            b.push(x);
        }
    }
    assert_eq!(
        b.len(),
        4,
        "{:?}",
        all.iter().map(|x| &x["label"]).collect::<Vec<_>>()
    );
    let labels: Vec<&str> = b.iter().filter_map(|x| x["label"].as_str()).collect();
    assert_eq!(&labels[..2], ["synchronous", "throughput"]);
    let rps = |i: usize| b[i]["rates"]["requests_per_s"].as_f64().expect("rps");
    let (r_sync, r_thr) = (rps(0), rps(1));
    // (No ordering asserted: on a loaded CI machine throughput may not beat synchronous.)
    assert!(r_sync > 0.0 && r_thr > 0.0, "sync {r_sync} thr {r_thr}");
    // The rates follow linspace(r_sync, r_thr, 3)[1:] of the reported probe rates.
    for (i, want) in [(2usize, r_sync + (r_thr - r_sync) / 2.0), (3, r_thr)] {
        let rate = b[i]["strategy"]["rate"].as_f64().expect("rate");
        assert!(
            (rate - want).abs() <= 1e-9 * want.max(1.0),
            "{rate} vs {want}"
        );
        assert_eq!(labels[i], format!("constant@{want:.2}"));
    }
    // guidellm's recipe states a capacity too: the better of its two probes, by name.
    let cap = &run["capacity"];
    assert_eq!(cap["max_requests_per_s"].as_f64(), Some(r_sync.max(r_thr)));
    let by = if r_thr >= r_sync {
        "throughput"
    } else {
        "synchronous"
    };
    assert_eq!(cap["max_measured_by"].as_str(), Some(by), "{cap}");
    assert!(stdout.contains("Capacity:"), "{stdout}");
    for x in all {
        let completed = x["requests"]["completed"].as_u64().expect("completed");
        assert!(completed > 0, "{x}");
        assert_eq!(x["requests"]["errored"].as_u64(), Some(0));
        // Every completed request generated what it asked for, and the prompt had its length.
        assert_eq!(
            x["tokens"]["output"]["completed"]["per_request"].as_f64(),
            Some(8.0)
        );
        assert_eq!(
            x["tokens"]["prompt"]["completed"]["per_request"].as_f64(),
            Some(32.0)
        );
    }
    assert!(std::fs::read_to_string(&csv).expect("csv").lines().count() >= 5);
}

#[test]
fn run_mock_each_kind_completes() {
    let _one = common::serial();
    for args in [
        &["run", "--rate-type", "burst", "--rate", "1,4"][..],
        &[
            "run",
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "6",
        ][..],
        &[
            "run",
            "--rate-type",
            "poisson",
            "--rate",
            "20",
            "--max-seconds",
            "1",
            "--burstiness",
            "0.5",
        ][..],
        &[
            "run",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "3",
            "--warmup",
            "1req",
        ][..],
    ] {
        let mut all = args.to_vec();
        all.extend([
            "--mock",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--quiet",
            "--console",
            "vllm",
        ]);
        let out = bench(&all);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {:?}\n{stdout}\n{}",
            out.status,
            text(&out.stderr)
        );
        assert!(
            stdout.contains("Serving Benchmark Result"),
            "{args:?}\n{stdout}"
        );
        let err = text(&out.stderr);
        assert!(!err.contains("[1/"), "--quiet shows no progress: {err}");
    }
}

#[test]
fn usage_errors_exit_2_naming_the_culprit() {
    let _one = common::serial();
    let out = bench(&["run", "--mock", "--rate-type", "warp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("warp"));

    let dir = tmp("usage");
    let p = dir.join("typo.yaml");
    std::fs::write(&p, "rate_type: constant\nrate: 2\nmax_secnds: 3\n").expect("write");
    let out = bench(&["run", "--mock", "--profile", p.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("typo.yaml") && err.contains("max_secnds"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");

    let out = bench(&["sweep"]);
    assert_eq!(out.status.code(), Some(2), "no target");

    for (args, culprit) in [
        (
            &["sweep", "--mock", "--slo", "ttft_p100=5"][..],
            "ttft_p100",
        ),
        (&["sweep", "--mock", "--slo", "ttfx_p99=5"][..], "ttfx_p99"),
        (&["sweep", "--mock", "--slo", "itl_p50"][..], "itl_p50"),
        (&["sweep", "--mock", "--sweep-mode", "fast"][..], "fast"),
        (
            &[
                "sweep",
                "--mock",
                "--slo",
                "ttft_p99=5",
                "--slo-tolerance",
                "2",
            ][..],
            "slo-tolerance",
        ),
        (
            &[
                "run",
                "--mock",
                "--rate-type",
                "constant",
                "--rate",
                "1",
                "--slo",
                "ttft_p99=5",
            ][..],
            "slo",
        ),
    ] {
        let out = bench(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(culprit), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    let dir = tmp("slo-profile");
    let p = dir.join("slo.yaml");
    std::fs::write(&p, "rate_type: sweep\nslo: \"ttft_p99=500,itl_p50=50\"\n").expect("write");
    let out = bench(&[
        "run",
        "--mock",
        "--profile",
        p.to_str().expect("utf8"),
        "--show-config",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("ttft_p99=500,itl_median=50"), "{shown}");
}

#[test]
fn show_config_prints_the_resolved_settings() {
    let _one = common::serial();
    let dir = tmp("show");
    let p = dir.join("p.yaml");
    std::fs::write(&p, "rate_type: constant\nrate: [2, 3]\nmax_seconds: 9\n").expect("write");
    let out = bench(&[
        "run",
        "--mock",
        "--profile",
        p.to_str().expect("utf8"),
        "--max-seconds",
        "4",
        "--show-config",
    ]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    let v: serde_json::Value = serde_yaml::from_str(&s).expect("yaml");
    assert_eq!(
        v["max_seconds"].as_f64(),
        Some(4.0),
        "CLI overrides the file\n{s}"
    );
    assert_eq!(v["rate"], serde_json::json!([2.0, 3.0]));
    // What --show-config prints is a profile that loads again, to the same settings; the
    // sweep's own --show-config too (it failed with "unknown field `profile`" before).
    for first in [s.clone(), {
        let out = bench(&[
            "sweep",
            "--mock",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--header",
            "X-K: secret-v",
            "--show-config",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    }] {
        assert!(
            !first.contains("secret-v"),
            "header values are never printed: {first}"
        );
        let cfg = dir.join("cfg.yaml");
        std::fs::write(&cfg, &first).expect("write");
        let kind = if first.contains("rate_type: sweep") {
            "sweep"
        } else {
            "run"
        };
        let again = bench(&[
            kind,
            "--profile",
            cfg.to_str().expect("utf8"),
            "--show-config",
        ]);
        assert!(again.status.success(), "{}\n{first}", text(&again.stderr));
        assert_eq!(text(&again.stdout), first, "round trip");
    }
}

#[test]
fn save_records_puts_every_request_in_the_json_and_only_when_asked() {
    let _one = common::serial();
    for (flag, want) in [
        (Some("--save-records"), true),
        (Some("--save-detailed"), true),
        (None, false),
    ] {
        let json = tmp("records").join(format!("{}.json", flag.unwrap_or("none")));
        let mut args = vec![
            "run",
            "--mock",
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "6",
            "--data",
            "prompt_tokens=8,output_tokens=4",
            "--console",
            "none",
            "--quiet",
            "--output",
            json.to_str().expect("utf8"),
        ];
        args.extend(flag);
        let out = bench(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
        let b = &run["benchmarks"][0];
        let records = b["records"].as_array();
        if !want {
            assert!(
                records.is_none_or(Vec::is_empty),
                "records without --save-records"
            );
            continue;
        }
        let records = records.expect("records");
        assert_eq!(records.len(), 6);
        let mut ids: Vec<u64> = records
            .iter()
            .map(|r| r["id"].as_u64().expect("id"))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..6).collect::<Vec<_>>());
        for r in records {
            assert_eq!(r["chunks"].as_array().map(Vec::len), Some(4), "{r}");
            assert!(r["dispatched"].as_u64() >= r["slot"].as_u64());
        }
    }
}

/// The simulator says its batch as vLLM does (`max_num_seqs` in `/metrics`), the report states
/// what it said (JSON and the Metadata block), and the ladder climbs to twice it: here its
/// `max_batch` of 8, the ground truth, behind two replicas (16 at once), so up to `@32`.
#[test]
fn the_ladder_runs_the_batch_the_simulator_says() {
    let _one = common::serial();
    let dir = tmp("batch");
    let (json, cfg) = (dir.join("run.json"), dir.join("mock.yaml"));
    std::fs::write(&cfg, "max_batch: 8\nreplicas: 2\n").expect("config");
    let out = bench(&[
        "sweep",
        "--mock",
        "--mock-config",
        cfg.to_str().expect("utf8"),
        "--max-seconds",
        "1",
        "--sweep-size",
        "3",
        "--data",
        "prompt_tokens=32,output_tokens=8",
        "--output",
        json.to_str().expect("utf8"),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    assert_eq!(
        run["environment"]["server_batch"],
        serde_json::json!({"size": 16, "source": "vllm_max_num_seqs"})
    );
    assert!(
        stdout.contains("Server batch:16 (vLLM max_num_seqs, /metrics)"),
        "{stdout}"
    );
    let labels: Vec<&str> = run["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .filter_map(|b| b["label"].as_str())
        .collect();
    assert_eq!(
        &labels[..6],
        [
            "synchronous",
            "concurrent@2",
            "concurrent@4",
            "concurrent@8",
            "concurrent@16",
            "concurrent@32"
        ],
        "{labels:?}"
    );
    assert!(labels[6].starts_with("constant@"), "{labels:?}");
}
