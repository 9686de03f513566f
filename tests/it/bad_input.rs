//! The bad-input matrix (issue 13): flags, profiles, data files, tokenizers, output paths and
//! targets, table-driven. Every case must exit 2 with one line on stderr that names the
//! culprit, never panic, and send nothing to the server (a listener counts connections).

use crate::common;

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One case: the arguments after `bench` (`{T}` is the listener's URL, `{D}` the fixture
/// directory) and a piece of text the error line must contain.
struct Case {
    args: Vec<String>,
    culprit: String,
}

fn fixtures() -> PathBuf {
    let d = common::tmp("bad-input", "fixtures");
    std::fs::create_dir_all(d.join("dir.json")).expect("mkdir");
    let w = |name: &str, text: &[u8]| std::fs::write(d.join(name), text).expect("write");
    w("empty.jsonl", b"");
    w("blank.txt", b"\n\n\n");
    w("nocol.csv", b"a,b\n1,2\n");
    w("notlist.json", b"{\"prompt\": \"x\"}");
    w("garbage.json", b"\xff\xfe not json at all");
    w("nocol.jsonl", b"{\"text_x\": \"hello\"}\n");
    w("tok-garbage.json", b"this is not a tokenizer");
    w("tok-empty.json", b"{}");
    w("bad.yaml", b"rate_type: [constant\n");
    w("binary.yaml", b"\x00\x01\x02\xff");
    w("list.yaml", b"- 1\n- 2\n");
    w("mock-bad.yaml", b"faults:\n  reset: 2\n");
    w("mock-typo.yaml", b"step_bse_ms: 3\n");
    w("report-bad.json", b"{\"schema_version\": 1");
    let row =
        b"{\"timestamp\": 0, \"input_length\": 16, \"output_length\": 4, \"hash_ids\": [1]}\n";
    w("trace.jsonl", row);
    w(
        "trace-bad.jsonl",
        &[&row[..], b"{\"timestamp\": 5, \"input_length\": 1\xff}\n"].concat(),
    );
    w(
        "report-new.json",
        b"{\"schema_version\": 999, \"benchmarks\": []}",
    );
    d
}

/// Profile files: key, bad value (the file is written per case).
const PROFILE_BAD: &[(&str, &str, &str)] = &[
    ("max_secnds", "3", "max_secnds"),
    ("max_seconds", "soon", "max_seconds"),
    ("max_seconds", "-4", "max_seconds: -4 is not a positive"),
    ("max_seconds", "0", "max_seconds: 0 is not a positive"),
    ("max_requests", "-1", "max_requests"),
    ("max_requests", "0", "max requests"),
    ("max_errors", "0", "max errors"),
    ("max_error_rate", "1.5", "error rate"),
    ("max_error_rate", "0", "error rate"),
    ("rate_type", "fast", "fast"),
    ("rate", "[1, x]", "rate"),
    ("rate", "\"1,,y\"", "y"),
    ("rate", "-3", "rate"),
    ("backend", "grpc", "grpc"),
    ("console", "fancy", "console"),
    ("warmup", "-0.5", "warmup"),
    ("cooldown", "1.5x", "cooldown"),
    ("burstiness", "nope", "burstiness"),
    ("seed", "-1", "seed"),
    ("sweep_size", "many", "sweep_size"),
    ("sweep_rate_type", "burst", "sweep_rate_type"),
    ("max_concurrency", "-2", "max_concurrency"),
    ("output", "[\"x.txt\"]", "x.txt"),
    ("goodput", "\"ttft:abc\"", "goodput"),
    ("percentile_metrics", "\"ttft,bogus\"", "bogus"),
    ("metric_percentiles", "\"101\"", "percentile"),
    ("data", "\"prompt_tokens=abc\"", "prompt_tokens"),
    ("http2", "maybe", "http2"),
    ("source_address", "[\"nope\"]", "source_address"),
    ("target", "\"ftp://h\"", "ftp://h"),
    ("num_prompts", "-5", "num_prompts"),
    ("repeat", "0", "repeat"),
    ("repeat", "many", "repeat"),
    ("repeat_until", "\"200%\"", "repeat_until"),
    ("precision", "abc", "precision"),
    ("precision", "150%", "precision"),
    ("precision_budget", "0.5", "precision_budget"),
];

fn cases(dir: &Path) -> Vec<Case> {
    let d = dir.display().to_string();
    let mut v: Vec<Case> = Vec::new();
    let mut add = |args: &str, culprit: &str| {
        v.push(Case {
            args: args
                .split(' ')
                .filter(|a| !a.is_empty())
                .map(|a| a.replace("{D}", &d).replace('~', " "))
                .collect(),
            culprit: culprit.replace("{D}", &d),
        })
    };
    let run = "run --target {T} --rate-type constant --rate 5 --max-seconds 1";
    // Numbers: negative, not a number, zero or out of range, for every numeric flag.
    for (flag, bad, culprit) in [
        ("--max-seconds", "-1", "--max-seconds: -1 is not a positive"),
        ("--max-seconds", "0", "--max-seconds: 0 is not a positive"),
        ("--max-seconds", "abc", "--max-seconds"),
        (
            "--max-seconds",
            "nan",
            "--max-seconds: NaN is not a positive",
        ),
        (
            "--max-seconds",
            "inf",
            "--max-seconds: inf is not a positive",
        ),
        ("--max-requests", "-1", "--max-requests"),
        ("--max-requests", "0", "max requests"),
        ("--max-requests", "1.5", "--max-requests"),
        ("--max-requests", "x", "--max-requests"),
        ("--max-errors", "0", "max errors"),
        ("--max-errors", "-3", "--max-errors"),
        ("--max-errors", "many", "--max-errors"),
        ("--max-error-rate", "0", "error rate"),
        ("--max-error-rate", "1.01", "error rate"),
        ("--max-error-rate", "-0.2", "error rate"),
        ("--max-error-rate", "half", "--max-error-rate"),
        ("--max-concurrency", "-1", "--max-concurrency"),
        ("--max-concurrency", "x", "--max-concurrency"),
        ("--max-concurrency", "99999999999", "--max-concurrency"),
        ("--burstiness", "-1", "burstiness"),
        ("--burstiness", "0", "burstiness"),
        ("--burstiness", "x", "--burstiness"),
        ("--seed", "-1", "--seed"),
        ("--seed", "x", "--seed"),
        ("--num-prompts", "-5", "--num-prompts"),
        ("--num-prompts", "0", "max requests"),
        ("--num-prompts", "lots", "--num-prompts"),
        ("--warmup", "-0.1", "-0.1"),
        ("--warmup", "-3", "warmup"),
        ("--warmup", "abc", "abc"),
        ("--warmup", "5x", "5x"),
        ("--warmup", "-2s", "warmup"),
        ("--warmup", "1.5req", "1.5req"),
        ("--cooldown", "-0.1", "cooldown"),
        ("--cooldown", "zz", "zz"),
        ("--cooldown", "-1s", "cooldown"),
        ("--source-address", "nope", "`nope`"),
        (
            "--source-address",
            "127.0.0.9-127.0.0.1",
            "127.0.0.9-127.0.0.1",
        ),
        (
            "--source-address",
            "127.0.0.1-127.0.255.255",
            "127.0.0.1-127.0.255.255",
        ),
        // TEST-NET-1: never an address of this machine.
        ("--source-address", "192.0.2.7", "192.0.2.7"),
        ("--repeat", "0", "--repeat 0"),
        ("--repeat", "-2", "--repeat -2"),
        ("--repeat", "x", "--repeat x"),
        ("--repeat", "2.5", "--repeat 2.5"),
        ("--repeat", "1001", "--repeat 1001"),
        ("--repeat-until", "0%", "--repeat-until 0%"),
        ("--repeat-until", "150%", "--repeat-until 150%"),
        ("--repeat-until", "-1", "--repeat-until -1"),
        ("--repeat-until", "tight", "--repeat-until tight"),
        ("--precision", "0", "--precision"),
        ("--precision", "abc", "--precision"),
        ("--precision", "150%", "--precision"),
        ("--precision", "-5%", "--precision"),
        ("--precision-budget", "-1", "--precision-budget"),
        ("--precision-budget", "x", "--precision-budget"),
        (
            "--precision 5% --precision-budget",
            "0.5",
            "--precision-budget",
        ),
        ("--precision 5% --cooldown", "0.1", "--cooldown"),
    ] {
        let base = if flag == "--max-seconds" {
            "run --target {T} --rate-type constant --rate 5"
        } else {
            run
        };
        add(&format!("{base} {flag} {bad}"), culprit);
    }
    // Rates and load shapes.
    for (args, culprit) in [
        (
            "run --target {T} --rate-type constant --rate 5 --max-seconds 1 --repeat-until 2%",
            "--repeat-until",
        ),
        (
            "run --target {T} --rate-type constant --rate 5 --max-seconds 1 --repeat 2 --repeat-until 2%",
            "at least 3 trials",
        ),
        (
            "run --target {T} --rate-type constant --rate 5 --max-seconds 1 --repeat 2 --data prompt_tokens=8,output_tokens=4,turns=2",
            "--repeat",
        ),
        (
            "run --target {T} --rate-type constant --rate 5 --max-seconds 1 --repeat 2 --shard 0/2 --start-at 2030-01-01T00:00:00Z",
            "repeated trials (--repeat) run in one process",
        ),
        ("run --target {T} --rate-type constant --rate -5 --max-seconds 1", "-5"),
        ("run --target {T} --rate-type constant --rate 0 --max-seconds 1", "rate"),
        ("run --target {T} --rate-type constant --rate x --max-seconds 1", "`x`"),
        ("run --target {T} --rate-type constant --rate 1,,q --max-seconds 1", "`q`"),
        ("run --target {T} --rate-type constant --rate nan --max-seconds 1", "rate"),
        ("run --target {T} --rate-type constant --rate inf --max-seconds 1", "rate"),
        ("run --target {T} --rate-type constant --rate 1e12 --max-seconds 1", "rate"),
        ("run --target {T} --rate-type constant --max-seconds 1", "rate"),
        ("run --target {T} --rate-type poisson --max-seconds 1", "rate"),
        ("run --target {T} --rate-type poisson --rate -1 --max-seconds 1", "-1"),
        ("run --target {T} --rate-type concurrent --rate 1.5 --max-seconds 1", "1.5"),
        ("run --target {T} --rate-type concurrent --rate 0 --max-seconds 1", "rate"),
        ("run --target {T} --rate-type concurrent --rate -4 --max-seconds 1", "-4"),
        ("run --target {T} --rate-type burst --rate 0", "rate"),
        ("run --target {T} --rate-type burst --rate 2.5", "2.5"),
        ("run --target {T} --rate-type warp --rate 1", "warp"),
        ("run --target {T} --rate-type --rate 1", "--rate-type"),
        ("run --target {T} --max-seconds 1", "--rate-type"),
        ("run --target {T} --rate-type sweep --sweep-size 1", "sweep"),
        ("run --target {T} --rate-type sweep --sweep-size -3", "--sweep-size"),
        ("run --target {T} --rate-type sweep --sweep-rate-type burst", "burst"),
        ("sweep --target {T} --rate-type constant", "--rate-type"),
        ("sweep --target {T} --sweep-size 0", "sweep"),
        ("sweep --target {T} --sweep-size x", "--sweep-size"),
        ("sweep --target {T} --max-seconds -1", "--max-seconds: -1"),
        ("run --target {T} --rate-type constant --rate 5 --num-prompts 4 --max-requests 3", "--num-prompts 4"),
        ("run --target {T} --rate-type poisson --rate 5 --max-seconds 1 --burstiness -2", "burstiness"),
        ("run --target {T} --rate-type constant --rate 5 --max-seconds 1 --warmup 0.6 --cooldown 0.6", "warmup"),
        // The flag typed is named (issue 36: `--speedup 0` said `--rate: ...`).
        ("run --target {T} --data trace={D}/trace.jsonl --speedup 0", "--speedup: speedup must be a positive number"),
        ("run --target {T} --data trace={D}/trace.jsonl --speedup 2e6", "--speedup: speedup must be a positive number"),
        // A trace that is not UTF-8: its line, byte and column, as a data file's (issue 36).
        ("trace {D}/trace-bad.jsonl", "trace-bad.jsonl line 2: not UTF-8 text (byte 0xff at column 35)"),
        ("trace trace={D}/trace-bad.jsonl,format=mooncake", "line 2: not UTF-8 text (byte 0xff at column 35)"),
        ("run --target {T} --data trace={D}/trace-bad.jsonl", "line 2: not UTF-8 text (byte 0xff at column 35)"),
    ] {
        add(args, culprit);
    }
    // Enumerated and structured flags.
    for (extra, culprit) in [
        ("--backend grpc", "grpc"),
        ("--backend ~", "backend"),
        ("--console fancy", "fancy"),
        ("--percentile-metrics ttft,bogus", "bogus"),
        ("--percentile-metrics ~", "percentile"),
        ("--metric-percentiles 101", "101"),
        ("--metric-percentiles -5", "-5"),
        ("--metric-percentiles abc", "abc"),
        ("--goodput ttft:abc", "ttft"),
        ("--goodput bogus:100", "bogus"),
        ("--goodput ttft", "ttft"),
        ("--ignore-eos perhaps", "--ignore-eos"),
        ("--bogus-flag 1", "--bogus-flag"),
        ("--mock-config {D}/x.yaml", "--mock"),
        ("--quiet=3", "--quiet"),
    ] {
        add(&format!("{run} {extra}"), culprit);
    }
    // Targets.
    let tail = "--rate-type constant --rate 5 --max-seconds 1";
    for (target, culprit) in [
        ("ftp://127.0.0.1:9", "ftp://127.0.0.1:9"),
        ("127.0.0.1:9", "scheme"),
        ("http://", "http://"),
        ("http://127.0.0.1:99999", "99999"),
        ("http://127.0.0.1:0", "port"),
        ("http://127.0.0.1:", "port"),
        ("http://127.0.0.1:abc", "127.0.0.1:abc"),
        ("not~a~url", "not a url"),
        ("~", "target"),
        ("http://u:p@127.0.0.1:9", "credentials"),
        ("http://[::1", "target"),
        ("https://", "https://"),
    ] {
        add(&format!("run --target {target} {tail}"), culprit);
    }
    add(&format!("run --mock --target {{T}} {tail}"), "--mock");
    add(&format!("run {tail}"), "--target");
    add("sweep", "--target");
    // Data files and synthetic data.
    for (data, culprit) in [
        ("{D}/missing.jsonl", "missing.jsonl"),
        ("{D}/dir.json", "directory"),
        ("{D}", "{D}"),
        ("{D}/empty.jsonl", "empty.jsonl"),
        ("{D}/blank.txt", "blank.txt"),
        ("{D}/nocol.csv", "nocol.csv"),
        ("{D}/nocol.jsonl", "nocol.jsonl"),
        ("{D}/notlist.json", "notlist.json"),
        ("{D}/garbage.json", "garbage.json"),
        ("prompt_tokens=abc", "abc"),
        ("prompt_tokens=0,output_tokens=5", "prompt_tokens"),
        ("prompt_tokens=-5", "-5"),
        ("prompt_tokens=10,output_tokens=x", "output_tokens"),
        ("prompt_tokens=10,bogus=3", "bogus"),
        ("prompt_tokens=10,output_tokens=0", "output_tokens"),
        ("prompt_tokens=10,prompt_tokens_stdev=-1", "stdev"),
        ("path={D}/missing.csv", "missing.csv"),
        ("sharegpt:{D}/missing.json", "missing.json"),
        ("=", "data"),
    ] {
        add(&format!("{run} --data {data}"), culprit);
    }
    // Tokenizers.
    for (p, culprit) in [
        ("{D}/missing-tokenizer.json", "missing-tokenizer.json"),
        ("{D}/tok-garbage.json", "tok-garbage.json"),
        ("{D}/tok-empty.json", "tok-empty.json"),
        ("{D}/dir.json", "dir.json"),
    ] {
        add(&format!("{run} --processor {p}"), culprit);
    }
    // Output paths: checked before the run.
    for (out, culprit) in [
        ("/missing-dir/x.json", "/missing-dir"),
        ("{D}/missing/x.csv", "missing"),
        ("{D}/report.txt", "report.txt"),
        ("{D}/report", "report"),
        ("{D}/dir.json", "directory"),
        ("/proc/bench-x.json", "/proc"),
        ("{D}/a.json --output {D}/b.pdf", "b.pdf"),
        ("{D}/ok.csv --output /missing-dir/x.json", "/missing-dir"),
    ] {
        add(&format!("{run} --output {out}"), culprit);
    }
    // Profile files.
    for (file, culprit) in [
        ("{D}/missing.yaml", "missing.yaml"),
        ("{D}/bad.yaml", "bad.yaml"),
        ("{D}/binary.yaml", "binary.yaml"),
        ("{D}/list.yaml", "list.yaml"),
        ("{D}/dir.json", "dir.json"),
    ] {
        add(&format!("run --target {{T}} --profile {file}"), culprit);
    }
    // Simulator configs.
    for (file, culprit) in [
        ("{D}/mock-bad.yaml", "faults.reset"),
        ("{D}/mock-typo.yaml", "step_bse_ms"),
        ("{D}/missing-mock.yaml", "missing-mock.yaml"),
    ] {
        add(&format!("run --mock --mock-config {file} {tail}"), culprit);
        add(&format!("mock-server --port 0 --config {file}"), culprit);
    }
    for (args, culprit) in [
        ("mock-server --port 0 --reset-rate 1.5", "faults.reset"),
        ("mock-server --port 0 --fail-503 -0.5", "503"),
        ("mock-server --port 70000", "--port"),
        ("mock-server --port 0 --stall-rate x", "--stall-rate"),
        (
            "mock-server --port 0 --tokenizer {D}/missing-tokenizer.json",
            "missing-tokenizer.json",
        ),
        ("report {D}/missing-run.json", "missing-run.json"),
        ("report {D}/report-bad.json", "report-bad.json"),
        ("report {D}/report-new.json", "999"),
        ("report {D}/garbage.json", "garbage.json"),
        ("frobnicate", "frobnicate"),
    ] {
        add(args, culprit);
    }
    v
}

/// A listener that counts the connections it receives (and reads whatever comes).
fn listener() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            s.fetch_add(1, Ordering::SeqCst);
            let mut c = c;
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
        }
    });
    (url, seen)
}

