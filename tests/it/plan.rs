//! `bench plan` against simulators it launches itself (`bench mock-server --port {port}`), one
//! per configuration: the replica counts and the ranking against the engine's closed form, a
//! configuration that fails to start recorded with its log and the plan going on, no server
//! left behind (after the plan, after Ctrl-C), `--resume`, and bad input (exit 2, one line).
//!
//! Closed form (tests/steady_latency.rs, docs/simulator.md): open loop at `λ` below capacity,
//! every inter-token gap is a step `S = b + q r` with `r = λ (P + (n - 1/2) S)` slots held, so
//! the highest rate whose ITL median meets `X` is `λ = (X - b) / (q (P + (n - 1/2) X))`.
//! Here `b` = 5 ms, `P` = 5 ms (prefill overhead, prompt free), `n` = 16 and `X` = 12 ms:
//! `q` = 0.5 ms gives 73.3 req/s, `q` = 1 ms 36.6 req/s (held slots 14 of 16).

use crate::common;

use std::net::TcpStream;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

const SIM: &str =
    "max_batch: 16\nstep_base_ms: 5\nprefill_overhead_ms: 5\nprefill_rate: 0\nignore_eos: true\n";
const SLO_MS: f64 = 12.0;
const DEMAND: f64 = 100.0;

fn slo_rate(q_ms: f64) -> f64 {
    let (b, p, n, x) = (5e-3, 5e-3, 16.0, SLO_MS / 1e3);
    (x - b) / (q_ms / 1e3 * (p + (n - 0.5) * x))
}

fn serve(cfg: &Path) -> String {
    format!(
        "{} mock-server --port {{port}} --config {} --step-per-seq-ms={{q}}",
        env!("CARGO_BIN_EXE_bench"),
        cfg.display()
    )
}

fn plan(dir: &Path, params: &str, extra: &[&str]) -> Output {
    let cfg = dir.join("sim.yaml");
    std::fs::write(&cfg, SIM).expect("sim config");
    common::bench_command()
        .args(["plan", "--serve", &serve(&cfg), "--params", params])
        .args(["--demand", &DEMAND.to_string(), "--gpu-hour-cost", "2"])
        .args(["--slo", &format!("itl_p50={SLO_MS}"), "--plan-dir"])
        .arg(dir.join("plan"))
        .args(["--max-seconds", "2", "--warmup", "0.2", "--sweep-size", "5"])
        .args([
            "--data",
            "prompt_tokens=16,output_tokens=16",
            "--quiet",
            "--console",
            "none",
        ])
        .args(["--stop-grace", "2"])
        .args(extra)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench plan")
}

fn read_plan(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("plan/plan.json")).expect("plan.json");
    serde_json::from_str(&text).expect("plan json")
}

/// The port in a launched configuration's command, and whether anything still listens there.
fn still_served(config: &Value) -> Option<u16> {
    let cmd = config["command"].as_str()?;
    let port: u16 = cmd
        .split("--port ")
        .nth(1)?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300))
        .is_ok()
        .then_some(port)
}

fn config<'a>(plan: &'a Value, name: &str) -> &'a Value {
    plan["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {plan}"))
}

/// The closed form's count, or one more or fewer where the interval straddles a boundary (the
/// plan then says so with `replicas_low` under `replicas`).
fn check_count(c: &Value, q_ms: f64) {
    let f = &c["fleet"];
    let want = (DEMAND / slo_rate(q_ms)).ceil() as u64;
    let got = f["replicas"].as_u64().expect("replicas");
    let (low, high) = (
        f["rate_interval"]["low"].as_f64().expect("low"),
        f["rate_interval"]["high"].as_f64().unwrap_or(f64::INFINITY),
    );
    eprintln!(
        "{}: {got} replicas (closed form {want}); SLO rate {} ({low}-{high}) vs {:.2}",
        c["name"],
        f["rate_per_replica"],
        slo_rate(q_ms)
    );
    let straddles = f["replicas_low"].as_u64() < Some(got);
    assert!(
        got == want || (straddles && got.abs_diff(want) == 1),
        "{}: {got} replicas, closed form {want}: {f}",
        c["name"]
    );
    assert_eq!(f["gpus"].as_f64(), Some(got as f64));
    assert_eq!(f["cost_per_hour"].as_f64(), Some(2.0 * got as f64));
}

