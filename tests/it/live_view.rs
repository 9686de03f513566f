//! `--live` in a real terminal: tmux (installed by `.ci/setup`) runs a short `--mock` sweep
//! with `--live` in a pane; the test reads the pane (`tmux capture-pane -p`) as a user sees
//! it, presses `q` and checks the run ended as Ctrl-C ends one (the result file written, exit
//! 130 mid-run) or, once finished, left with its result (exit 0), and that the terminal is
//! given back: the alternate screen left, raw mode off (`stty -a` in the same pane), the
//! shell's next line shown. Without tmux the test is skipped locally and fails under CI.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A tmux server of the test's own (its own socket, no user configuration).
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What the pane shows now.
    fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "live"])
    }

    /// Waits (up to `within`) until the pane satisfies `ok`; returns what it showed.
    fn wait_for(&self, what: &str, within: Duration, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let p = self.pane();
            if ok(&p) {
                return p;
            }
            assert!(
                start.elapsed() < within,
                "the pane never showed {what}; it shows:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn alternate_on(&self) -> bool {
        self.run(&["display", "-p", "-t", "live", "#{alternate_on}"])
            .trim()
            == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Starts `bench sweep --mock --live` with `args` in a 150x45 pane, in `dir` (stdout to a
/// file, stderr the pane's terminal); after it exits the pane's shell writes its exit code and
/// `stty -a`, then says `SHELL-BACK`.
fn start(name: &str, dir: &Path, args: &str) -> Tmux {
    let tmux = Tmux {
        socket: format!("bench-live-{name}-{}", std::process::id()),
    };
    let script = format!(
        "cd '{}' && '{}' sweep --mock --data prompt_tokens=32,output_tokens=8 --max-concurrency 8 \
         --output run.json --live {args} > stdout.txt; echo $? > exit.txt; \
         stty -a > stty.txt; echo SHELL-BACK; sleep 300",
        dir.display(),
        env!("CARGO_BIN_EXE_bench"),
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "live",
        "-x",
        "150",
        "-y",
        "45",
        "sh",
        "-c",
        &script,
    ]);
    tmux
}

/// The exit code the pane's shell wrote, once the run is over.
fn exit_code(dir: &Path, within: Duration) -> i32 {
    let file: PathBuf = dir.join("exit.txt");
    let start = Instant::now();
    loop {
        if let Some(code) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return code;
        }
        assert!(start.elapsed() < within, "the run did not end after q");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The terminal is given back: the alternate screen left, raw mode off, the shell's line.
/// Returns what the pane then shows.
fn assert_restored(tmux: &Tmux, dir: &Path) -> String {
    let back = tmux.wait_for("the shell again", Duration::from_secs(20), |p| {
        p.contains("SHELL-BACK")
    });
    assert!(
        !tmux.alternate_on(),
        "still on the alternate screen:\n{back}"
    );
    let stty = std::fs::read_to_string(dir.join("stty.txt")).expect("stty -a");
    let modes: Vec<&str> = stty.split_whitespace().collect();
    for mode in ["icanon", "echo", "isig"] {
        assert!(
            modes.contains(&mode),
            "raw mode left on ({mode} off):\n{stty}"
        );
    }
    eprintln!("after:\n{back}");
    back
}

fn report(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).expect("run.json"))
        .expect("json")
}

fn skip() -> bool {
    if have_tmux() {
        return false;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is missing under CI (.ci/setup installs it)"
    );
    eprintln!("skipped: no tmux on PATH (run .ci/setup)");
    true
}

#[test]
fn the_live_view_shows_the_sweep_and_its_capacity_and_q_leaves_it() {
    if skip() {
        return;
    }
    let dir = common::fresh("live", "finished");
    // The simulator's DCGM exporter, for the GPUs' power beside the server's gauges.
    let sim = common::write_sim(&dir, "gpu_idle_w: 50\ngpu_per_seq_w: 10\n", None);
    let args = format!(
        "--max-seconds 1 --sweep-size 3 --mock-config '{}' --gpu-metrics /dcgm/metrics",
        sim.display()
    );
    let tmux = start("finished", &dir, &args);
    let first = tmux.wait_for("the running benchmark", Duration::from_secs(60), |p| {
        p.contains("bench sweep (live)") && p.contains(" req/s   in flight ")
    });
    eprintln!("first screen:\n{first}");
    let done = tmux.wait_for("the capacity", Duration::from_secs(120), |p| {
        p.contains("capacity ") && p.contains("run finished: q to leave")
    });
    eprintln!("last screen:\n{done}");
    assert!(tmux.alternate_on(), "the view is on the alternate screen");
    tmux.run(&["send-keys", "-t", "live", "q"]);
    assert_eq!(exit_code(&dir, Duration::from_secs(30)), 0);
    assert_restored(&tmux, &dir);

    // Every benchmark of the result is a row of the table, and the capacity is the result's.
    let run = report(&dir);
    for b in run["benchmarks"].as_array().expect("benchmarks") {
        let label = b["label"].as_str().expect("label");
        let row = done
            .lines()
            .find(|l| l.trim_start_matches('│').starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no row for {label}:\n{done}"));
        let rate = format!(
            "{:.2}",
            b["rates"]["requests_per_s"].as_f64().expect("rate")
        );
        assert!(row.contains(&rate), "{label}: {rate} not in {row}");
    }
    // The server's gauges and the GPUs' power as last scraped, in numbers.
    let now = done
        .lines()
        .find(|l| l.contains("server now: running "))
        .unwrap_or_else(|| panic!("no server gauges:\n{done}"));
    let watts = now
        .split("GPU power ")
        .nth(1)
        .and_then(|w| w.split_whitespace().next())
        .and_then(|w| w.parse::<f64>().ok());
    assert!(watts.is_some_and(|w| w >= 50.0), "GPU power: {now}");
    let max = run["capacity"]["max_requests_per_s"]
        .as_f64()
        .expect("capacity");
    assert!(
        done.contains(&format!("capacity {max:.2} req/s"))
            || done.contains(&format!("capacity >= {max:.2} req/s")),
        "capacity {max:.2} not shown:\n{done}"
    );
}

#[test]
fn q_stops_a_live_sweep_as_ctrl_c_does_and_gives_the_terminal_back() {
    if skip() {
        return;
    }
    let dir = common::fresh("live", "stopped");
    let tmux = start("stopped", &dir, "--max-seconds 3 --sweep-size 4");
    let shown = tmux.wait_for(
        "a finished benchmark",
        Duration::from_secs(60),
        // The first benchmark is a row of the table; a later one runs.
        |p| p.contains("│synchronous ") && !p.contains("[1/"),
    );
    eprintln!("before q:\n{shown}");
    tmux.run(&["send-keys", "-t", "live", "q"]);
    assert_eq!(
        exit_code(&dir, Duration::from_secs(60)),
        130,
        "Ctrl-C's code"
    );
    let back = assert_restored(&tmux, &dir);
    assert!(
        back.contains("run interrupted; the last benchmark is partial"),
        "{back}"
    );
    let run = report(&dir);
    let benchmarks = run["benchmarks"].as_array().expect("benchmarks");
    assert!(benchmarks.len() >= 2, "the finished ones are kept");
    assert_eq!(benchmarks[0]["label"], "synchronous");
    assert_eq!(
        benchmarks.last().expect("one")["stop_reason"],
        "interrupted"
    );
}