/// Runs one case; `Err` says what was wrong.
fn check(case: &Case, url: &str, dir: &Path) -> Result<(), String> {
    let args: Vec<String> = case.args.iter().map(|a| a.replace("{T}", url)).collect();
    let out = common::bench_command()
        .args(&args)
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .env_remove("BENCH_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let show = || {
        format!(
            "bench {}\n  exit {:?}\n  stderr: {err}",
            args.join(" "),
            out.status.code()
        )
    };
    if err.contains("panicked") {
        return Err(format!("PANIC: {}", show()));
    }
    if out.status.code() != Some(2) {
        return Err(format!("not exit 2: {}", show()));
    }
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != 1 {
        return Err(format!("not one line: {}", show()));
    }
    if !lines[0].contains(&case.culprit) {
        return Err(format!("culprit {:?} not named: {}", case.culprit, show()));
    }
    Ok(())
}

fn run_all(cases: Vec<Case>, url: &str, dir: &Path) -> Vec<String> {
    let cases = Arc::new(cases);
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (cases, next, url, dir) = (
                cases.clone(),
                next.clone(),
                url.to_string(),
                dir.to_path_buf(),
            );
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(c) = cases.get(i) else { break };
                    if let Err(e) = check(c, &url, &dir) {
                        failures.push(e);
                    }
                }
                failures
            })
        })
        .collect();
    workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect()
}

