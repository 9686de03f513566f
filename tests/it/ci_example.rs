//! examples/ci/github-actions.yml, parsed (serde_yaml) and played as GitHub would play it, with
//! its bench commands run against the simulator: a push to main sweeps and keeps the baseline
//! as an artifact; a pull request sweeps again, fetches that baseline and gates on it (passes);
//! a pull request whose server is slower fails at the gate with exit 3, and the summary step
//! still writes the Markdown summary.
//!
//! Every `run:` script runs under bash as GitHub runs it (`bash -eo pipefail`), in one
//! workspace directory, with the workflow's and the step's `env`. What only GitHub has is
//! played by stand-ins on the PATH: `pip` (checks that the package it is asked for is this
//! crate's name and version, and installs nothing: the test's `bench` is already on the PATH)
//! and `gh` (lists one run and downloads the artifact the push kept). `uses:` steps other than
//! `actions/upload-artifact` (which copies its path into the artifact store) do nothing here.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_yaml::Value;

fn workflow() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/github-actions.yml");
    serde_yaml::from_str(&std::fs::read_to_string(path).expect("read the workflow"))
        .expect("the workflow is YAML")
}

fn env_of(v: &Value) -> BTreeMap<String, String> {
    v.get("env")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let k = k.as_str().expect("env name").to_string();
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => serde_yaml::to_string(other).expect("env value"),
                    };
                    (k, v.trim().to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a step runs on `event` after the job has `failed` or not: the conditions the
/// example uses, and nothing else (an unknown condition fails the test).
fn runs_on(step: &Value, event: &str, failed: bool) -> bool {
    let Some(cond) = step.get("if").and_then(Value::as_str) else {
        return !failed;
    };
    let always = cond.contains("always()");
    let on = cond
        .split("github.event_name == '")
        .nth(1)
        .and_then(|r| r.split('\'').next())
        .unwrap_or_else(|| panic!("a condition the test does not know: {cond}"));
    on == event && (always || !failed)
}

/// The stand-ins for `pip` and `gh` in `bin`, with the artifact store at `store`.
fn stand_ins(bin: &Path, store: &Path) {
    std::fs::create_dir_all(bin).expect("bin");
    let want = format!("inference-bench=={}", env!("CARGO_PKG_VERSION"));
    let pip = format!(
        "#!/bin/sh\n[ \"$1\" = install ] && [ \"$2\" = '{want}' ] || {{ echo \"pip stand-in: wanted install {want}, got $*\" >&2; exit 9; }}\n"
    );
    let gh = format!(
        "#!/bin/sh\ncase \"$1 $2\" in\n\"run list\") echo 1 ;;\n\"run download\") shift 3; while [ $# -gt 0 ]; do case \"$1\" in --name) n=$2; shift 2;; --dir) d=$2; shift 2;; *) shift;; esac; done; mkdir -p \"$d\" && cp \"{}\"/\"$n\"/* \"$d\"/ ;;\n*) echo \"gh stand-in: $*\" >&2; exit 9 ;;\nesac\n",
        store.display()
    );
    for (name, text) in [("pip", pip), ("gh", gh)] {
        let p = bin.join(name);
        std::fs::write(&p, text).expect("stand-in");
        let _ = Command::new("chmod").arg("+x").arg(&p).status();
    }
}

struct Play {
    /// Each step that ran: its name and exit code.
    steps: Vec<(String, i32)>,
    stderr: String,
}

/// Plays the job on `event` in `work`, with `env` over the workflow's.
fn play(event: &str, work: &Path, bin: &Path, store: &Path, over: &[(&str, &str)]) -> Play {
    let wf = workflow();
    let mut env = env_of(&wf);
    for (k, v) in over {
        env.insert((*k).into(), (*v).into());
    }
    let steps = wf["jobs"]["bench"]["steps"].as_sequence().expect("steps");
    let bench_dir = Path::new(env!("CARGO_BIN_EXE_bench"))
        .parent()
        .expect("dir");
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        bench_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut play = Play {
        steps: Vec::new(),
        stderr: String::new(),
    };
    let mut failed = false;
    for (i, step) in steps.iter().enumerate() {
        let name = step["name"]
            .as_str()
            .map_or(format!("step {i}"), String::from);
        if !runs_on(step, event, failed) {
            continue;
        }
        if let Some(uses) = step.get("uses").and_then(Value::as_str) {
            if uses.starts_with("actions/upload-artifact@") {
                let art = store.join(step["with"]["name"].as_str().expect("artifact name"));
                std::fs::create_dir_all(&art).expect("store");
                let file = step["with"]["path"].as_str().expect("artifact path");
                std::fs::copy(work.join(file), art.join(file)).expect("keep the artifact");
                play.steps.push((name, 0));
            }
            continue;
        }
        let script = step["run"].as_str().expect("a step runs or uses");
        let out = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(work)
            .envs(&env)
            .envs(env_of(step))
            .env("PATH", &path)
            .env("RUST_LOG", "warn")
            .env("GITHUB_REPOSITORY", "owner/repo")
            .env("GITHUB_WORKFLOW", wf["name"].as_str().expect("name"))
            .env("GITHUB_STEP_SUMMARY", work.join("step-summary.md"))
            .output()
            .expect("bash");
        let code = out.status.code().unwrap_or(-1);
        play.stderr
            .push_str(&format!("[{name}] {}", common::text(&out.stderr)));
        play.steps.push((name, code));
        failed |= code != 0;
    }
    play
}

fn code_of(p: &Play, step: &str) -> i32 {
    p.steps
        .iter()
        .find(|(n, _)| n == step)
        .unwrap_or_else(|| panic!("{step} did not run: {:?}\n{}", p.steps, p.stderr))
        .1
}

#[test]
fn the_github_actions_example_keeps_a_baseline_and_gates_pull_requests_on_it() {
    let _one = common::serial();
    let dir = common::fresh("ci-example", "github");
    let (bin, store) = (dir.join("bin"), dir.join("artifacts"));
    stand_ins(&bin, &store);
    let wf = workflow();
    assert!(wf["on"]["push"]["branches"]
        .as_sequence()
        .is_some_and(|b| b.iter().any(|x| x.as_str() == Some("main"))));
    assert!(wf["on"].get("pull_request").is_some());

    // The server: the simulator with a batch of 16 (about 100 req/s of 16 tokens, which a
    // debug build's client and simulator carry on a busy machine), as BENCH_TARGET names it.
    let sim = |name: &str, step_ms: u32| {
        let cfg = dir.join(format!("{name}.yaml"));
        std::fs::write(&cfg, format!("max_batch: 16\nstep_base_ms: {step_ms}\n")).expect("sim");
        format!("--mock --mock-config {}", cfg.display())
    };
    let server = sim("server", 8);
    let target = [("BENCH_TARGET", server.as_str())];

    // A push to main: install, sweep, keep the baseline.
    let main = dir.join("main");
    std::fs::create_dir_all(&main).expect("workspace");
    let p = play("push", &main, &bin, &store, &target);
    let names: Vec<&str> = p.steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["Install bench", "Sweep", "Keep the baseline"],
        "{}",
        p.stderr
    );
    assert!(
        p.steps.iter().all(|(_, c)| *c == 0),
        "{:?}\n{}",
        p.steps,
        p.stderr
    );
    assert!(store.join("bench-baseline/new.json").is_file());

    // A pull request against the same server: the gate passes, the summary says so.
    let pr = dir.join("pr");
    std::fs::create_dir_all(&pr).expect("workspace");
    let p = play("pull_request", &pr, &bin, &store, &target);
    eprintln!("{}", p.stderr);
    for step in [
        "Install bench",
        "Sweep",
        "Fetch the baseline",
        "Gate",
        "Summary",
    ] {
        assert_eq!(code_of(&p, step), 0, "{step}: {}", p.stderr);
    }
    assert!(p.stderr.contains("check(s): 0 failed"), "{}", p.stderr);
    let summary = std::fs::read_to_string(pr.join("step-summary.md")).expect("summary");
    assert!(summary.contains("### Regression gate: passed"), "{summary}");

    // A pull request whose server decodes half again as slowly: the gate fails with 3, the
    // summary step still runs.
    let slow = dir.join("slow");
    std::fs::create_dir_all(&slow).expect("workspace");
    let slower = sim("slower", 12);
    let p = play(
        "pull_request",
        &slow,
        &bin,
        &store,
        &[("BENCH_TARGET", &slower)],
    );
    eprintln!("{}", p.stderr);
    assert_eq!(code_of(&p, "Gate"), 3, "{}", p.stderr);
    assert_eq!(code_of(&p, "Summary"), 0, "{}", p.stderr);
    assert!(p.stderr.contains("regression: "), "{}", p.stderr);
    let summary = std::fs::read_to_string(slow.join("step-summary.md")).expect("summary");
    assert!(
        summary.contains("### Regression gate: **failed**"),
        "{summary}"
    );
}

/// The stand-in `pip` refuses another package: the test's check of the pinned name can fail.
#[test]
fn the_pip_stand_in_refuses_another_package() {
    let dir = common::fresh("ci-example", "pip");
    let bin = dir.join("bin");
    stand_ins(&bin, &dir.join("artifacts"));
    let ok = Command::new(bin.join("pip"))
        .args([
            "install",
            &format!("inference-bench=={}", env!("CARGO_PKG_VERSION")),
        ])
        .status()
        .expect("pip");
    let bad = Command::new(bin.join("pip"))
        .args(["install", "bench==0.1.0"])
        .status()
        .expect("pip");
    assert!(ok.success() && !bad.success());
}
