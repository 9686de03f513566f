//! One load spread across several targets (`--target A,B --balance NAME`; docs/cli.md): two
//! `bench mock-server` processes on loopback, each logging its requests. The logs are the
//! truth: round-robin splits the requests exactly, the report's per-target counts equal each
//! log, least-outstanding keeps a slow target's share small, bad lists are usage errors, and a
//! URL's password is never echoed. No timing figure is compared.

use crate::common;

use std::path::{Path, PathBuf};

use common::{bench, fresh, mock_server, read_log, text, write_sim, Killed};
use serde_json::Value;

/// A simulator in its own process, configured by `yaml`, logging to `dir/<name>/log.jsonl`.
struct Sim {
    _server: Killed,
    url: String,
    log: PathBuf,
}

fn start_sim(dir: &Path, name: &str, yaml: &str) -> Sim {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).expect("sim dir");
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, yaml, Some(&log));
    let (server, url) = mock_server(&["--port", "0", "--config", cfg.to_str().expect("utf8")]);
    Sim {
        _server: server,
        url,
        log,
    }
}

/// The generation requests of a simulator's log (probes of its model list are not logged as
/// such, but only completions count here).
fn completions(sim: &Sim) -> Vec<Value> {
    read_log(&sim.log)
        .into_iter()
        .filter(|e| e["endpoint"] == "/v1/completions")
        .collect()
}

