//! `bench plan`'s safety (issue 44), beside tests/plan.rs: the SLO answer never above the
//! capacity (on the simulator), no secret in any name, record, path or output of a plan, the
//! serve command built so that no value or key reaches the shell as code, and the messages that
//! name their culprit.

mod common;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("json")
}

/// Every file under `dir` (recursively), with its path relative to `dir`.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            let rel = p.strip_prefix(dir).expect("under").display().to_string();
            let bytes = if p.is_file() {
                std::fs::read(&p).unwrap_or_default()
            } else {
                Vec::new()
            };
            out.push((rel, bytes));
        }
    }
    out.sort();
    out
}

/// The simulator's capacity limits before its ITL bound: `--max-batch 8` steps every 8.8 ms at a
/// full batch, so `itl_p50=11` holds at every rate the server keeps up with, and the rates past
/// the capacity (not kept up) meet no SLO. The SLO answer is then the capacity, with its
/// interval, and the console says the capacity limits first; the plan sizes the fleet by it.
#[test]
fn an_slo_answer_is_never_above_the_capacity_and_names_the_capacity_as_the_limit() {
    let _one = common::serial();
    let dir = common::fresh("plan-safety", "slo-capacity");
    let serve = format!(
        "{} mock-server --port {{port}} --max-batch {{max_batch}}",
        env!("CARGO_BIN_EXE_bench")
    );
    let out = common::bench_command()
        .args(["plan", "--serve", &serve, "--params", "max_batch=8"])
        .args(["--demand", "80", "--slo", "itl_p50=11"])
        .args(["--data", "prompt_tokens=256,output_tokens=32"])
        .args(["--max-seconds", "3", "--sweep-size", "5", "--warmup", "0.3"])
        .args(["--stop-grace", "2", "--plan-dir"])
        .arg(dir.join("plan"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let run = read_json(&dir.join("plan/max_batch-8/run.json"));
    let c = &run["capacity"];
    let max = common::f(c, &["max_requests_per_s"]);
    let slo = common::f(c, &["slo_max_requests_per_s"]);
    eprintln!("capacity {max}, SLO answer {slo}: {c}");
    assert!(slo <= max, "the SLO answer {slo} is above the capacity {max}");
    assert_eq!(c["slo_limit"], "capacity", "{c}");
    assert_eq!(slo, max, "the SLO never binds: the answer is the capacity");
    // Its interval is the capacity's.
    let iv = &c["intervals"];
    assert_eq!(
        iv["slo_max_requests_per_s"]["low"], iv["max_requests_per_s"]["low"],
        "{iv}"
    );
    assert_eq!(
        iv["slo_max_requests_per_s"]["high"], iv["max_requests_per_s"]["high"],
        "{iv}"
    );
    // --slo-precision (the plan's 5%) narrowed that interval, or says why it could not.
    let r = &c["slo_bracket"]["refinement"];
    assert!(
        r["met"] == true || r["why_not"].is_string(),
        "neither narrowed nor said why: {r}"
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("Max rate meeting itl_median=11"))
        .unwrap_or_else(|| panic!("no SLO line: {stdout}"));
    assert!(
        line.contains(&format!("{max:.2} req/s")) && line.contains("the capacity limits first"),
        "{line}"
    );
    // The plan divides by the lower end of that interval.
    let plan = read_json(&dir.join("plan/plan.json"));
    let fleet = &plan["configs"][0]["fleet"];
    let low = common::f(fleet, &["rate_interval", "low"]);
    assert!(low <= max, "{fleet}");
    assert_eq!(
        fleet["replicas"].as_u64(),
        Some((80.0 / low).ceil() as u64),
        "{fleet}"
    );
}

/// Runs `bench plan` in `cwd` with `args` (no server answers: each configuration fails to
/// start within a second), returning its output.
fn plan_in(cwd: &Path, args: &[&str]) -> Output {
    common::bench_command()
        .current_dir(cwd)
        .arg("plan")
        .args(args)
        .args(["--demand", "1", "--ready-timeout", "1", "--stop-grace", "1"])
        .args(["--quiet", "--console", "none", "--plan-dir", "plan"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run")
}
