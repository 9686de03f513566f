//! How requests ended badly, said once per benchmark after the report: which timeout ended a
//! request and after how long, and how many were rate limited (429) and what bench did about
//! it. The counts are in every report's error kinds; these lines say what the counts mean.

use std::collections::BTreeMap;
use std::time::Duration;

use bench_core::{Nanos, Outcome, RequestRecord, TimeoutPhase, RETRY_AFTER_MAX};
use bench_worker::Timeouts;

/// The requests of one benchmark that ended by a timeout, per timeout, and the rate-limited
/// ones.
#[derive(Debug, Default)]
pub(crate) struct Endings {
    /// Per timeout: how many, and the shortest and longest wait before it fired.
    timeouts: BTreeMap<TimeoutPhase, (u64, Nanos, Nanos)>,
    rate_limited: u64,
    /// How many of the rate-limited replies carried a `Retry-After`.
    with_retry_after: u64,
}

/// The timeout's name, its flag, its limit, and what the wait was.
fn describe(p: TimeoutPhase, t: &Timeouts) -> (&'static str, &'static str, Duration, &'static str) {
    match p {
        TimeoutPhase::Connect => (
            "connect",
            "--connect-timeout",
            t.connect,
            "without a connection",
        ),
        TimeoutPhase::FirstByte => (
            "first-byte",
            "--first-byte-timeout",
            t.first_byte,
            "with no response from the server",
        ),
        TimeoutPhase::Idle => (
            "idle",
            "--idle-timeout",
            t.idle,
            "of silence in the middle of the stream",
        ),
        TimeoutPhase::Total => ("request", "--request-timeout", t.total, "in all"),
    }
}

/// How long the request waited for what never came: since it was sent, or (idle) since the
/// last byte of the stream.
fn waited(p: TimeoutPhase, r: &RequestRecord) -> Nanos {
    let from = match p {
        TimeoutPhase::Idle => r.last_token().or(r.headers).unwrap_or(r.dispatched),
        _ => r.dispatched,
    };
    r.end.saturating_sub(from)
}

impl Endings {
    /// Counts one finished request.
    pub(crate) fn add(&mut self, r: &RequestRecord) {
        match &r.outcome {
            Outcome::Timeout { phase } => {
                let w = waited(*phase, r);
                let e = self.timeouts.entry(*phase).or_insert((0, w, w));
                e.0 += 1;
                e.1 = e.1.min(w);
                e.2 = e.2.max(w);
            }
            Outcome::Http { status: 429, .. } => {
                self.rate_limited += 1;
                if r.outcome.retry_after().is_some() {
                    self.with_retry_after += 1;
                }
            }
            _ => {}
        }
    }

    /// One line per kind of ending the benchmark `label` had, and starts over.
    pub(crate) fn take_notes(
        &mut self,
        label: &str,
        closed_loop: bool,
        t: &Timeouts,
    ) -> Vec<String> {
        let mut notes: Vec<String> = std::mem::take(&mut self.timeouts)
            .into_iter()
            .map(|(phase, (n, min, max))| timeout_note(label, phase, n, (min, max), t))
            .collect();
        if self.rate_limited > 0 {
            notes.push(rate_note(
                label,
                self.rate_limited,
                self.with_retry_after,
                closed_loop,
            ));
        }
        self.rate_limited = 0;
        self.with_retry_after = 0;
        notes
    }
}

fn seconds(ns: Nanos) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

fn timeout_note(
    label: &str,
    phase: TimeoutPhase,
    n: u64,
    (min, max): (Nanos, Nanos),
    t: &Timeouts,
) -> String {
    let (name, flag, limit, what) = describe(phase, t);
    let after = if max - min < 50_000_000 {
        seconds(max)
    } else {
        format!("{} to {}", seconds(min), seconds(max))
    };
    format!(
        "{label}: {n} request(s) ended by the {name} timeout ({flag} {} s): after {after} {what}; \
         counted as errored ({})",
        limit.as_secs_f64(),
        Outcome::Timeout { phase }.kind_name(),
    )
}

fn rate_note(label: &str, n: u64, with_retry_after: u64, closed_loop: bool) -> String {
    let what = if with_retry_after == 0 {
        "the server sent no Retry-After".to_string()
    } else if closed_loop {
        format!(
            "{with_retry_after} carried Retry-After, and their streams paused that long (at most {} s) before sending again",
            RETRY_AFTER_MAX.as_secs()
        )
    } else {
        format!(
            "{with_retry_after} carried Retry-After, which an open-loop schedule does not follow: the offered rate stayed as set"
        )
    };
    format!("{label}: {n} request(s) were rate limited (HTTP 429, counted as rate_limited): {what}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_core::TokenSource;

    fn rec(outcome: Outcome, dispatched: Nanos, end: Nanos) -> RequestRecord {
        RequestRecord {
            target: None,
            model: None,
            cached_tokens: None,
            id: 0,
            scheduled: dispatched,
            slot: dispatched,
            dispatched,
            headers: None,
            chunks: Vec::new(),
            end,
            prompt_tokens: 1,
            prompt_tokens_source: TokenSource::Tokenizer,
            output_tokens: 0,
            output_tokens_source: TokenSource::Chunks,
            requested_output_tokens: None,
            outcome,
            session: None,
            reasoning: None,
            images: None,
        }
    }

    #[test]
    fn a_timeout_note_names_the_timeout_its_flag_and_the_wait() {
        let t = Timeouts {
            first_byte: Duration::from_secs(20),
            ..Timeouts::default()
        };
        let mut e = Endings::default();
        let first_byte = Outcome::Timeout {
            phase: TimeoutPhase::FirstByte,
        };
        e.add(&rec(first_byte.clone(), 1_000_000_000, 21_000_000_000));
        e.add(&rec(Outcome::Completed, 0, 5));
        let notes = e.take_notes("concurrent@1", true, &t);
        assert_eq!(
            notes,
            ["concurrent@1: 1 request(s) ended by the first-byte timeout (--first-byte-timeout 20 s): \
              after 20.0 s with no response from the server; counted as errored (timeout_first_byte)"]
        );
        assert!(e.take_notes("concurrent@1", true, &t).is_empty(), "taken");
        let mut idle = rec(
            Outcome::Timeout {
                phase: TimeoutPhase::Idle,
            },
            0,
            9_000_000_000,
        );
        idle.headers = Some(1_000_000_000);
        e.add(&idle);
        e.add(&rec(first_byte, 0, 25_500_000_000));
        let notes = e.take_notes("x", true, &t);
        assert!(
            notes[0].contains("first-byte") && notes[0].contains("after 25.5 s"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("idle timeout (--idle-timeout 300 s): after 8.0 s of silence"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_rate_limit_note_says_what_bench_did() {
        let limited = |ms| Outcome::Http {
            status: 429,
            body: String::new(),
            retry_after_ms: ms,
        };
        let mut e = Endings::default();
        e.add(&rec(limited(Some(1000)), 0, 1));
        e.add(&rec(limited(None), 0, 1));
        let t = Timeouts::default();
        let closed = e.take_notes("concurrent@8", true, &t);
        assert!(
            closed[0].starts_with("concurrent@8: 2 request(s) were rate limited (HTTP 429")
                && closed[0].contains("1 carried Retry-After, and their streams paused"),
            "{closed:?}"
        );
        e.add(&rec(limited(Some(1000)), 0, 1));
        let open = e.take_notes("constant@5.00", false, &t);
        assert!(
            open[0].contains("open-loop schedule does not follow"),
            "{open:?}"
        );
    }
}