/// `bench run --target <targets> <args> --output <dir>/run.json`, asserted to succeed: its
/// report and its stdout.
fn run(dir: &Path, targets: &str, args: &[&str]) -> (Value, String) {
    let json = dir.join("run.json");
    let out = bench(
        &[
            &["run", "--target", targets, "-q"][..],
            args,
            &["--output", json.to_str().expect("utf8")],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = std::fs::read_to_string(&json).expect("report");
    (
        serde_json::from_str(&report).expect("json"),
        text(&out.stdout),
    )
}

const DATA: &str = "prompt_tokens=16,output_tokens=4";

#[test]
fn round_robin_splits_the_requests_evenly_and_the_report_counts_what_each_log_shows() {
    let dir = fresh("targets", "round-robin");
    let a = start_sim(&dir, "a", "step_base_ms: 1\n");
    let b = start_sim(&dir, "b", "step_base_ms: 1\n");
    let targets = format!("{},{}", a.url, b.url);
    let args = [
        "--rate-type",
        "constant",
        "--rate",
        "40",
        "--max-requests",
        "40",
        "--data",
        DATA,
        "--console",
        "vllm",
    ];
    let (report, stdout) = run(&dir, &targets, &args);
    let bench0 = &report["benchmarks"][0];
    let counts = bench0["targets"].as_array().expect("per-target counts");
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert_eq!(report["config"]["balance"], "round-robin");
    for (sim, c) in [&a, &b].into_iter().zip(counts) {
        let log = completions(sim);
        assert_eq!(log.len(), 20, "{}: {c}", sim.url);
        let ok = log.iter().filter(|e| e["status"] == 200).count() as u64;
        let tokens: u64 = log
            .iter()
            .map(|e| e["output_tokens"].as_u64().expect("tokens"))
            .sum();
        assert_eq!(c["requests"].as_u64(), Some(log.len() as u64), "{c}");
        assert_eq!(c["completed"].as_u64(), Some(ok), "{c}");
        assert_eq!(c["errored"].as_u64(), Some(log.len() as u64 - ok), "{c}");
        assert_eq!(c["output_tokens"].as_u64(), Some(tokens), "{c}");
        let url = c["url"].as_str().expect("url");
        assert!(url.starts_with(&sim.url), "{url} is not {}", sim.url);
        assert!(
            stdout.contains(&format!("{url} 20 sent, {ok} completed")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("targets constant@40.00: "), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn least_outstanding_sends_most_requests_to_the_fast_target() {
    let dir = fresh("targets", "least-outstanding");
    // The slow one first: it wins every tie, so only its requests in flight keep it out.
    let slow = start_sim(&dir, "slow", "step_base_ms: 400\n");
    let fast = start_sim(&dir, "fast", "step_base_ms: 1\n");
    let targets = format!("{},{}", slow.url, fast.url);
    let args = [
        "--balance",
        "least-outstanding",
        "--rate-type",
        "concurrent",
        "--rate",
        "2",
        "--max-requests",
        "30",
        "--data",
        DATA,
        "--console",
        "none",
    ];
    let (report, _) = run(&dir, &targets, &args);
    let (to_slow, to_fast) = (completions(&slow).len(), completions(&fast).len());
    assert_eq!(to_slow + to_fast, 30);
    // Round-robin would send 15 to each. Each slow request (4 steps of 400 ms) is in flight
    // while the other stream's requests go to the fast target, one after another.
    assert!(
        to_slow <= 6 && to_fast >= 24,
        "slow {to_slow}, fast {to_fast}"
    );
    let counts = &report["benchmarks"][0]["targets"];
    assert_eq!(counts[0]["requests"].as_u64(), Some(to_slow as u64));
    assert_eq!(counts[1]["requests"].as_u64(), Some(to_fast as u64));
    assert_eq!(report["config"]["balance"], "least-outstanding");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_target_reports_no_split_and_no_balance() {
    let dir = fresh("targets", "one");
    let a = start_sim(&dir, "a", "step_base_ms: 1\n");
    let args = [
        "--balance",
        "least-outstanding",
        "--rate-type",
        "synchronous",
        "--max-requests",
        "3",
        "--data",
        DATA,
        "--console",
        "vllm",
    ];
    let (report, stdout) = run(&dir, &a.url, &args);
    assert!(report["benchmarks"][0].get("targets").is_none(), "{report}");
    assert!(report["config"].get("balance").is_none());
    assert_eq!(report["config"]["target"], a.url.as_str());
    assert!(!stdout.contains("targets "), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `bench run <args>` that must fail with a usage error: exit 2 and one line on stderr
/// naming `culprit`, nothing on stdout; that line.
fn refused(args: &[&str], culprit: &str) -> String {
    let out = bench(args);
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(culprit), "{args:?}: {err}");
    assert!(text(&out.stdout).is_empty(), "{args:?}");
    lines[0].to_string()
}

#[test]
fn bad_lists_and_balances_are_one_line_usage_errors() {
    let dir = fresh("targets", "bad");
    let tail = [
        "--rate-type",
        "constant",
        "--rate",
        "1",
        "--max-seconds",
        "1",
    ];
    let with = |target: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "--target", target].map(String::from).to_vec();
        v.extend(extra.iter().chain(&tail).map(|s| s.to_string()));
        v
    };
    let ok = "http://127.0.0.1:9";
    for (target, extra, culprit) in [
        (format!("{ok},,{ok}"), &[][..], "URL 2 of the list is empty"),
        (format!("{ok},"), &[][..], "URL 2 of the list is empty"),
        (
            format!("{ok},ftp://127.0.0.1:9"),
            &[][..],
            "ftp://127.0.0.1:9",
        ),
        (format!("{ok},127.0.0.1:8"), &[][..], "127.0.0.1:8"),
        (format!("{ok},http://127.0.0.1:99999"), &[][..], "99999"),
        (
            format!("{ok},http://127.0.0.1:8"),
            &["--balance", "fastest"][..],
            "--balance: unknown balance `fastest`",
        ),
    ] {
        let args = with(&target, extra);
        refused(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            culprit,
        );
    }
    refused(
        &[&["run", "--mock", "--target", ok][..], &tail].concat(),
        "--mock",
    );
    // The same rules for a profile's keys, named as written there.
    let profile = dir.join("p.yaml");
    std::fs::write(&profile, format!("target: [{ok}, \"\"]\n")).expect("profile");
    let p = profile.to_str().expect("utf8");
    refused(
        &[&["run", "--profile", p][..], &tail].concat(),
        "target: URL 2",
    );
    std::fs::write(&profile, format!("target: [{ok}, {ok}]\nbalance: nope\n")).expect("profile");
    refused(
        &[&["run", "--profile", p][..], &tail].concat(),
        "balance: unknown",
    );
    std::fs::write(&profile, "target: {a: 1}\n").expect("profile");
    refused(&[&["run", "--profile", p][..], &tail].concat(), "target:");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_password_in_any_target_url_is_never_echoed_nor_saved() {
    const PASSWORD: &str = "hunter2-in-a-url";
    let dir = fresh("targets", "password");
    let a = start_sim(&dir, "a", "step_base_ms: 1\n");
    let json = dir.join("run.json");
    let secret = format!("http://user:{PASSWORD}@127.0.0.1:9");
    let list = format!("{},{secret}", a.url);
    let json_arg = json.to_str().expect("utf8");
    for extra in [&[][..], &["--show-config"][..]] {
        let args = [
            &["run", "--target", &list, "--rate-type", "synchronous"][..],
            &["--max-requests", "2", "--output", json_arg],
            extra,
        ]
        .concat();
        let line = refused(&args, "credentials in the URL are not supported");
        assert!(
            !line.contains(PASSWORD) && line.contains("***@127.0.0.1:9"),
            "{line}"
        );
        // Refused before the run: no report, so nothing of the URL in a file.
        assert!(!json.exists(), "a report was written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
