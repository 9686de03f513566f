//! `bench plan`'s safety (issue 44), beside tests/plan.rs: the SLO answer never above the
//! capacity (on the simulator), no secret in any name, record, path or output of a plan, the
//! serve command built so that no value or key reaches the shell as code, and the messages that
//! name their culprit.

use crate::common;

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
    assert!(
        slo <= max,
        "the SLO answer {slo} is above the capacity {max}"
    );
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

/// Runs `bench plan` in `cwd` with `args` and the console on (every configuration's server
/// exits at once or never answers, so each fails to start within a second).
fn plan_in(cwd: &Path, args: &[&str]) -> Output {
    common::bench_command()
        .current_dir(cwd)
        .arg("plan")
        .args(args)
        .args(["--demand", "1", "--ready-timeout", "1", "--stop-grace", "1"])
        .args(["--plan-dir", "plan"])
        .env("RUST_LOG", "info")
        .output()
        .expect("run")
}

/// No `secret` in the output, nor in any path or file under `dir`.
fn no_secret_anywhere(out: &Output, dir: &Path, secrets: &[&str]) {
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    for secret in secrets {
        assert!(!stdout.contains(secret), "{secret} on stdout: {stdout}");
        assert!(!stderr.contains(secret), "{secret} on stderr: {stderr}");
        for (path, bytes) in files_under(dir) {
            assert!(!path.contains(secret), "{secret} in the path {path}");
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{secret} in {path}"
            );
        }
    }
}

