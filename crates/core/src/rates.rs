//! The steady-state rates of a benchmark over its measurement window
//! ([`Window::steady_rates`]), with their inputs and result, and what a benchmark's run
//! returns ([`BenchmarkOutcome`]). Above the window, the settling time and the sustain
//! verdict it reads.

use serde::{Deserialize, Serialize};

use crate::{Nanos, StopReason, Strategy, Sustained, TokenArrivals, Unjudged, Verdict, Window};

impl Window {
    /// The steady-state rates of the window (see docs/metrics.md, "Throughput"):
    ///
    /// - closed-loop and at-start loads (synchronous, concurrent, throughput, burst), where the
    ///   load is the same from the first instant: output tokens arriving in the window, from
    ///   every request, per second from the first output token (or the opening, if later) to
    ///   the closing; requests/s is that divided by the mean output tokens of the measured
    ///   completed requests; but with a fixed number of streams (synchronous, concurrent) and
    ///   completed requests to time, Little's law `L / R` (`little_rate`, `L` the requests
    ///   in flight, `R` their latency), which no window edge can bias (a window shorter than a request sees decoding without the
    ///   prefills between requests, or no token at all);
    /// - open-loop loads (constant, poisson), whose in-flight set ramps up for one latency:
    ///   the departure rate of the measured completed requests (all of them, drained), taken
    ///   between the mean end of the first and of the last tenth of them in send order:
    ///   `(N - k) / (mean_end(last k) - mean_end(first k))`, `k = max(1, N / 10)`, capped by
    ///   `N` over the window (nothing departs faster than it was sent). Below capacity it is
    ///   the rate sent; a load surely not sustained ([`Sustained::judge`]: its in-flight count
    ///   climbed while the load was on) reads its departures while loaded instead, what the
    ///   server completed before the drain could flatter it.
    ///
    /// Token rates of open-loop loads are requests/s times the mean tokens per request.
    pub fn steady_rates(&self, input: &mut RateInput<'_>) -> WindowRates {
        let n = input.departures.len() as f64;
        let mean = |t: f64| if n > 0.0 { t / n } else { 0.0 };
        let (mean_out, mean_prompt) = (mean(input.output_tokens), mean(input.prompt_tokens));
        // The server's output starts with the first token; before it the window holds only
        // the client's connection setup and the first prefill, which no steady state has.
        let producing = Window {
            open: input
                .first_output
                .map_or(self.open, |f| f.clamp(self.open, self.close)),
            ..*self
        };
        let token_rate = input.arrivals.rate(producing.open, producing.close);
        let little = input
            .streams
            .filter(|&n| n > 0)
            .and_then(|_| little_rate(self, input.departures, input.failed));
        let (sustained, unjudged) = match input.closed_loop {
            true => (None, None),
            false => self.sustained(input.departures, input.failed),
        };
        let requests_per_s = match little {
            Some(rate) if input.closed_loop => rate,
            _ if input.closed_loop && mean_out > 0.0 && token_rate > 0.0 => token_rate / mean_out,
            // Surely not kept up: what the server departed while the load was on, not the
            // drain's flattering completions.
            _ => match sustained {
                Some(s) if s.verdict == Verdict::NotKeptUp => s.departures_per_s,
                _ => self.open_loop_rate(input.departures),
            },
        };
        let output_tokens_per_s = requests_per_s * mean_out;
        WindowRates {
            requests_per_s,
            output_tokens_per_s,
            input_tokens_per_s: requests_per_s * mean_prompt,
            total_tokens_per_s: output_tokens_per_s + requests_per_s * mean_prompt,
            sustained,
            unjudged,
        }
    }

