//! Who watches a run besides its result: the progress line on stderr (`progress`), the JSON
//! lines of `--progress-file` (`progress_file`) and the full-screen view of `--live` (`live`).
//! This module resolves their flags and hands the run one observer that tells them all; each
//! of them runs on the run's events (never on a request's path) and does its writing on a
//! task or thread of its own.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bench_runner::{BenchmarkReport, Capacity, Events};
use bench_scheduler::Progress;

use crate::settings::ReportArgs;
use crate::UsageError;

/// The progress line's interval when stderr is not a terminal, unless `--progress-interval`.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);
/// The progress file's interval between ticks, unless `--progress-interval`.
pub const FILE_EVERY: Duration = Duration::from_secs(1);
/// The shortest `--progress-interval`: the scheduler publishes a snapshot four times a second.
const SHORTEST: f64 = 0.25;
/// The longest `--progress-interval`.
const LONGEST: f64 = 3600.0;

/// The watchers' flags, resolved.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    /// `--progress-file`.
    pub file: Option<PathBuf>,
    /// `--progress-interval`.
    pub interval: Option<Duration>,
    /// `--live`.
    pub live: bool,
}

impl Watch {
    /// The flags of `r`, checked: a bad interval is a usage error naming it.
    pub fn resolve(r: &ReportArgs) -> anyhow::Result<Watch> {
        let interval = match &r.progress_interval {
            None => None,
            Some(text) => Some(interval(text)?),
        };
        Ok(Watch {
            file: r.progress_file.clone(),
            interval,
            live: r.live,
        })
    }

    /// Between two progress lines on stderr without a terminal.
    pub fn plain_every(&self) -> Duration {
        self.interval.unwrap_or(PLAIN_EVERY)
    }

    /// Between two ticks in the progress file.
    pub fn file_every(&self) -> Duration {
        self.interval.unwrap_or(FILE_EVERY)
    }
}

/// `--progress-interval TEXT` as a duration: seconds from 0.25 to 3600.
fn interval(text: &str) -> anyhow::Result<Duration> {
    let bad = |why: &str| UsageError::new(format!("--progress-interval {text}: {why}"));
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| bad("not a number of seconds"))?;
    if !s.is_finite() || !(SHORTEST..=LONGEST).contains(&s) {
        return Err(bad(&format!(
            "must be {SHORTEST} to {LONGEST} seconds (progress is sampled four times a second)"
        ))
        .into());
    }
    Ok(Duration::from_secs_f64(s))
}

/// Tells every observer it holds, in order.
pub struct Tee(pub Vec<Arc<dyn Events>>);

impl std::fmt::Debug for Tee {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tee({} observers)", self.0.len())
    }
}

impl Events for Tee {
    fn sweep_step(&self, index: usize, step: &bench_profile::SweepStep) {
        self.0.iter().for_each(|e| e.sweep_step(index, step));
    }
    fn benchmark_started(&self, index: usize, total: usize, strategy: &bench_core::Strategy) {
        self.0
            .iter()
            .for_each(|e| e.benchmark_started(index, total, strategy));
    }
    fn progress(&self, p: &Progress) {
        self.0.iter().for_each(|e| e.progress(p));
    }
    fn benchmark_finished(&self, index: usize, report: &BenchmarkReport) {
        self.0
            .iter()
            .for_each(|e| e.benchmark_finished(index, report));
    }
    fn capacity(&self, c: &Capacity) {
        self.0.iter().for_each(|e| e.capacity(c));
    }
    fn server_gauges(&self, g: &bench_runner::ServerGauges) {
        self.0.iter().for_each(|e| e.server_gauges(g));
    }
    fn wants_server_gauges(&self) -> bool {
        self.0.iter().any(|e| e.wants_server_gauges())
    }
    fn hint(&self, text: &str) {
        self.0.iter().for_each(|e| e.hint(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_seconds_within_bounds() {
        assert_eq!(interval("0.25").expect("ok"), Duration::from_millis(250));
        assert_eq!(interval("2").expect("ok"), Duration::from_secs(2));
        for bad in ["0", "0.1", "-1", "abc", "nan", "inf", "3601"] {
            let e = interval(bad).expect_err(bad).to_string();
            assert!(
                e.starts_with(&format!("--progress-interval {bad}: ")),
                "{e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