#[test]
fn every_bad_input_exits_2_with_one_line_naming_the_culprit_and_sends_nothing() {
    let dir = fixtures();
    let (url, seen) = listener();
    let mut all = cases(&dir);
    // Profile files with one bad key each.
    for (i, (key, value, culprit)) in PROFILE_BAD.iter().enumerate() {
        let p = dir.join(format!("profile-{i}.yaml"));
        let text = if *key == "target" {
            format!("{key}: {value}\nrate_type: constant\nrate: 1\n")
        } else if *key == "rate_type" || *key == "rate" {
            format!("{key}: {value}\n")
        } else {
            format!("rate_type: constant\nrate: 1\nmax_seconds: 1\n{key}: {value}\n")
        };
        let text = if *key == "max_seconds" {
            text.replace("max_seconds: 1\n", "")
        } else {
            text
        };
        std::fs::write(&p, text).expect("write");
        let target = if *key == "target" {
            ""
        } else {
            "--target {T} "
        };
        let rt = if *key == "rate" {
            "--rate-type constant "
        } else {
            ""
        };
        all.push(Case {
            args: format!("run {target}{rt}--profile {}", p.display())
                .split(' ')
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect(),
            culprit: culprit.to_string(),
        });
    }
    let n = all.len();
    assert!(n >= 120, "the matrix has {n} cases");
    let failures = run_all(all, &url, &dir);
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "a bad input reached the server"
    );
    eprintln!("bad-input matrix: {n} cases");
}

