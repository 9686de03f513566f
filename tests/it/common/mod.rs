//! Helpers shared by the integration tests' modules (`use crate::common;`).
//! Scratch directories, the real `bench` binary run against its in-process simulator
//! (`--mock`, optionally with a `--mock-config` file), and reading what it wrote.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

/// The scratch directory `bench-<prefix>-<name>-<pid>` under cargo's temporary directory for
/// tests (`target/tmp`), created if missing (what an earlier call put there stays); the rule is
/// `bench_test_support`'s, shared with the crates' own tests.
pub fn tmp(prefix: &str, name: &str) -> PathBuf {
    bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), &format!("{prefix}-{name}"))
}

/// [`tmp`], emptied first.
pub fn fresh(prefix: &str, name: &str) -> PathBuf {
    bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), &format!("{prefix}-{name}"))
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Held by the tests of one file that measure timings, so they run one at a time: on a 2-core
/// machine two of them at once would measure each other.
pub fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The directory the tests run `bench` in: a run with no `--output` keeps its result in
/// `bench-results/` under its current directory (docs/cli.md, "The result is kept"), which
/// must land in scratch space, never in the repository. Paths given to `bench` are absolute.
pub fn run_dir() -> PathBuf {
    tmp("cwd", "runs")
}

/// The `bench` binary as the tests run it: in [`run_dir`], with its default result file on as a
/// user has it (`RUST_LOG` and the rest are the caller's).
pub fn bench_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bench"));
    c.current_dir(run_dir());
    c
}

/// Runs the `bench` binary with `args` (`RUST_LOG=warn`) in [`run_dir`].
pub fn bench(args: &[&str]) -> Output {
    bench_command()
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Writes the simulator configuration `yaml` (lines of `--mock-config` keys) to
/// `dir/sim.yaml`, with `log_requests: <log>` added when given; returns the file's path.
pub fn write_sim(dir: &Path, yaml: &str, log: Option<&Path>) -> PathBuf {
    let mut y = yaml.to_string();
    if let Some(l) = log {
        y.push_str(&format!("log_requests: {}\n", l.display()));
    }
    let p = dir.join("sim.yaml");
    std::fs::write(&p, y).expect("write config");
    p
}

/// Runs `bench <cmd> --mock --quiet --console none` (`cmd` is `run` or `sweep`) with the
/// simulator configuration `cfg` when given, `--output <dir>/run.json` and `args`; asserts it
/// succeeded (naming `name`) and returns the whole JSON report.
pub fn mock_report(cmd: &str, name: &str, dir: &Path, cfg: Option<&Path>, args: &[&str]) -> Value {
    let json = dir.join("run.json");
    let mut c = bench_command();
    c.args([cmd, "--mock", "--quiet", "--console", "none"]);
    if let Some(cfg) = cfg {
        c.args(["--mock-config", cfg.to_str().expect("utf8")]);
    }
    let out = c
        .args(["--output", json.to_str().expect("utf8")])
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench");
    assert!(
        out.status.success(),
        "{name}: exit {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json")
}

/// The lines of a simulator's request log (written by a background thread: waits until they
/// stop coming).
pub fn read_log(log: &Path) -> Vec<Value> {
    let mut last = usize::MAX;
    for _ in 0..50 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let n = text.lines().count();
        if n == last {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).expect("log line"))
                .collect();
        }
        last = n;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the request log kept growing");
}

/// The number at `path` in `v`.
pub fn f(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{path:?} missing in {v}"))
}

/// A synchronous `bench run --mock` of `requests` requests with `backend` and `data` (plus
/// `extra` flags) against a simulator configured by `sim` that logs every request: the first
/// benchmark of the report and the log's lines. The scratch directory is removed after.
pub fn logged_synchronous_run(
    prefix: &str,
    name: &str,
    sim: &str,
    backend: &str,
    requests: u64,
    data: &str,
    extra: &[&str],
) -> (Value, Vec<Value>) {
    let dir = fresh(prefix, name);
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, sim, Some(&log));
    let max = requests.to_string();
    let base = [
        "--backend",
        backend,
        "--rate-type",
        "synchronous",
        "--max-requests",
        &max,
        "--data",
        data,
    ];
    let v = mock_report("run", name, &dir, Some(&cfg), &[&base[..], extra].concat());
    let entries = read_log(&log);
    let _ = std::fs::remove_dir_all(&dir);
    (v["benchmarks"][0].clone(), entries)
}

/// A child process, killed and reaped on every path out of a test.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bench mock-server <args>` as a user starts it (its stderr dropped), once it has printed
/// its address: the process and the URL it serves.
pub fn mock_server(args: &[&str]) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("mock-server")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bench mock-server");
    let stdout = child.stdout.take().expect("stdout");
    let server = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("first line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (server, url)
}

/// The cell of `column` in the first row of a report CSV, read by a real CSV reader (earlier
/// fields hold quoted commas); panics naming the column when it is missing.
pub fn csv_cell(csv_text: &str, column: &str) -> String {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header = reader.headers().expect("csv header").clone();
    let i = header
        .iter()
        .position(|h| h == column)
        .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    let row = reader
        .records()
        .next()
        .expect("a row")
        .expect("a valid row");
    row[i].to_string()
}

/// Asserts that `out` is a usage error: exit code 2 and one line on stderr, naming `culprit`;
/// `case` says which input failed in the assertion's message. Returns stderr.
pub fn usage_error(out: &Output, culprit: &str, case: &str) -> String {
    let err = text(&out.stderr);
    let at = if case.is_empty() {
        String::new()
    } else {
        format!("{case}: ")
    };
    assert_eq!(out.status.code(), Some(2), "{at}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{at}{err}");
    assert!(err.contains(culprit), "{at}{err}");
    err
}
