//! The result is kept (issue 36, point 6): a run with no `--output` writes its JSON to a new
//! file, `bench-results/<UTC time>-<kind>.json` in its current directory, as it goes, and names
//! it on the last line of stderr; a second run never replaces it; `--no-output` (or a profile's
//! `output: []`) writes nothing; an interrupted run leaves its finished benchmarks there; a
//! place where the file cannot be made is refused before the run (exit 2, one line).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Killed;
use serde_json::Value;

const SECRET: &str = "sk-kept-result-secret-4242";

/// A short synchronous run against the simulator, in `cwd`, with `extra` flags.
fn run_in(cwd: &Path, extra: &[&str]) -> Output {
    common::bench_command()
        .current_dir(cwd)
        .args([
            "run",
            "--mock",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "3",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--quiet",
            "--console",
            "none",
            "--api-key",
            SECRET,
        ])
        .args(extra)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench")
}

fn err_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The files in `cwd/bench-results`, sorted (none when the directory is missing), but the
/// writer's hidden temporary files (`.NAME.PID.tmp`, renamed over NAME when complete).
fn kept(cwd: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cwd.join("bench-results"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("JSON")
}

/// The path the last stderr line names, checked against the one file written.
fn said_path(o: &Output, cwd: &Path) -> PathBuf {
    let lines = err_lines(o);
    let last = lines.last().expect("a last line");
    let rel = last
        .strip_prefix("results saved to ")
        .unwrap_or_else(|| panic!("last line names the file: {lines:?}"));
    cwd.join(rel)
}

#[test]
fn a_run_with_no_output_keeps_its_json_and_names_it_last() {
    let cwd = common::fresh("kept", "default");
    let out = run_in(&cwd, &[]);
    assert!(out.status.success(), "{:?}", err_lines(&out));
    let files = kept(&cwd);
    assert_eq!(files.len(), 1, "{files:?}");
    let path = said_path(&out, &cwd);
    assert_eq!(path, files[0]);
    let name = path.file_name().and_then(|n| n.to_str()).expect("name");
    // <UTC time in ISO 8601 basic form>-<kind>.json
    assert!(
        name.len() == "20261127T203706Z-synchronous.json".len()
            && name.ends_with("Z-synchronous.json")
            && name.as_bytes()[8] == b'T',
        "{name}"
    );
    let text = std::fs::read_to_string(&path).expect("kept file");
    assert!(!text.contains(SECRET), "the API key never reaches the file");

    // The same writer as --output: `bench report` re-renders it byte for byte ...
    let again = cwd.join("again.json");
    let re = common::bench(&[
        "report",
        path.to_str().expect("utf8"),
        "--console",
        "none",
        "--output",
        again.to_str().expect("utf8"),
    ]);
    assert!(re.status.success(), "{:?}", err_lines(&re));
    assert_eq!(std::fs::read_to_string(&again).expect("again"), text);

    // ... and it holds what a run with `--output x.json` writes: the same run, settings and
    // benchmarks, only the file's name differs.
    let named_dir = common::fresh("kept", "named");
    let x = named_dir.join("x.json");
    let named = run_in(&named_dir, &["--output", x.to_str().expect("utf8")]);
    assert!(named.status.success(), "{:?}", err_lines(&named));
    assert!(
        kept(&named_dir).is_empty(),
        "named outputs are exactly the outputs"
    );
    assert!(
        !err_lines(&named)
            .iter()
            .any(|l| l.starts_with("results saved")),
        "{:?}",
        err_lines(&named)
    );
    let (mut a, mut b) = (json(&path), json(&x));
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&a), keys(&b));
    let rel = path.strip_prefix(&cwd).expect("relative").to_path_buf();
    assert_eq!(a["config"]["output"], serde_json::json!([rel]));
    assert_eq!(a["config"]["default_output"], true);
    assert_eq!(b["config"]["default_output"], false);
    for v in [&mut a, &mut b] {
        let c = v["config"].as_object_mut().expect("config");
        c.remove("output");
        c.remove("default_output");
        // The simulator's port differs from run to run.
        c["worker"]
            .as_object_mut()
            .expect("worker")
            .remove("backend_target");
    }
    assert_eq!(a["config"], b["config"]);
    let labels = |v: &Value| -> Vec<Value> {
        v["benchmarks"]
            .as_array()
            .expect("benchmarks")
            .iter()
            .map(|b| b["label"].clone())
            .collect()
    };
    assert_eq!(labels(&a), labels(&b));
    assert_eq!(a["benchmarks"][0]["requests"]["completed"], 3);
    assert_eq!(b["benchmarks"][0]["requests"]["completed"], 3);
}

