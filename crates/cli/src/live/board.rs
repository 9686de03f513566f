//! What the live view shows, kept up to date by the run's events: the running benchmark (its
//! latest progress snapshot and the history of its mean TTFT and ITL), the sweep so far (one
//! row per finished benchmark, with the server's and the GPUs' figures when scraped), the
//! server's gauges as they stand, the capacity once the sweep answers, and the notes (hints,
//! logs) said meanwhile.

use std::collections::VecDeque;

use bench_runner::{BenchmarkReport, Capacity, Events};
use bench_scheduler::Progress;

/// Points kept in each sparkline.
pub const HISTORY: usize = 240;
/// Notes kept (the view shows the last few).
const NOTES: usize = 50;

/// One finished benchmark, as the sweep's table shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    /// The rate offered (open loop), req/s.
    pub offered: Option<f64>,
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub ttft_p50_ms: f64,
    pub itl_p50_ms: f64,
    pub e2el_p99_ms: Option<f64>,
    pub completed: u64,
    pub errored: u64,
    /// The server's mean running and waiting requests and KV-cache usage (0..1) over the
    /// benchmark, when scraped.
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_usage: Option<f64>,
    /// The GPUs' mean power, watts, when scraped.
    pub gpu_power_w: Option<f64>,
}

impl Row {
    pub fn of(b: &BenchmarkReport) -> Row {
        let sm = b.server_metrics.as_ref().map(|m| &m.summary);
        let gauge = |g: Option<&bench_servermetrics::GaugeSummary>| g.map(|g| g.mean);
        Row {
            label: b.label.clone(),
            offered: b.rates.target_rate,
            requests_per_s: b.rates.requests_per_s,
            output_tokens_per_s: b.rates.output_tokens_per_s,
            ttft_p50_ms: b.metrics.ttft_ms.median,
            itl_p50_ms: b.metrics.itl_ms.median,
            e2el_p99_ms: b.metrics.e2el_ms.percentiles.get("p99").copied(),
            completed: b.requests.completed,
            errored: b.requests.errored,
            running: sm.and_then(|s| gauge(s.running.as_ref())),
            waiting: sm.and_then(|s| gauge(s.waiting.as_ref())),
            kv_usage: sm.and_then(|s| gauge(s.kv_usage.as_ref())),
            gpu_power_w: b.gpu_metrics.as_ref().and_then(|g| g.power_w_mean),
        }
    }
}

/// Where the run is, as the view draws it.
#[derive(Debug, Clone, Default)]
pub struct Board {
    /// `bench sweep`, `bench run`, `bench plan`.
    pub title: String,
    /// The sweep's part the running benchmark belongs to (`probe`, `ladder`, ...).
    pub role: Option<&'static str>,
    /// The running benchmark's latest snapshot.
    pub progress: Option<Progress>,
    /// Its mean TTFT and ITL at each snapshot, microseconds.
    pub ttft_us: VecDeque<u64>,
    pub itl_us: VecDeque<u64>,
    /// The finished benchmarks.
    pub rows: Vec<Row>,
    pub capacity: Option<Capacity>,
    /// The server's gauges and the GPUs' power as last read (while a benchmark runs).
    pub gauges: Option<bench_runner::ServerGauges>,
    /// Hints and log lines said during the run, oldest first.
    pub notes: VecDeque<String>,
    /// `q` was pressed: the run is stopping.
    pub stopping: bool,
    /// The run is over (the view waits for `q` or its time out).
    pub over: bool,
}

impl Board {
    pub fn note(&mut self, text: &str) {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if self.notes.len() == NOTES {
                self.notes.pop_front();
            }
            self.notes.push_back(strip_ansi(line));
        }
    }

    fn push(history: &mut VecDeque<u64>, seconds: Option<f64>) {
        if let Some(s) = seconds {
            if history.len() == HISTORY {
                history.pop_front();
            }
            history.push_back((s * 1e6).round() as u64);
        }
    }
}

/// `text` without its terminal colour codes (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The board behind a lock, fed by the run's events.
#[derive(Debug, Default)]
pub struct Shared(pub std::sync::Mutex<Board>);

impl Shared {
    pub fn with(&self, f: impl FnOnce(&mut Board)) {
        if let Ok(mut b) = self.0.lock() {
            f(&mut b);
        }
    }

    /// A copy to draw from (the lock is not held while drawing).
    pub fn snapshot(&self) -> Board {
        self.0.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Events for Shared {
    fn sweep_step(&self, _index: usize, step: &bench_profile::SweepStep) {
        use bench_profile::SweepRole;
        let role = match step.role {
            SweepRole::Probe => "probe",
            SweepRole::Ladder => "ladder",
            SweepRole::Rate => "rate",
            SweepRole::Refine => "SLO search",
        };
        self.with(|b| b.role = Some(role));
    }

    fn benchmark_started(&self, _index: usize, _total: usize, _strategy: &bench_core::Strategy) {
        self.with(|b| {
            b.ttft_us.clear();
            b.itl_us.clear();
        });
    }

    fn progress(&self, p: &Progress) {
        self.with(|b| {
            if b.progress.as_ref().is_some_and(|q| q.index != p.index) {
                b.ttft_us.clear();
                b.itl_us.clear();
            }
            Board::push(&mut b.ttft_us, p.mean_ttft);
            Board::push(&mut b.itl_us, p.mean_itl);
            b.progress = Some(p.clone());
        });
    }

    fn benchmark_finished(&self, _index: usize, report: &BenchmarkReport) {
        let row = Row::of(report);
        self.with(|b| b.rows.push(row));
    }

    fn capacity(&self, c: &Capacity) {
        self.with(|b| b.capacity = Some(c.clone()));
    }

    fn server_gauges(&self, g: &bench_runner::ServerGauges) {
        self.with(|b| b.gauges = Some(*g));
    }

    fn wants_server_gauges(&self) -> bool {
        true
    }

    fn hint(&self, text: &str) {
        self.with(|b| b.note(&format!("hint: {text}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_lose_their_colour_codes_and_keep_the_last_ones() {
        let mut b = Board::default();
        b.note("\u{1b}[33m WARN\u{1b}[0m bench: request errored");
        assert_eq!(
            b.notes.back().map(String::as_str),
            Some(" WARN bench: request errored")
        );
        for i in 0..(NOTES + 5) {
            b.note(&format!("n{i}"));
        }
        assert_eq!(b.notes.len(), NOTES);
        assert_eq!(
            b.notes.back().map(String::as_str),
            Some(&*format!("n{}", NOTES + 4))
        );
    }

    #[test]
    fn a_sparkline_keeps_its_last_points_in_microseconds() {
        let mut h = VecDeque::new();
        Board::push(&mut h, None);
        assert!(h.is_empty());
        for i in 0..(HISTORY + 3) {
            Board::push(&mut h, Some(i as f64 * 1e-3));
        }
        assert_eq!(h.len(), HISTORY);
        assert_eq!(h.back(), Some(&((HISTORY as u64 + 2) * 1000)));
    }
}