    /// The judgement of an open loop's loaded span ([`Sustained::judge`]) from its measured
    /// completed requests and the others, or why it has none ([`Unjudged`]).
    fn sustained(
        &self,
        departures: &[(Nanos, Nanos)],
        failed: &[(Nanos, Nanos)],
    ) -> (Option<Sustained>, Option<Unjudged>) {
        let spans: Vec<(Nanos, Nanos)> = departures.iter().chain(failed).copied().collect();
        let mut latencies: Vec<Nanos> = departures
            .iter()
            .map(|&(sent, end)| end.saturating_sub(sent))
            .collect();
        match Sustained::judge(self, &spans, &mut latencies) {
            Some(s) => (Some(s), None),
            None => (None, Unjudged::of(self, &spans, &mut latencies)),
        }
    }

    /// The departure rate, capped by the rate at which those requests were sent (`N` over the
    /// window): in a steady state nothing departs faster than it arrives, and a transient that
    /// delays the first completions (a cold server, a burst of connection setups) would
    /// otherwise read as a rate above the one sent.
    fn open_loop_rate(&self, departures: &mut [(Nanos, Nanos)]) -> f64 {
        let departed = self.departure_rate(departures);
        match self.per_s(departures.len() as f64) {
            sent if sent > 0.0 => departed.min(sent),
            _ => departed,
        }
    }

    /// `(N - k) / (mean_end(last k) - mean_end(first k))` over `(sent, end)` pairs in send
    /// order; with fewer than two requests or no spread, `N` over the time from the opening to
    /// the last end.
    fn departure_rate(&self, departures: &mut [(Nanos, Nanos)]) -> f64 {
        let n = departures.len();
        if n == 0 {
            return 0.0;
        }
        departures.sort_unstable();
        let k = (n / 10).max(1);
        let mean_end =
            |d: &[(Nanos, Nanos)]| d.iter().map(|&(_, e)| e as f64).sum::<f64>() / d.len() as f64;
        let span = (mean_end(&departures[n - k..]) - mean_end(&departures[..k])) / 1e9;
        if n >= 2 && span > 0.0 {
            return (n - k) as f64 / span;
        }
        let last = departures
            .iter()
            .map(|&(_, e)| e)
            .max()
            .unwrap_or(self.open);
        match last.saturating_sub(self.open) {
            0 => self.per_s(n as f64),
            d => n as f64 / (d as f64 / 1e9),
        }
    }
}

/// Little's law for a closed loop, `X = L / R` for the completed requests: they complete
/// `L * C / T` requests/s, `L` the mean number of requests in flight in the window (measured:
/// `N` for `N` streams sending back to back, less with think times or client gaps), `C` the
/// completed requests and `T` the latencies (dispatch to end) of every finished request,
/// completed or not, summed; over the requests sent in the window before the first one that
/// outlasted it (all of them ended while the load was on, and none is chosen by its length),
/// else those sent in the window, drained, else every measured one. Each stream finishes one
/// request per latency whatever the window holds; counting the time of the failed ones keeps
/// slow failures (timeouts) from reading as completions. `None` for an empty window or without
/// completed requests.
fn little_rate(
    w: &Window,
    departures: &[(Nanos, Nanos)],
    failed: &[(Nanos, Nanos)],
) -> Option<f64> {
    let busy: u128 = departures
        .iter()
        .chain(failed)
        .filter_map(|&(sent, end)| w.clip(sent, end))
        .map(|(a, b)| u128::from(b - a))
        .sum();
    let in_flight = (w.nanos() > 0).then(|| busy as f64 / w.nanos() as f64)?;
    // Which requests time the streams: those sent in the window before the first one that
    // outlasted it (every one of them ended while the load was on: the drain serves the last
    // ones with fewer beside them, faster; and choosing them by send time alone, not by having
    // ended, favours no length); else those sent in the window, drained; else every measured
    // one.
    let cut = departures
        .iter()
        .chain(failed)
        .filter(|&&(sent, end)| sent >= w.open && end > w.close)
        .map(|&(sent, _)| sent)
        .min()
        .unwrap_or(Nanos::MAX);
    let loaded = |&(sent, _): &(Nanos, Nanos)| sent >= w.open && sent < cut;
    let own = |&(sent, _): &(Nanos, Nanos)| sent >= w.open;
    let all = |_: &(Nanos, Nanos)| true;
    let pick: &dyn Fn(&(Nanos, Nanos)) -> bool = if departures.iter().any(loaded) {
        &loaded
    } else if departures.iter().any(own) {
        &own
    } else {
        &all
    };
    let sum = |d: &[(Nanos, Nanos)]| {
        d.iter()
            .filter(|x| pick(x))
            .fold((0.0, 0u64), |(s, c), &(sent, end)| {
                (s + end.saturating_sub(sent) as f64 / 1e9, c + 1)
            })
    };
    let ((done_secs, done), (failed_secs, _)) = (sum(departures), sum(failed));
    let secs = done_secs + failed_secs;
    (done > 0 && secs > 0.0).then(|| in_flight * done as f64 / secs)
}