#[test]
fn a_plan_sizes_each_configuration_as_the_closed_form_does_and_leaves_no_server() {
    let _one = common::serial();
    let dir = common::fresh("plan", "closed-form");
    // q = -1 is refused by the simulator: that configuration fails to start, the plan goes on.
    let out = plan(&dir, "q=0.5,1,-1", &[]);
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    eprintln!("{stdout}\n{stderr}");
    assert!(out.status.success(), "{stderr}");
    let p = read_plan(&dir);
    let (fast, slow, bad) = (config(&p, "q=0.5"), config(&p, "q=1"), config(&p, "q=-1"));
    check_count(fast, 0.5);
    check_count(slow, 1.0);
    // Each sweep narrowed its SLO answer to the plan's default precision (5%).
    for name in ["q-0.5", "q-1"] {
        let text =
            std::fs::read_to_string(dir.join("plan").join(name).join("run.json")).expect("run");
        let run: Value = serde_json::from_str(&text).expect("json");
        let r = &run["capacity"]["slo_bracket"]["refinement"];
        eprintln!("{name}: {r}");
        assert_eq!(r["precision"].as_f64(), Some(0.05), "{r}");
        assert_eq!(r["met"], true, "{name}: {r}");
    }
    assert_eq!(
        (fast["rank"].as_u64(), slow["rank"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(bad["status"], "failed_to_start", "{bad}");
    assert!(bad["rank"].is_null());
    let tail: Vec<&str> = bad["log_tail"]
        .as_array()
        .expect("tail")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tail.iter().any(|l| l.contains("step_per_seq_ms")),
        "{tail:?}"
    );
    assert!(stdout.contains("Recommended: q=0.5 x "), "{stdout}");
    assert!(stdout.contains("q=-1: failed to start"), "{stdout}");
    for c in [fast, slow, bad] {
        assert_eq!(still_served(c), None, "a server outlived the plan: {c}");
    }
    for f in [
        "plan.csv",
        "plan.html",
        "q-0.5/run.json",
        "q-0.5/server.log",
    ] {
        assert!(dir.join("plan").join(f).is_file(), "{f}");
    }
    confirm_on_replicas(&dir, slow);
    // --resume keeps both sweeps (no server starts) and plans the same.
    let again = plan(&dir, "q=0.5,1", &["--resume"]);
    let stderr = common::text(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert_eq!(stderr.matches("(--resume)").count(), 2, "{stderr}");
    assert!(!stderr.contains("starting"), "{stderr}");
    let q = read_plan(&dir);
    assert_eq!(config(&q, "q=0.5")["fleet"], fast["fleet"]);
}

/// The ITL median of `rate` req/s sent to `replicas` simulators of step cost `q_ms` behind one
/// port (round-robin).
fn itl_median_on(dir: &Path, replicas: u64, q_ms: f64, rate: f64) -> f64 {
    let cfg = dir.join("sim.yaml");
    let (_server, url) = common::mock_server(&[
        "--port",
        "0",
        "--config",
        &cfg.display().to_string(),
        &format!("--step-per-seq-ms={q_ms}"),
        "--replicas",
        &replicas.to_string(),
    ]);
    let json = dir.join(format!("fleet-{replicas}.json"));
    let out = common::bench_command()
        .args([
            "run",
            "--target",
            &url,
            "--rate-type",
            "constant",
            "--rate",
            &rate.to_string(),
        ])
        .args([
            "--max-seconds",
            "4",
            "--data",
            "prompt_tokens=16,output_tokens=16",
        ])
        .args(["--quiet", "--console", "none", "--output"])
        .arg(&json)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("run")).expect("json");
    common::f(&run["benchmarks"][0], &["metrics", "itl_ms", "median"])
}

/// The plan's count for the slower configuration, checked for real: the demand sent to that
/// many replicas meets the SLO, to one fewer it does not. Closed form: at 33.3 req/s a replica
/// steps every 10.7 ms (under 12); at 50 req/s it is past its capacity (47.6 req/s) and every
/// step holds the full batch, 21 ms.
fn confirm_on_replicas(dir: &Path, slow: &Value) {
    let n = slow["fleet"]["replicas"].as_u64().expect("replicas");
    let enough = itl_median_on(dir, n, 1.0, DEMAND);
    let fewer = itl_median_on(dir, n - 1, 1.0, DEMAND);
    eprintln!(
        "{DEMAND} req/s on {n} replicas: ITL median {enough:.2} ms; on {}: {fewer:.2} ms",
        n - 1
    );
    assert!(
        enough <= SLO_MS,
        "{n} replicas: ITL median {enough} ms over the SLO's {SLO_MS}"
    );
    assert!(
        fewer > SLO_MS,
        "{} replicas: ITL median {fewer} ms meets the SLO",
        n - 1
    );
}

#[test]
fn ctrl_c_stops_the_plan_tears_the_server_down_and_keeps_the_plan() {
    let dir = common::fresh("plan", "interrupted");
    let cfg = dir.join("sim.yaml");
    std::fs::write(&cfg, SIM).expect("sim config");
    let child = common::bench_command()
        .args(["plan", "--serve", &serve(&cfg), "--params", "q=0.5,1"])
        .args([
            "--demand",
            "10",
            "--max-seconds",
            "30",
            "--quiet",
            "--console",
            "none",
        ])
        .arg("--plan-dir")
        .arg(dir.join("plan"))
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait for the first sweep to start, then interrupt.
    let log = dir.join("plan/q-0.5/server.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("listening on")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        common::text(&out.stderr)
    );
    let p = read_plan(&dir);
    let first = config(&p, "q=0.5");
    assert_eq!(first["status"], "interrupted", "{first}");
    assert_eq!(config(&p, "q=1")["status"], "interrupted");
    assert!(
        config(&p, "q=1")["command"].is_null(),
        "the second server started"
    );
    assert_eq!(still_served(first), None, "the server outlived Ctrl-C");
}

#[test]
fn bad_plans_exit_2_with_one_line_naming_the_culprit() {
    let dir = common::fresh("plan", "bad");
    for (args, words) in [
        (
            vec!["--serve", "srv --port {port} --x {nope}", "--demand", "1"],
            "`{nope}` is neither a parameter",
        ),
        (
            vec!["--serve", "srv {port}", "--params", "a", "--demand", "1"],
            "--params `a`: expected NAME=V1",
        ),
        (
            vec!["--serve", "srv {port} {a}", "--params", "a=1"],
            "no demand to plan for",
        ),
        (
            vec!["--params", "a=1", "--demand", "1"],
            "--params needs --serve",
        ),
        (
            vec!["--serve", "srv {port}", "--demand", "0"],
            "--demand: 0 must be a positive number",
        ),
        (
            vec![
                "--serve",
                "srv {port} {a}",
                "--params",
                "a=1",
                "--link",
                "a=rate",
                "--demand",
                "1",
            ],
            "cannot follow a parameter",
        ),
        (
            vec![
                "--serve",
                "srv {port}",
                "--demand",
                "1",
                "--gpus-per-replica",
                "{tp}",
            ],
            "`{tp}` is not a parameter",
        ),
    ] {
        let out = common::bench_command()
            .arg("plan")
            .args(&args)
            .arg("--plan-dir")
            .arg(dir.join("p"))
            .output()
            .expect("run");
        common::usage_error(&out, words, &format!("{args:?}"));
    }
    assert!(!dir.join("p").exists(), "a refused plan made its directory");
}

/// With a trace as the load and no --demand, the demand is the trace's peak rate over
/// --demand-window, grown by --growth: read before any server starts, and kept in the plan
/// even when no configuration could run (here the serve command fails at once).
#[test]
fn a_traces_peak_rate_is_the_demand() {
    let dir = common::fresh("plan", "trace-demand");
    // 20 rows a second for 10 s, then 5 rows in the 11th second: the busiest 5 s holds 100.
    let mut rows = String::new();
    for i in 0..205u64 {
        let ms = if i < 200 {
            i * 50
        } else {
            10_000 + (i - 200) * 200
        };
        rows.push_str(&format!(
            "{{\"timestamp\": {ms}, \"input_length\": 32, \"output_length\": 8, \"hash_ids\": [{i}]}}\n"
        ));
    }
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, rows).expect("trace");
    let out = common::bench_command()
        // The command names secrets (a variable and a flag): none may be printed or kept.
        .args([
            "plan",
            "--serve",
            "HF_TOKEN=hf_sekrit1 sh -c 'exit 3' --api-key sk-sekrit2 {port}",
        ])
        .args(["--ready-timeout", "5"])
        .args(["--demand-window", "5", "--growth", "1.5", "--data"])
        .arg(format!("trace={}", trace.display()))
        .arg("--plan-dir")
        .arg(dir.join("plan"))
        .args(["--quiet", "--console", "none"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    let stdout = common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let p = read_plan(&dir);
    let d = &p["demand"];
    // 100 rows in 5 s (the window from 0 s to 5 s, and every one until 5 s): 20 rows/s.
    assert_eq!(d["requests_per_s"].as_f64(), Some(20.0), "{d}");
    assert_eq!(d["planned_requests_per_s"].as_f64(), Some(30.0), "{d}");
    assert!(
        d["source"]
            .as_str()
            .is_some_and(|s| s.contains("over 5 s windows")),
        "{d}"
    );
    assert_eq!(p["configs"][0]["status"], "failed_to_start");
    assert!(
        stdout.contains("Demand: 30 req/s = 20 x growth 1.5 (peak of"),
        "{stdout}"
    );
    assert!(
        stdout.contains("No configuration can serve the demand"),
        "{stdout}"
    );
}

/// `--show-config` prints the plan as a profile (the sweep's keys and `plan:`), which loads
/// again to the same settings.
#[test]
fn show_config_prints_a_plan_profile_that_loads_again() {
    let dir = common::fresh("plan", "show-config");
    let shown = |args: &[&str]| {
        let out = common::bench_command()
            .arg("plan")
            .args(args)
            .arg("--show-config")
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", common::text(&out.stderr));
        common::text(&out.stdout)
    };
    let first = shown(&[
        "--serve",
        "srv --port {port} --n {n}",
        "--params",
        "n=8,16",
        "--link",
        "n=max_concurrency",
        "--demand",
        "12",
        "--slo",
        "itl_p50=50",
        "--gpu-hour-cost",
        "2.5",
    ]);
    let yaml: serde_yaml::Value = serde_yaml::from_str(&first).expect("yaml");
    assert_eq!(
        yaml["plan"]["serve"], "srv --port {port} --n {n}",
        "{first}"
    );
    assert_eq!(yaml["plan"]["params"]["n"][1], "16", "{first}");
    assert_eq!(
        yaml["max_concurrency"].as_u64(),
        Some(8),
        "the first configuration's link: {first}"
    );
    assert_eq!(yaml["slo_precision"], "5%", "{first}");
    assert!(yaml.get("target").is_none(), "{first}");
    let file = dir.join("plan.yaml");
    std::fs::write(&file, &first).expect("write");
    let again = shown(&["--profile", &file.display().to_string()]);
    assert_eq!(again, first);
    // Without an SLO the plan divides by the maximum: its precision is the one set.
    let bare = shown(&["--serve", "srv {port}", "--demand", "3"]);
    let yaml: serde_yaml::Value = serde_yaml::from_str(&bare).expect("yaml");
    assert_eq!(yaml["capacity_precision"], "5%", "{bare}");
    assert!(yaml.get("slo_precision").is_none(), "{bare}");
    let given = shown(&[
        "--serve",
        "srv {port}",
        "--demand",
        "3",
        "--capacity-precision",
        "20%",
    ]);
    assert!(given.contains("capacity_precision: 20%"), "{given}");
}

/// bench killed outright (SIGKILL: no handler runs, nothing is dropped) leaves no server: the
/// watchdog beside it (`plan::launch::WATCHDOG`) sees bench gone within a second and tears the
/// server's group down, SIGTERM then SIGKILL after the grace.
#[test]
fn a_killed_plan_leaves_no_server_behind() {
    let dir = common::fresh("plan", "killed");
    let cfg = dir.join("sim.yaml");
    std::fs::write(&cfg, SIM).expect("sim config");
    let mut child = common::bench_command()
        .args(["plan", "--serve", &serve(&cfg), "--params", "q=0.5"])
        .args(["--demand", "10", "--max-seconds", "30", "--stop-grace", "2"])
        .args(["--quiet", "--console", "none", "--plan-dir"])
        .arg(dir.join("plan"))
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let log = dir.join("plan/q-0.5/server.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("listening on") {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // The log's first line is the command as launched, with its port.
    let launched = serde_json::json!({ "command": text.lines().next().expect("command") });
    let port = still_served(&launched).expect("the server answers while the plan runs");
    child.kill().expect("SIGKILL bench");
    let _ = child.wait();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while still_served(&launched).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server on port {port} outlived bench's SIGKILL by 20 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `--serve-params` (vLLM's file): each entry is one configuration, its keys fill the command's
/// `{key}`s and the rest are appended as vLLM appends them. `echo` stands for the server: it
/// prints the arguments it received into its log and exits, so each configuration is recorded
/// as failed to start with that log tail, which shows exactly what the server was given.
#[test]
fn serve_params_configurations_get_the_flags_vllm_would_pass() {
    let dir = common::fresh("plan", "serve-params");
    let file = dir.join("serve.json");
    std::fs::write(
        &file,
        r#"{"small": {"tp": 1, "max_num_seqs": 32, "enforce_eager": true},
            "big": {"tp": 2, "max_num_seqs": 64, "enforce_eager": false,
                    "compilation_config": {"level": 3}}}"#,
    )
    .expect("write");
    let out = common::bench_command()
        .args(["plan", "--serve", "echo served -tp {tp} --port {port}"])
        .arg("--serve-params")
        .arg(&file)
        .args(["--demand", "1", "--ready-timeout", "5", "--plan-dir"])
        .arg(dir.join("plan"))
        .args(["--quiet", "--console", "none"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let p = read_plan(&dir);
    let names: Vec<&str> = p["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["small", "big"], "the file's order");
    for (name, args) in [
        ("small", "-tp 1 --port PORT --max-num-seqs 32 --enforce-eager"),
        (
            "big",
            "-tp 2 --port PORT --max-num-seqs 64 --no-enforce-eager --compilation-config {\"level\":3}",
        ),
    ] {
        let c = config(&p, name);
        assert_eq!(c["status"], "failed_to_start", "{c}");
        let tail = c["log_tail"].to_string();
        let port = c["command"]
            .as_str()
            .and_then(|cmd| cmd.split("--port ").nth(1))
            .and_then(|r| r.split(' ').next())
            .expect("port");
        let want = format!("served {}", args.replace("PORT", port));
        assert!(
            tail.contains(&want.replace('"', "\\\"")),
            "{name}: {tail} lacks {want}"
        );
    }
    // A file that is not of vLLM's shape is a usage error naming it.
    std::fs::write(&file, "[1]").expect("write");
    let out = common::bench_command()
        .args(["plan", "--serve", "echo {port}", "--demand", "1"])
        .arg("--serve-params")
        .arg(&file)
        .output()
        .expect("run");
    let err = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--serve-params") && err.contains("entry 1"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // It lists the configurations itself: with --params it is refused.
    let out = common::bench_command()
        .args(["plan", "--serve", "echo {port}", "--params", "a=1,2"])
        .arg("--serve-params")
        .arg(&file)
        .output()
        .expect("run");
    let err = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--serve-params") && err.contains("not both"),
        "{err}"
    );
}

/// A plan over a trace (issue 35): the demand is the trace's peak rate times the growth, each
/// configuration's sweep replays the trace sped up, and the fleet divides the demand by the
/// maximum it states. The engine is tests/trace_sweep.rs's `batch8` (capacity `B / C` = 8 /
/// 0.24 s = 33.3 req/s); the trace 400 evenly spaced rows at 4 req/s, so its peak over any
/// window is 4 req/s, and growth 10 plans for 40 req/s: two replicas by the closed form.
#[test]
fn a_plan_over_a_trace_sizes_the_fleet_for_its_peak_from_the_trace_sweep() {
    let _one = common::serial();
    let dir = common::fresh("plan", "trace-plan");
    let rows: String = (0..400u64)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 16, \"output_length\": 24, \"hash_ids\": [{i}]}}\n",
                i * 250
            )
        })
        .collect();
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, rows).expect("trace");
    let cfg = dir.join("sim.yaml");
    std::fs::write(
        &cfg,
        "max_batch: 8\nstep_base_ms: 6\nstep_per_seq_ms: 0.5\nprefill_overhead_ms: 2\nprefill_rate: 0\nignore_eos: true\n",
    )
    .expect("sim");
    let serve = format!(
        "{} mock-server --port {{port}} --config {}",
        env!("CARGO_BIN_EXE_bench"),
        cfg.display()
    );
    let out = common::bench_command()
        .args(["plan", "--serve", &serve, "--growth", "10", "--data"])
        .arg(format!("trace={},block_size=16", trace.display()))
        .args(["--max-seconds", "2", "--warmup", "0.2", "--sweep-size", "4"])
        .args([
            "--stop-grace",
            "2",
            "--quiet",
            "--console",
            "none",
            "--plan-dir",
        ])
        .arg(dir.join("plan"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    eprintln!("{stdout}\n{stderr}");
    assert!(out.status.success(), "{stderr}");
    let p = read_plan(&dir);
    assert_eq!(p["demand"]["requests_per_s"].as_f64(), Some(4.0), "{p}");
    assert_eq!(p["demand"]["planned_requests_per_s"].as_f64(), Some(40.0));
    let c = config(&p, "target");
    assert_eq!(c["status"], "planned", "{c}");
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("plan").join(c["run_file"].as_str().expect("run")))
            .expect("run file"),
    )
    .expect("json");
    let cap = &run["capacity"];
    let capacity = 8.0 / 0.24;
    let point = common::f(cap, &["max_requests_per_s"]);
    // The trace sweep's answer, as tests/trace_sweep.rs holds it: within 5% of the closed form,
    // and stated as a multiple of the trace's 4 req/s.
    assert!(
        (point - capacity).abs() <= 0.05 * capacity,
        "{point} against {capacity}"
    );
    let multiple = common::f(cap, &["trace", "max_multiple"]);
    assert!((multiple - point / 4.0).abs() < 1e-6, "{cap}");
    // The plan's precision default (no SLO: the maximum's) ran, and the fleet divides by the
    // lower end of the interval it reached.
    assert_eq!(
        cap["max_refinement"]["precision"].as_f64(),
        Some(0.05),
        "{cap}"
    );
    let low = common::f(&c["fleet"], &["rate_interval", "low"]);
    let replicas = c["fleet"]["replicas"].as_u64().expect("a sure count");
    assert_eq!(replicas, (40.0 / low).ceil() as u64, "{c}");
    assert_eq!(replicas, 2, "the closed form's count: {c}");
    assert_eq!(still_served(c), None, "the server outlived the plan");
}