/// A secret-named parameter (`key`, as `--api-key {key}` takes it) is masked in every name,
/// record, path and output: `***1`, `***2` for its two values, so the configurations stay
/// apart; the server, which echoes its arguments into its log, does not leave it there either.
#[test]
fn a_secret_parameter_is_masked_in_every_name_record_path_and_output() {
    let dir = common::fresh("plan-safety", "secret-params");
    let out = plan_in(
        &dir,
        &[
            "--serve",
            "echo srv --port {port} --api-key {key}",
            "--params",
            "key=sk-secret123,sk-other4567",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    no_secret_anywhere(&out, &dir, &["sk-secret123", "sk-other4567"]);
    let plan = read_json(&dir.join("plan/plan.json"));
    let names: Vec<&str> = plan["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["key=***1", "key=***2"]);
    let first = &plan["configs"][0];
    assert_eq!(first["params"]["key"], "***1", "{first}");
    assert_eq!(first["run_file"], "key-~~~1/run.json", "{first}");
    // The server did get the secret: its log said it, and bench masked it there.
    let log = std::fs::read_to_string(dir.join("plan/key-~~~1/server.log")).expect("log");
    assert!(log.contains("--api-key ***1"), "{log}");
    let stdout = common::text(&out.stdout);
    assert!(stdout.contains("key=***1"), "{stdout}");
}

/// `--show-config` masks the secrets it would print: a secret-named parameter's values
/// (`***1`, `***2`, as the configurations' names mask them) and the serve command's own
/// secrets (a variable, a flag's value), keeping its placeholders; the profile it prints
/// loads again (with the masks for values: the secrets are not in it).
#[test]
fn show_config_masks_secret_parameters_and_the_serve_commands_secrets() {
    let dir = common::fresh("plan-safety", "show-config-secrets");
    let show = |args: &[&str]| {
        common::bench_command()
            .current_dir(&dir)
            .args(["plan", "--show-config", "--demand", "1"])
            .args(args)
            .output()
            .expect("run")
    };
    let out = show(&[
        "--serve",
        "HF_TOKEN=hf_sekrit789 srv --port {port} --api-key {key} --hf-token=hf_other012",
        "--params",
        "key=sk-secret123,sk-other4567",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let secrets = [
        "sk-secret123",
        "sk-other4567",
        "hf_sekrit789",
        "hf_other012",
    ];
    no_secret_anywhere(&out, &dir, &secrets);
    let yaml: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).expect("yaml");
    let plan = &yaml["plan"];
    assert_eq!(plan["params"]["key"][0], "***1", "{plan:?}");
    assert_eq!(plan["params"]["key"][1], "***2", "{plan:?}");
    assert_eq!(
        plan["serve"], "HF_TOKEN=*** srv --port {port} --api-key {key} --hf-token=***",
        "{plan:?}"
    );
    let file = dir.join("shown.yaml");
    std::fs::write(&file, &out.stdout).expect("write");
    let again = show(&["--profile", "shown.yaml"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        common::text(&again.stderr)
    );
    assert_eq!(common::text(&again.stdout), common::text(&out.stdout));
}

/// The same with a `--serve-params` file whose `api_key` is appended as `--api-key VALUE`.
#[test]
fn a_secret_key_of_a_serve_params_file_is_masked_too() {
    let dir = common::fresh("plan-safety", "secret-file");
    std::fs::write(
        dir.join("serve.json"),
        r#"[{"api_key": "sk-secret456", "b": 4}, {"api_key": "sk-secret456", "b": 8}]"#,
    )
    .expect("write");
    let out = plan_in(
        &dir,
        &[
            "--serve",
            "echo srv --port {port}",
            "--serve-params",
            "serve.json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    // The file given holds it (the user wrote it); nothing bench wrote does.
    no_secret_anywhere(&out, &dir.join("plan"), &["sk-secret456"]);
    let plan = read_json(&dir.join("plan/plan.json"));
    assert_eq!(plan["configs"][1]["name"], "api_key=***,b=8", "{plan}");
    let cmd = plan["configs"][1]["command"].as_str().expect("command");
    assert!(cmd.ends_with("--api-key *** --b 8"), "{cmd}");
}

/// Nothing a value or a key holds reaches the shell as code: a key that is not a parameter
/// name is refused (exit 2, naming the file, the entry and the key) before anything runs, and
/// every value bench inserts, filling `{name}` or appended, is one quoted word. Run in a
/// folder of its own: nothing but the plan's folder appears there.
#[test]
fn no_value_or_key_reaches_the_shell_and_nothing_appears_outside_the_plan() {
    let dir = common::fresh("plan-safety", "shell");
    std::fs::write(dir.join("keys.json"), r#"[{"x;touch PWNED;#": 1}]"#).expect("write");
    let out = plan_in(
        &dir,
        &["--serve", "echo {port}", "--serve-params", "keys.json"],
    );
    let err = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "--serve-params keys.json: entry 1: key: `x;touch PWNED;#` is not a parameter name"
        ),
        "{err}"
    );
    std::fs::write(
        dir.join("values.json"),
        r#"[{"tp": "4; touch PWNED_FILL", "extra": "$(touch PWNED_SUB)", "w": "a b"}]"#,
    )
    .expect("write");
    let out = plan_in(
        &dir,
        &[
            "--serve",
            "echo got {tp} --port {port}",
            "--serve-params",
            "values.json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let out = plan_in(
        &dir,
        &[
            "--serve",
            "echo got {v} --port {port}",
            "--params",
            "v=1;touch PWNED_PARAM,`touch PWNED_TICK`",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let mut here: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    here.sort();
    assert_eq!(here, ["keys.json", "plan", "values.json"], "files appeared");
    // Each value reached the server as one argument, as written.
    let plan = read_json(&dir.join("plan/plan.json"));
    let tail = plan["configs"][0]["log_tail"].to_string();
    assert!(tail.contains("got 1;touch PWNED_PARAM --port"), "{tail}");
    let log = files_under(&dir.join("plan"))
        .into_iter()
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect::<String>();
    for want in [
        "got 4; touch PWNED_FILL --port",
        "--extra $(touch PWNED_SUB) --w a b",
        "got `touch PWNED_TICK` --port",
    ] {
        assert!(log.contains(want), "{want} not in {log}");
    }
}

/// The serve command and the parameters: usage errors (exit 2, one line, naming the culprit)
/// before anything starts.
#[test]
fn bad_serve_commands_and_parameter_files_are_usage_errors_naming_the_culprit() {
    let dir = common::fresh("plan-safety", "usage");
    std::fs::write(dir.join("comma.json"), r#"[{"tp": 1},]"#).expect("write");
    std::fs::write(dir.join("yaml.json"), "- tp: 1\n").expect("write");
    std::fs::write(dir.join("junk.json"), "not json {").expect("write");
    let serve_params = |f: &'static str| vec!["--serve", "srv {port} {tp}", "--serve-params", f];
    for (args, said) in [
        (vec!["--serve", ""], "--serve: the command is empty"),
        (vec!["--serve", "   "], "--serve: the command is empty"),
        (
            vec!["--serve", "srv } {port}"],
            "--serve: a lone `}` in `srv } {port}`",
        ),
        (
            vec!["--serve", "srv { {port}"],
            "--serve: an unclosed or empty `{`",
        ),
        (
            serve_params("comma.json"),
            "--serve-params comma.json: not JSON: line 1, column 12",
        ),
        (
            serve_params("yaml.json"),
            "--serve-params yaml.json: not JSON: line 1, column 2",
        ),
        (
            serve_params("junk.json"),
            "--serve-params junk.json: not JSON: line 1, column 2",
        ),
        (
            vec![
                "--serve",
                "srv {port} {a}",
                "--params",
                "a=1",
                "--params",
                "b=1,2",
            ],
            "--params b: neither --serve (as `{b}`) nor a --link uses it",
        ),
        (
            vec!["--serve", "srv {port}", "--demand", "-5"],
            "--demand: -5 must be a positive number",
        ),
        (
            vec!["--serve", "srv {port}", "--growth", "-2"],
            "--growth: -2 must be a positive number",
        ),
        (
            vec!["--serve", "srv {port}", "--gpu-hour-cost", "-1"],
            "--gpu-hour-cost: -1 must be a price of 0 or more",
        ),
        (
            vec!["--serve", "srv {port}", "--max-seconds", "0"],
            "--max-seconds: 0 is not a positive number of seconds",
        ),
    ] {
        let out = common::bench_command()
            .current_dir(&dir)
            .arg("plan")
            .args(&args)
            .args(["--plan-dir", "plan"])
            .args(if args.contains(&"--demand") {
                vec![]
            } else {
                vec!["--demand", "1"]
            })
            .output()
            .expect("run");
        common::usage_error(&out, said, &format!("{args:?}"));
    }
    assert!(!dir.join("plan").exists(), "a refused plan made its folder");
}

/// A server that never answers: the reason names the URL polled. A server that writes control
/// characters (a colour, a terminal title, a NUL) has them escaped in the plan's record and
/// never printed raw.
#[test]
fn a_readiness_timeout_names_the_url_and_server_text_is_escaped() {
    let dir = common::fresh("plan-safety", "server-text");
    let out = plan_in(&dir, &["--serve", "sleep 30 # {port}"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let plan = read_json(&dir.join("plan/plan.json"));
    let reason = plan["configs"][0]["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with("the server did not answer 200 at http://127.0.0.1:")
            && reason.contains("/v1/models within 1 s (--ready-timeout)"),
        "{reason}"
    );
    let out = plan_in(
        &dir,
        &[
            "--serve",
            r"printf 'a\000b\033[31mRED\033]0;pwned\007\n'; exit 3 # {port}",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !stream.iter().any(|&b| b == 0x1b || b == 0 || b == 7),
            "raw control characters printed: {:?}",
            common::text(stream)
        );
    }
    let plan = read_json(&dir.join("plan/plan.json"));
    let tail: Vec<&str> = plan["configs"][0]["log_tail"]
        .as_array()
        .expect("tail")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tail.contains(&r"a\x00b\x1b[31mRED\x1b]0;pwned\x07"),
        "{tail:?}"
    );
}

/// `--resume` over a truncated run and a garbage plan.json: each is said to be unreadable, and
/// the configuration runs again.
#[test]
fn resume_says_which_file_was_unreadable() {
    let dir = common::fresh("plan-safety", "resume");
    let args = ["--serve", "echo {port} {n}", "--params", "n=1"];
    let out = plan_in(&dir, &args);
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    std::fs::write(
        dir.join("plan/n-1/run.json"),
        "{\"schema_version\": 1, \"bench",
    )
    .expect("w");
    std::fs::write(dir.join("plan/plan.json"), "garbage").expect("w");
    let out = plan_in(&dir, &[&args[..], &["--resume"]].concat());
    let err = common::text(&out.stderr);
    assert!(
        err.contains("n=1: plan/n-1/run.json is unreadable (")
            && err.contains("running it again (--resume)"),
        "{err}"
    );
    assert!(err.contains("plan/plan.json is unreadable"), "{err}");
    assert!(err.contains("n=1: starting"), "{err}");
}

/// A server whose `/v1/models` answers 200 with raw control bytes (NUL, an invalid byte, a
/// colour, an OSC title ending in BEL): bench's error quotes the reply with them escaped, and
/// writes none of them to the terminal.
#[test]
fn a_model_list_of_control_bytes_is_quoted_escaped() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten().take(8) {
            let mut s = stream;
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body: &[u8] = b"\x00\xff\x1b[31mRED\x1b]0;pwned\x07";
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(body);
        }
    });
    let out = common::bench_command()
        .args(["run", "--target", &format!("http://127.0.0.1:{port}")])
        .args([
            "--rate-type",
            "constant",
            "--rate",
            "1",
            "--max-requests",
            "1",
        ])
        .args(["--data", "prompt_tokens=8,output_tokens=4", "--no-output"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run");
    let err = common::text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !stream.iter().any(|&b| b == 0x1b || b == 0 || b == 7),
            "raw control characters printed: {:?}",
            common::text(stream)
        );
    }
    assert!(
        err.contains("\\x00\u{fffd}\\x1b[31mRED\\x1b]0;pwned\\x07"),
        "{err}"
    );
}
