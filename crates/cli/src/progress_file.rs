//! `--progress-file PATH`: the run's progress as JSON lines (docs/reports.md, "Progress file";
//! the schema is docs/progress-schema.json): a `start` line, a `progress` line per tick (at
//! most one per `--progress-interval`, and the benchmark's last snapshot), a `benchmark` line
//! per finished benchmark with its headline figures, a `capacity` line when a sweep answers,
//! and an `end` line naming the result file. Each line is flushed as written, so that a
//! pod's sidecar or a CI step can follow the run (`tail -f`).
//!
//! The run's events only build a line and hand it to a thread of its own, which writes it: no
//! file I/O on the run's tasks.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use bench_runner::{BenchmarkReport, Capacity, Events};
use bench_scheduler::Progress;
use serde_json::{json, Value};

use crate::UsageError;

/// The version of the lines' format (`start` line's `progress_schema_version`).
pub const SCHEMA_VERSION: u32 = 1;

/// What the writer thread is sent.
enum Msg {
    Line(String),
    /// The last line: written, then the thread ends.
    End(String),
}

/// An open progress file: the observer to give the run, and the writer thread.
pub struct ProgressFile {
    path: PathBuf,
    tx: mpsc::Sender<Msg>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ProgressFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Opens `path`, emptied first when `fresh` (a plan empties it once; its sweeps and its own
/// last line append to it, each through a handle of its own, all in append mode). A folder
/// that does not exist, or a file that cannot be written, is a usage error naming it.
pub fn open(path: &Path, fresh: bool) -> anyhow::Result<ProgressFile> {
    let shown = path.display();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(UsageError::new(format!(
                "--progress-file {shown}: the folder {} does not exist",
                dir.display()
            ))
            .into());
        }
    }
    let cannot =
        |e: std::io::Error| UsageError::new(format!("--progress-file {shown}: cannot write: {e}"));
    if fresh {
        File::create(path).map_err(cannot)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(cannot)?;
    let (tx, rx) = mpsc::channel();
    let name = path.to_path_buf();
    let thread = std::thread::Builder::new()
        .name("progress-file".into())
        .spawn(move || write_lines(file, &name, rx))
        .map_err(|e| anyhow::anyhow!("starting the progress file's writer: {e}"))?;
    Ok(ProgressFile {
        path: path.to_path_buf(),
        tx,
        thread: Some(thread),
    })
}

/// Writes each line as it comes, flushed; after a failed write, warns once and drops the rest.
fn write_lines(mut file: File, path: &Path, rx: mpsc::Receiver<Msg>) {
    let mut failed = false;
    while let Ok(msg) = rx.recv() {
        let (line, last) = match msg {
            Msg::Line(l) => (l, false),
            Msg::End(l) => (l, true),
        };
        if !failed {
            let written = file
                .write_all(line.as_bytes())
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.flush());
            if let Err(e) = written {
                failed = true;
                tracing::warn!("--progress-file {}: writing failed: {e}", path.display());
            }
        }
        if last {
            break;
        }
    }
}

impl ProgressFile {
    /// The observer of one run writing to this file: `command` (`run`, `sweep`, `plan`) and,
    /// within a plan, the configuration's name on every line.
    pub fn events(&self, command: &str, config: Option<&str>, every: Duration) -> FileEvents {
        let events = FileEvents {
            tx: Mutex::new(self.tx.clone()),
            every,
            config: config.map(str::to_string),
            last_tick: Mutex::new(None),
        };
        events.send(json!({
            "event": "start",
            "command": command,
            "progress_schema_version": SCHEMA_VERSION,
            "bench_version": env!("CARGO_PKG_VERSION"),
        }));
        events
    }