#[test]
fn a_second_run_never_replaces_the_first() {
    let cwd = common::fresh("kept", "twice");
    let first = run_in(&cwd, &[]);
    assert!(first.status.success(), "{:?}", err_lines(&first));
    let p1 = said_path(&first, &cwd);
    let before = std::fs::read(&p1).expect("first");
    // Same second or not, the same kind: a file of its own.
    let second = run_in(&cwd, &[]);
    assert!(second.status.success(), "{:?}", err_lines(&second));
    let p2 = said_path(&second, &cwd);
    assert_ne!(p1, p2);
    assert_eq!(std::fs::read(&p1).expect("first"), before, "untouched");
    assert_eq!(kept(&cwd), {
        let mut v = vec![p1, p2];
        v.sort();
        v
    });
}

#[test]
fn the_off_switch_writes_nothing() {
    let cwd = common::fresh("kept", "off");
    let out = run_in(&cwd, &["--no-output"]);
    assert!(out.status.success(), "{:?}", err_lines(&out));
    assert!(!cwd.join("bench-results").exists());
    assert!(
        !err_lines(&out).iter().any(|l| l.contains("results saved")),
        "{:?}",
        err_lines(&out)
    );
    // A profile's `output: []` is the same switch, and --show-config writes it so.
    let profile = cwd.join("p.yaml");
    std::fs::write(&profile, "output: []\n").expect("profile");
    let out = run_in(&cwd, &["--profile", profile.to_str().expect("utf8")]);
    assert!(out.status.success(), "{:?}", err_lines(&out));
    assert!(!cwd.join("bench-results").exists());
    let shown = run_in(&cwd, &["--no-output", "--show-config"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("\noutput: []\n"));
    // Naming files and turning them off at once is a usage error.
    let both = run_in(&cwd, &["--no-output", "--output", "x.json"]);
    assert_eq!(both.status.code(), Some(2));
    assert_eq!(err_lines(&both).len(), 1, "{:?}", err_lines(&both));
    assert!(err_lines(&both)[0].contains("--no-output"));
}

#[test]
fn an_interrupted_run_leaves_its_finished_benchmarks_in_the_default_file() {
    let cwd = common::fresh("kept", "sigint");
    let child = common::bench_command()
        .current_dir(&cwd)
        .args([
            "sweep",
            "--mock",
            "--max-seconds",
            "1",
            "--sweep-size",
            "6",
            "--max-concurrency",
            "16",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--console",
            "none",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bench");
    let mut child = Killed(child);
    // The file is claimed at the start, empty, and holds the run from its first benchmark on.
    let t0 = Instant::now();
    let file = loop {
        assert!(t0.elapsed() < Duration::from_secs(60), "no benchmark kept");
        if let Some(p) = kept(&cwd).first() {
            if std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > 0 {
                break p.clone();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(file.to_string_lossy().ends_with("-sweep.json"), "{file:?}");
    let ok = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(
        &mut child.0.stderr.take().expect("stderr piped"),
        &mut stderr,
    )
    .expect("stderr");
    let status = child.0.wait().expect("wait");
    let out = Output {
        status,
        stdout: Vec::new(),
        stderr,
    };
    assert_eq!(out.status.code(), Some(130), "{:?}", err_lines(&out));
    assert_eq!(said_path(&out, &cwd), file, "the path is still said last");
    let b = json(&file)["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .clone();
    assert!(b.len() >= 2, "{} benchmarks", b.len());
    assert_eq!(b.last().expect("one")["stop_reason"], "interrupted");
    for done in &b[..b.len() - 1] {
        assert_ne!(done["stop_reason"], "interrupted");
    }
}

#[test]
fn a_default_place_that_cannot_be_written_is_refused_before_the_run() {
    let cwd = common::fresh("kept", "blocked");
    // `bench-results` is a file: the directory cannot be made.
    std::fs::write(cwd.join("bench-results"), b"not a directory").expect("file");
    // No server listens there: a run that started would fail with exit 1, not 2.
    let out = common::bench_command()
        .current_dir(&cwd)
        .args([
            "run",
            "--target",
            "http://127.0.0.1:9",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "1",
            "--quiet",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench");
    assert_eq!(out.status.code(), Some(2), "{:?}", err_lines(&out));
    let lines = err_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("bench-results") && lines[0].contains("--no-output"),
        "{lines:?}"
    );
    assert_eq!(
        std::fs::read(cwd.join("bench-results")).expect("file"),
        b"not a directory"
    );
}