/// What [`Window::steady_rates`] needs of a benchmark.
#[derive(Debug)]
pub struct RateInput<'a> {
    /// The load is the same from the first instant (closed loop, or all due at t0).
    pub closed_loop: bool,
    /// Output tokens arriving in the window, from every request, by arrival time.
    pub arrivals: &'a TokenArrivals,
    /// The arrival of the benchmark's first output token, of any request.
    pub first_output: Option<Nanos>,
    /// The fixed number of closed-loop streams (synchronous 1, concurrent N): such loads are
    /// read by Little's law (`little_rate`); `None` for other loads.
    pub streams: Option<u32>,
    /// `(dispatched, end)` of every measured completed request.
    pub departures: &'a mut [(Nanos, Nanos)],
    /// `(dispatched, end)` of every measured request that did not complete (errored,
    /// incomplete): a closed loop's streams spent that time too (Little's law).
    pub failed: &'a [(Nanos, Nanos)],
    /// Output tokens of those requests, summed.
    pub output_tokens: f64,
    /// Prompt tokens of those requests, summed.
    pub prompt_tokens: f64,
}

/// The rates of a benchmark's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRates {
    /// Completed requests per second (steady state).
    pub requests_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
    /// Prompt (input) tokens per second: the figure of embeddings and rerank runs.
    #[serde(default)]
    pub input_tokens_per_s: f64,
    /// Prompt plus output tokens per second.
    pub total_tokens_per_s: f64,
    /// Open loops: whether the load was sustained, judged over the loaded span
    /// ([`Sustained::judge`]); `None` for other loads or a span too short to judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained: Option<Sustained>,
    /// Open loops without a judgement: why ([`Unjudged`]: too few arrivals in the loaded
    /// span, or no request completed). Such a load never counts as kept up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unjudged: Option<Unjudged>,
}

/// What a finished benchmark did, in the scheduler's terms (statistics are the report's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkOutcome {
    /// The load shape.
    pub strategy: Strategy,
    /// t0: the first request's intended send time.
    pub start: Nanos,
    /// When the benchmark ended (the stop instant, or the last record's arrival).
    pub end: Nanos,
    /// The measurement window.
    pub window: Window,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// Requests dispatched (each has exactly one record).
    pub sent: u64,
    /// Records by status, all phases.
    pub completed: u64,
    /// Cancelled in flight.
    pub incomplete: u64,
    /// Failed.
    pub errored: u64,
    /// Cancelled by the client on purpose (`--cancel-rate`).
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub cancelled: u64,
    /// Records in the measurement window.
    pub measured: u64,
    /// Completed records in the measurement window.
    pub measured_completed: u64,
    /// Requests that were due before the end but never got a concurrency slot (open-loop
    /// kinds with a cap). Never silently dropped: counted here.
    pub not_sent: u64,
    /// Requests abandoned at the hard deadline after cancellation (recorded as incomplete
    /// without their partial data).
    pub abandoned: u64,
    /// When the sending stopped (the deadline, the stop, the last request's end); the drain
    /// runs from here to `end`.
    pub sending_end: Nanos,
    /// The window's steady-state rates ([`Window::steady_rates`]).
    pub rates: WindowRates,
    /// Completed requests per second in the measurement window (`rates.requests_per_s`).
    pub completed_rate: f64,
    /// How sessions ended, when the benchmark ran sessions (multi-turn data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::SessionCounts>,
    /// The ramp-up the benchmark climbed by, when it had one, and when its rate changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<crate::RampRecord>,
    /// The client's own cancellations, when the benchmark had them (`--cancel-rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellation: Option<crate::Cancellation>,
}