    /// Writes the `end` line (the result file, every file written, the error when the run
    /// failed; within a plan, the configuration) and waits for the writer to finish.
    pub fn close(
        mut self,
        config: Option<&str>,
        result: Option<&Path>,
        files: &[PathBuf],
        error: Option<String>,
    ) {
        let mut line = json!({
            "event": "end",
            "unix_s": unix_now(),
            "result": result.map(|p| p.display().to_string()),
            "files": files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        });
        if let Some(e) = error {
            line["error"] = Value::String(e);
        }
        if let Some(c) = config {
            line["config"] = Value::String(c.to_string());
        }
        let _ = self.tx.send(Msg::End(line.to_string()));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The run's events as lines of the progress file.
pub struct FileEvents {
    // A `Sender` is `Sync` since Rust 1.72; the lock keeps the workspace's 1.85 honest about
    // it and is only ever taken by one event at a time.
    tx: Mutex<mpsc::Sender<Msg>>,
    every: Duration,
    config: Option<String>,
    /// The benchmark and the instant of the last tick written.
    last_tick: Mutex<Option<(usize, Instant)>>,
}

impl std::fmt::Debug for FileEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileEvents")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl FileEvents {
    fn send(&self, mut line: Value) {
        if let (Some(c), Some(o)) = (&self.config, line.as_object_mut()) {
            o.insert("config".into(), Value::String(c.clone()));
        }
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Msg::Line(line.to_string()));
        }
    }

    /// Whether the snapshot `p` is due: the benchmark's first and last, and one per interval.
    fn due(&self, p: &Progress) -> bool {
        let Ok(mut last) = self.last_tick.lock() else {
            return false;
        };
        let now = Instant::now();
        let due = p.finished
            || match *last {
                Some((i, at)) => i != p.index || now.duration_since(at) >= self.every,
                None => true,
            };
        if due {
            *last = Some((p.index, now));
        }
        due
    }
}

impl Events for FileEvents {
    fn benchmark_started(&self, index: usize, total: usize, strategy: &bench_core::Strategy) {
        self.send(json!({
            "event": "started",
            "unix_s": unix_now(),
            "index": index,
            "total": total,
            "label": strategy.label(),
        }));
    }

    fn progress(&self, p: &Progress) {
        if self.due(p) {
            self.send(progress_line(p));
        }
    }

    fn benchmark_finished(&self, index: usize, b: &BenchmarkReport) {
        self.send(benchmark_line(index, b));
    }

    fn capacity(&self, c: &Capacity) {
        self.send(json!({
            "event": "capacity",
            "unix_s": unix_now(),
            "max_requests_per_s": c.max_requests_per_s,
            "max_output_tokens_per_s": c.max_output_tokens_per_s,
            "max_measured_by": c.max_measured_by,
            "max_is_lower_bound": c.max_is_lower_bound,
            "knee_requests_per_s": c.knee_requests_per_s,
            "slo_max_requests_per_s": c.slo_max_requests_per_s,
        }));
    }

    fn hint(&self, text: &str) {
        self.send(json!({"event": "hint", "unix_s": unix_now(), "text": text}));
    }
}

/// The fields of the console's progress line (`progress::line`), as numbers.
fn progress_line(p: &Progress) -> Value {
    let ms = |s: Option<f64>| s.map(|v| v * 1e3);
    json!({
        "event": "progress",
        "unix_s": unix_now(),
        "index": p.index,
        "total": p.total,
        "label": p.label,
        "phase": p.phase.name(),
        "elapsed_s": p.elapsed.as_secs_f64(),
        "remaining_s": p.remaining.map(|r| r.as_secs_f64()),
        "sent": p.sent,
        "max_requests": p.max_requests,
        "completed_per_s": p.completed_rate,
        "in_flight": p.in_flight,
        "queued": p.queued,
        "completed": p.completed,
        "incomplete": p.incomplete,
        "errored": p.errored,
        "cancelled": p.cancelled,
        "mean_ttft_ms": ms(p.mean_ttft),
        "mean_itl_ms": ms(p.mean_itl),
        "silent": p.silent.len(),
        "finished": p.finished,
    })
}

/// A finished benchmark's headline figures, as its report in the result file holds them.
fn benchmark_line(index: usize, b: &BenchmarkReport) -> Value {
    let m = &b.metrics;
    let pct = |s: &bench_report::MetricSummary, p: &str| s.percentiles.get(p).copied();
    json!({
        "event": "benchmark",
        "unix_s": unix_now(),
        "index": index,
        "label": b.label,
        "stop_reason": b.stop_reason,
        "duration_s": b.duration_s,
        "completed": b.requests.completed,
        "incomplete": b.requests.incomplete,
        "errored": b.requests.errored,
        "target_rate": b.rates.target_rate,
        "requests_per_s": b.rates.requests_per_s,
        "output_tokens_per_s": b.rates.output_tokens_per_s,
        "ttft_p50_ms": m.ttft_ms.median,
        "ttft_p99_ms": pct(&m.ttft_ms, "p99"),
        "itl_p50_ms": m.itl_ms.median,
        "itl_p99_ms": pct(&m.itl_ms, "p99"),
        "e2el_p50_ms": m.e2el_ms.median,
        "e2el_p99_ms": pct(&m.e2el_ms, "p99"),
    })
}

/// Seconds since the Unix epoch, now.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
