//! Live progress of `bench sweep` / `bench run` on stderr: one line per benchmark (and an
//! overall bar for multi-benchmark runs) on a terminal, periodic plain lines otherwise
//! (every `--progress-interval`, 5 s by default). Fed by the run's events ([`Shown`]), which
//! also say the run's hints (unless the live view shows them).

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use bench_scheduler::Progress;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One progress line.
pub fn line(p: &Progress) -> String {
    let ms = |s: Option<f64>| s.map_or("-".to_string(), |v| format!("{:.1}ms", v * 1e3));
    let time = match p.remaining {
        Some(r) => format!(
            "{:.1}s elapsed, {:.1}s left",
            p.elapsed.as_secs_f64(),
            r.as_secs_f64()
        ),
        None => match p.max_requests {
            Some(n) => format!(
                "{:.1}s elapsed, {}/{} sent",
                p.elapsed.as_secs_f64(),
                p.sent,
                n
            ),
            None => format!("{:.1}s elapsed", p.elapsed.as_secs_f64()),
        },
    };
    let line = format!(
        "[{}/{}] {} {} | {} | {:.2} req/s | in flight {}{} | completed {} incomplete {} errored {}{} | TTFT {} ITL {}",
        p.index + 1,
        p.total,
        p.label,
        p.phase.name(),
        time,
        p.completed_rate,
        p.in_flight,
        if p.queued > 0 { format!(" (+{} queued)", p.queued) } else { String::new() },
        p.completed,
        p.incomplete,
        p.errored,
        if p.cancelled > 0 { format!(" cancelled {}", p.cancelled) } else { String::new() },
        ms(p.mean_ttft),
        ms(p.mean_itl),
    );
    match silent(&p.silent) {
        Some(s) => format!("{line} | {s}"),
        None => line,
    }
}

/// Shown requests that have had no byte for a while.
const SILENT_SHOWN: usize = 3;

/// `no byte for 12 s: #3 (waiting for the response), #7 (mid-stream) +2 more`, or nothing.
fn silent(s: &[bench_core::Silent]) -> Option<String> {
    let first = s.first()?;
    let named: Vec<String> = s
        .iter()
        .take(SILENT_SHOWN)
        .map(|r| format!("#{} ({})", r.id, r.waiting_for.name()))
        .collect();
    let more = match s.len().saturating_sub(SILENT_SHOWN) {
        0 => String::new(),
        n => format!(" +{n} more"),
    };
    Some(format!(
        "no byte for {:.0} s: {}{more}",
        first.silent_for.as_secs_f64(),
        named.join(", ")
    ))
}

/// The run's events as the console shows them: progress snapshots to the display task, hints
/// on stderr.
#[derive(Debug)]
pub struct Shown {
    tx: watch::Sender<Option<Progress>>,
    /// Whether hints go to stderr (not while the live view has the screen).
    hints: bool,
}

impl bench_runner::Events for Shown {
    fn progress(&self, p: &Progress) {
        self.tx.send_replace(Some(p.clone()));
    }

    fn hint(&self, text: &str) {
        if self.hints {
            eprintln!("hint: {text}");
        }
    }
}

impl Shown {
    /// The events to give the run, and the display task (none when `quiet`), which ends once
    /// the events are dropped; without a terminal a plain line every `plain_every`. Hints
    /// are said on stderr when `hints`.
    pub fn spawn(
        quiet: bool,
        plain_every: Duration,
        hints: bool,
    ) -> (std::sync::Arc<Shown>, Option<JoinHandle<()>>) {
        let (tx, rx) = watch::channel(None);
        (
            std::sync::Arc::new(Shown { tx, hints }),
            spawn(rx, quiet, plain_every),
        )
    }
}

/// Starts the display task; it ends when `rx`'s sender is dropped or the task is aborted.
fn spawn(
    mut rx: watch::Receiver<Option<Progress>>,
    quiet: bool,
    plain_every: Duration,
) -> Option<JoinHandle<()>> {
    if quiet {
        return None;
    }
    let tty = std::io::stderr().is_terminal();
    Some(tokio::spawn(async move {
        if tty {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let style = ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let overall_style =
                ProgressStyle::with_template("{bar:30} {pos}/{len} benchmarks {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            let mut overall: Option<ProgressBar> = None;
            let mut current: Option<(usize, ProgressBar)> = None;
            while rx.changed().await.is_ok() {
                let Some(p) = rx.borrow_and_update().clone() else {
                    continue;
                };
                if p.total > 1 && overall.is_none() {
                    let b = multi.add(ProgressBar::new(p.total as u64));
                    b.set_style(overall_style.clone());
                    overall = Some(b);
                }
                if current.as_ref().is_none_or(|(i, _)| *i != p.index) {
                    if let Some((_, b)) = current.take() {
                        b.finish();
                    }
                    let b = match &overall {
                        Some(o) => multi.insert_before(o, ProgressBar::new_spinner()),
                        None => multi.add(ProgressBar::new_spinner()),
                    };
                    b.set_style(style.clone());
                    current = Some((p.index, b));
                }
                if let Some((_, b)) = &current {
                    b.set_message(line(&p));
                    b.tick();
                    if p.finished {
                        b.finish();
                        if let Some(o) = &overall {
                            o.set_position(p.index as u64 + 1);
                        }
                    }
                }
            }
            if let Some((_, b)) = current {
                b.finish();
            }
            if let Some(o) = overall {
                o.finish();
            }
        } else {
            let mut last: Option<Instant> = None;
            while rx.changed().await.is_ok() {
                let Some(p) = rx.borrow_and_update().clone() else {
                    continue;
                };
                if p.finished || last.is_none_or(|t| t.elapsed() >= plain_every) {
                    eprintln!("{}", line(&p));
                    last = Some(Instant::now());
                }
                if p.finished {
                    last = None;
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_core::{Silent, Waiting};

    #[test]
    fn the_line_names_silent_requests_longest_first_and_counts_the_rest() {
        let quiet = |id, s, waiting_for| Silent {
            id,
            silent_for: Duration::from_secs(s),
            waiting_for,
        };
        assert_eq!(silent(&[]), None);
        let s = [
            quiet(3, 42, Waiting::Response),
            quiet(7, 12, Waiting::Stream),
            quiet(8, 11, Waiting::Stream),
            quiet(9, 10, Waiting::Stream),
            quiet(11, 10, Waiting::Response),
        ];
        assert_eq!(
            silent(&s).as_deref(),
            Some("no byte for 42 s: #3 (waiting for the response), #7 (mid-stream), #8 (mid-stream) +2 more")
        );
    }
}