fn secs(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

impl BenchmarkOutcome {
    /// Opening of the measurement window.
    pub fn measure_start(&self) -> Nanos {
        self.window.open
    }
    /// Closing of the measurement window.
    pub fn measure_end(&self) -> Nanos {
        self.window.close
    }
    /// Actual warmup length, seconds.
    pub fn warmup_secs(&self) -> f64 {
        secs(self.window.open.saturating_sub(self.start))
    }
    /// Actual cooldown length, seconds.
    pub fn cooldown_secs(&self) -> f64 {
        secs(self.sending_end.saturating_sub(self.window.close))
    }
    /// Length of the measurement window, seconds.
    pub fn measured_secs(&self) -> f64 {
        self.window.secs()
    }
    /// Length of the drain, seconds.
    pub fn drain_secs(&self) -> f64 {
        secs(self.end.saturating_sub(self.sending_end))
    }
    /// Total length, seconds.
    pub fn duration_secs(&self) -> f64 {
        secs(self.end.saturating_sub(self.start))
    }
    /// Whether it was cut short by the user.
    pub fn is_partial(&self) -> bool {
        self.stop_reason == StopReason::Interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn open_loop(departures: &mut [(Nanos, Nanos)], window: &Window) -> f64 {
        window
            .steady_rates(&mut RateInput {
                closed_loop: false,
                arrivals: &TokenArrivals::default(),
                first_output: None,
                streams: None,
                failed: &[],
                departures,
                output_tokens: 0.0,
                prompt_tokens: 0.0,
            })
            .requests_per_s
    }

    #[test]
    fn open_loop_below_capacity_reads_the_rate_sent() {
        // 10 req/s for 3 s, latencies 1.0-1.2 s with no trend: 10 req/s, where completions
        // ending inside the window would read 2/3 of it.
        let w = Window {
            open: 0,
            close: 3 * S,
            cooldown: false,
        };
        let mut d: Vec<(Nanos, Nanos)> = (0..30u64)
            .map(|i| (i * S / 10, i * S / 10 + S + (i * 7919 % 5) * S / 25))
            .collect();
        let r = open_loop(&mut d, &w);
        assert!((r - 10.0).abs() < 0.2, "{r}");
    }

    #[test]
    fn open_loop_above_capacity_reads_what_the_server_completes() {
        // 60 req/s sent for 5 s; the server completes one every 1/30 s in arrival order.
        let w = Window {
            open: 0,
            close: 5 * S,
            cooldown: false,
        };
        let mut d: Vec<(Nanos, Nanos)> = (0..300u64)
            .map(|i| (i * S / 60, S / 2 + i * S / 30))
            .collect();
        // Surely not kept up: the departures while the load was on (the in-flight count's
        // trend over batches, so within a hundredth).
        let r = open_loop(&mut d, &w);
        assert!((r - 30.0).abs() < 0.01, "{r}");
        // One request alone in a 5 s window was sent at 0.2 req/s, whatever its latency.
        assert!((open_loop(&mut [(0, S / 2)], &w) - 0.2).abs() < 1e-9);
        assert_eq!(open_loop(&mut [], &w), 0.0);
    }

    #[test]
    fn a_slow_start_does_not_read_above_the_rate_sent() {
        // 1,000 req/s for 10 s at 1 ms latency, but the requests of 0.3-1.2 s wait up to
        // 300 ms more (a cold server's first prompts, a burst of connection setups): the
        // late first completions shorten the departure span, which alone would read ~2.5%
        // above the rate the server was sent and completed.
        let w = Window {
            open: 0,
            close: 10 * S,
            cooldown: false,
        };
        let ms = S / 1000;
        let mut d: Vec<(Nanos, Nanos)> = (0..10_000u64)
            .map(|i| {
                let sent = i * ms;
                let stall = if (300..1200).contains(&i) {
                    300 * ms
                } else {
                    0
                };
                (sent, sent + ms + stall)
            })
            .collect();
        assert!(w.departure_rate(&mut d.clone()) > 1020.0);
        let r = open_loop(&mut d, &w);
        assert!((r - 1000.0).abs() < 1e-6, "{r}");
    }

    #[test]
    fn a_window_shorter_than_a_request_reads_littles_law() {
        // Two streams against a slow server: 2.4 s of prefill, then 64 tokens in 1.6 s, so
        // each stream completes one request per 4 s: 0.5 req/s. A 3.75 s window sees the
        // two decodes (108 tokens from the first token at 2.4 s) and not the prefills: the
        // token rate alone reads 80 tok/s, 1.25 req/s (seen against llama.cpp: 1.24 req/s
        // at concurrency 2 for a synchronous 0.34 req/s).
        let w = Window {
            open: 0,
            close: 3_750_000_000,
            cooldown: false,
        };
        let none = TokenArrivals::default();
        let input = |departures| RateInput {
            closed_loop: true,
            arrivals: &none,
            first_output: Some(2_400_000_000),
            streams: Some(2),
            failed: &[],
            departures,
            output_tokens: 128.0,
            prompt_tokens: 0.0,
        };
        let mut slow = [(0, 4 * S), (0, 4 * S)];
        let rates = w.steady_rates(&mut input(&mut slow));
        assert!((rates.requests_per_s - 0.5).abs() < 1e-9, "{rates:?}");
        assert!((rates.output_tokens_per_s - 32.0).abs() < 1e-9);
        // A window that saw no token at all (every first token after it closed): Little's law
        // still reads the streams (against llama.cpp at 256/64 tokens, `concurrent@4` read
        // 4 requests over a 3.75 s window, 1.07 req/s, for a server sustaining about 0.4).
        let mut late = [(0, 10 * S), (0, 10 * S), (0, 10 * S), (0, 10 * S)];
        let rates = w.steady_rates(&mut RateInput {
            arrivals: &TokenArrivals::default(),
            first_output: Some(7 * S),
            streams: Some(4),
            ..input(&mut late)
        });
        assert!((rates.requests_per_s - 0.4).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn littles_law_takes_no_request_the_drain_served() {
        // Two streams of 4 s requests while loaded; the requests sent at 8 s outlast the
        // closing (8.5 s) and, with nothing beside them in the drain, take 1 s. Timing them
        // would read 2 x 3 / 9 s = 0.67 req/s; the streams carried 0.5.
        let w = Window {
            open: 0,
            close: 8 * S + S / 2,
            cooldown: false,
        };
        let mut d = [
            (0, 4 * S),
            (4 * S, 8 * S),
            (8 * S, 9 * S),
            (0, 4 * S),
            (4 * S, 8 * S),
            (8 * S, 9 * S),
        ];
        let rates = w.steady_rates(&mut RateInput {
            closed_loop: true,
            arrivals: &TokenArrivals::default(),
            first_output: Some(S),
            streams: Some(2),
            failed: &[],
            departures: &mut d,
            output_tokens: 60.0,
            prompt_tokens: 0.0,
        });
        assert!((rates.requests_per_s - 0.5).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn littles_law_takes_the_requests_sent_in_the_window() {
        // One stream: a 9 s request in flight at the opening (sent in the warmup), then three
        // of 1 s sent in the window. The long one ends in the window but was chosen by being in
        // flight at the opening, which favours long requests: the rate is 1 / 1 s, not 4 / 12 s.
        let w = Window {
            open: 5 * S,
            close: 12 * S,
            cooldown: false,
        };
        let mut d = [
            (0, 9 * S),
            (9 * S, 10 * S),
            (10 * S, 11 * S),
            (11 * S, 12 * S),
        ];
        let rates = w.steady_rates(&mut RateInput {
            closed_loop: true,
            arrivals: &TokenArrivals::default(),
            first_output: Some(S),
            streams: Some(1),
            failed: &[],
            departures: &mut d,
            output_tokens: 40.0,
            prompt_tokens: 0.0,
        });
        assert!((rates.requests_per_s - 1.0).abs() < 1e-9, "{rates:?}");
        // Without a request of its own (a window inside one request), the window's
        // straddlers are all there is.
        let w = Window { close: 8 * S, ..w };
        let mut d = [(0, 9 * S)];
        let rates = w.steady_rates(&mut RateInput {
            closed_loop: true,
            arrivals: &TokenArrivals::default(),
            first_output: Some(S),
            streams: Some(1),
            failed: &[],
            departures: &mut d,
            output_tokens: 10.0,
            prompt_tokens: 0.0,
        });
        assert!((rates.requests_per_s - 1.0 / 9.0).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn closed_loop_reads_tokens_in_the_window() {
        let w = Window {
            open: 0,
            close: 2 * S,
            cooldown: false,
        };
        // 400 tokens in 2 s (one every 5 ms), 10 tokens per request, 4 prompt tokens per
        // request.
        let mut arrivals = TokenArrivals::default();
        for i in 0..400 {
            arrivals.add(0, i * 5_000_000, 1.0);
        }
        let rates = w.steady_rates(&mut RateInput {
            closed_loop: true,
            arrivals: &arrivals,
            first_output: None,
            streams: None,
            failed: &[],
            departures: &mut [(0, 1), (0, 2)],
            output_tokens: 20.0,
            prompt_tokens: 8.0,
        });
        assert_eq!(rates.output_tokens_per_s, 200.0);
        assert_eq!(rates.requests_per_s, 20.0);
        assert_eq!(rates.total_tokens_per_s, 280.0);
        assert_eq!(
            rates.input_tokens_per_s,
            rates.total_tokens_per_s - rates.output_tokens_per_s
        );
    }

    #[test]
    fn littles_law_takes_the_streams_in_flight_not_their_number() {
        // Two streams with 1 s of think time between 1 s requests: one in flight on average,
        // 1 req/s, not the 2 req/s that 2 streams / 1 s would say.
        let w = Window {
            open: 0,
            close: 8 * S,
            cooldown: false,
        };
        let mut d: Vec<(Nanos, Nanos)> = (0..4)
            .flat_map(|k| {
                [
                    (2 * k * S, (2 * k + 1) * S),
                    ((2 * k + 1) * S, (2 * k + 2) * S),
                ]
            })
            .collect();
        let rates = w.steady_rates(&mut RateInput {
            closed_loop: true,
            arrivals: &TokenArrivals::default(),
            first_output: Some(0),
            streams: Some(2),
            departures: &mut d,
            failed: &[],
            output_tokens: 80.0,
            prompt_tokens: 0.0,
        });
        assert!((rates.requests_per_s - 1.0).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn littles_law_counts_the_time_of_failed_requests() {
        // Two streams, each sending in the window one completed request of 2 s and one that
        // timed out after 2 s: one completion per 4 s a stream, 0.5 req/s, not 1.
        let w = Window {
            open: 0,
            close: 4 * S,
            cooldown: false,
        };
        let mut done = [(0, 2 * S), (0, 2 * S)];
        let rates = w.steady_rates(&mut RateInput {
            closed_loop: true,
            arrivals: &TokenArrivals::default(),
            first_output: Some(S),
            streams: Some(2),
            departures: &mut done,
            failed: &[(2 * S, 4 * S), (2 * S, 4 * S)],
            output_tokens: 20.0,
            prompt_tokens: 0.0,
        });
        assert!((rates.requests_per_s - 0.5).abs() < 1e-9, "{rates:?}");
    }
}