/// A usage error names the setting as the user gave it: the flag on the command line, the
/// profile file and its key in a profile (issue 22, point 8: `--rate -5` said `rate: rate must
/// be ...`).
#[test]
fn a_usage_error_names_the_flag_or_the_profile_key_as_given() {
    let run = |args: &[&str]| {
        let out = common::bench_command()
            .args(args)
            .env("RUST_LOG", "off")
            .output()
            .expect("run bench");
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    };
    let e = run(&[
        "run",
        "--mock",
        "--rate-type",
        "constant",
        "--rate",
        "-5",
        "--max-requests",
        "1",
    ]);
    assert!(
        e.starts_with("error: --rate: rate must be a positive number"),
        "{e}"
    );
    let p = common::tmp("bad-input", "keys").join("bad-key.yaml");
    std::fs::write(
        &p,
        "rate_type: constant\nrate: -5\nmax_requests: 1\nthink_time: soon\n",
    )
    .expect("write");
    let file = p.display().to_string();
    // A profile's `speedup:` is named as its key, not `rate`.
    let sp = common::tmp("bad-input", "keys").join("bad-speedup.yaml");
    let trace = common::tmp("bad-input", "keys").join("trace.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"input_length\": 16, \"output_length\": 4, \"hash_ids\": [1]}\n",
    )
    .expect("write");
    std::fs::write(
        &sp,
        format!("data: trace={}\nspeedup: 0\n", trace.display()),
    )
    .expect("write");
    let e = run(&["run", "--mock", "--profile", sp.to_str().expect("utf8")]);
    assert!(
        e.starts_with(&format!(
            "error: {}: speedup: speedup must be",
            sp.display()
        )),
        "{e}"
    );
    for (extra, said) in [
        (&[][..], format!("error: {file}: rate: rate must be")),
        (&["--rate", "2"][..], format!("error: {file}: think_time: ")),
        (
            &["--rate", "2", "--think-time", "x"][..],
            "error: --think-time: ".to_string(),
        ),
    ] {
        let mut args = vec!["run", "--mock", "--profile", file.as_str()];
        args.extend_from_slice(extra);
        let e = run(&args);
        assert!(e.starts_with(&said), "{extra:?}: {e}");
    }
    // Issue 44: `max_seconds: 0` in a profile names the file and its key; a percentage flag
    // speaks in percent; a folder given as a trace is said to be a folder.
    let ms = common::tmp("bad-input", "keys").join("zero-seconds.yaml");
    std::fs::write(
        &ms,
        "rate_type: sweep
max_seconds: 0
",
    )
    .expect("write");
    let e = run(&["run", "--mock", "--profile", ms.to_str().expect("utf8")]);
    assert_eq!(
        e,
        format!(
            "error: {}: max_seconds: 0 is not a positive number of seconds",
            ms.display()
        )
    );
    let e = run(&[
        "run",
        "--mock",
        "--rate-type",
        "constant",
        "--rate",
        "1",
        "--request-cancellation-rate",
        "150",
    ]);
    assert_eq!(
        e,
        "error: --request-cancellation-rate: 150 is not a percentage above 0 and at most 100 (10 cancels 10% of the requests)"
    );
    let folder = common::tmp("bad-input", "keys");
    let e = run(&["trace", folder.to_str().expect("utf8")]);
    assert!(e.contains("is a folder, not a trace file"), "{e}");
}
