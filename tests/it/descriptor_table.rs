//! `bench run` and `bench mock-server` grow their descriptor table before the first connection
//! (crates/cli/src/limits.rs, docs/reliability.md): Linux would otherwise grow it by doubling
//! while connections open, each growth stalling every thread that opens a socket for an RCU
//! grace period (docs/performance.md, "The descriptor table, grown before the run"). A process
//! started with only stdin, stdout and stderr begins with 64 slots.
#![cfg(target_os = "linux")]

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{mock_server, Killed};

/// The simulator, slow enough that a run's requests stay in flight. Only stdin, stdout and
/// stderr pass to a child (Rust's `Command` opens the rest close-on-exec), so it starts from
/// the kernel's 64 slots.
const SIMULATOR: &[&str] = &["--port", "0", "--step-base-ms", "200"];

/// A field of /proc/PID/status as a number.
fn status(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix(field))?;
    line.trim_start_matches(':').trim().parse().ok()
}

/// The soft open-file limit of a running process (/proc/PID/limits).
fn open_file_limit(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Waits (up to 20 s) until the process has a table at least as large as its limit allows,
/// capped at 65,536 slots; the sizes seen and the limit, for the assertion.
fn grown_table(pid: u32) -> (bool, Option<u64>, Option<u64>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (size, soft) = (status(pid, "FDSize"), open_file_limit(pid));
        let grown = matches!((size, soft), (Some(n), Some(s)) if n >= s.min(65_536));
        if grown || Instant::now() > deadline {
            return (grown, size, soft);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_simulator_grows_its_table_before_clients_connect() {
    let (server, _url) = mock_server(SIMULATOR);
    let pid = server.0.id();
    let (grown, size, soft) = grown_table(pid);
    assert!(grown, "FDSize {size:?} with an open-file limit of {soft:?}");
}

#[test]
fn a_run_grows_its_table_before_it_sends() {
    let (_server, url) = mock_server(SIMULATOR);
    let report = common::fresh("fdtable", "run").join("run.json");
    let client = common::bench_command()
        .args([
            "run",
            "--target",
            &url,
            "--rate-type",
            "constant",
            "--rate",
            "5",
        ])
        .args([
            "--max-seconds",
            "4",
            "--data",
            "prompt_tokens=8,output_tokens=16",
        ])
        .args(["--quiet", "--console", "none", "--output"])
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bench run");
    let mut client = Killed(client);
    let (grown, size, soft) = grown_table(client.0.id());
    let exited = client.0.try_wait().expect("status");
    assert!(
        grown,
        "FDSize {size:?} with an open-file limit of {soft:?} (exited: {exited:?})"
    );
    // The run itself is unharmed by it.
    let status = client.0.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(report.exists());
}
