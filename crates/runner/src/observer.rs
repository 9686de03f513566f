//! The scheduler's observer: feeds every record into the running benchmark's accumulator
//! (and the `--precision` watch), watches for a server gone, and as each benchmark ends
//! finishes its report, says what went wrong with it and writes the files.

use bench_core::{Clock, RequestRecord, Slo};
use bench_report::{Accumulator, BenchmarkMeta, BenchmarkReport, RunReport, StatsOptions};
use bench_scheduler::{BenchmarkOutcome, BenchmarkSetup, Observer, Phase};

use crate::events::Events;
use crate::settings::Settings;
use crate::{data, limits, outputs};

/// After this long with nothing but failed connections, the server is taken for gone and the
/// run stops (see docs/reliability.md).
const SERVER_GONE_AFTER: bench_core::Nanos = 3_000_000_000;

/// Collects records into the report crate's accumulator and writes files after each benchmark.
pub(crate) struct ReportObserver {
    pub(crate) run: RunReport,
    stats: StatsOptions,
    acc: Option<Accumulator>,
    pub(crate) files: outputs::Writer,
    wall_epoch: std::time::SystemTime,
    pub(crate) write_error: Option<String>,
    /// The server's and the GPUs' scrapers.
    scrapers: crate::services::Scrapers,
    /// The running benchmark's output tokens (every request's, whatever its outcome or
    /// window) and completed requests: what the GPUs' energy over the benchmark is divided by.
    gpu_work: (u64, u64),
    vllm_files: Option<crate::vllm_files::VllmFiles>,
    /// The vLLM-fields hint was printed.
    hinted: bool,
    slo: Option<Slo>,
    /// Whether each benchmark met the SLO, by index.
    pub(crate) verdicts: std::collections::HashMap<usize, (bool, bench_core::Sure)>,
    /// The 95% interval of each benchmark's requests/s, by index (the sweep's
    /// `--capacity-precision` reads it).
    pub(crate) rate_intervals: std::collections::HashMap<usize, bench_core::Interval>,
    /// Since when (run clock) every finished request failed to connect, and how many did.
    unanswered: Option<(bench_core::Nanos, u64)>,
    /// Set when the server stopped answering (or the client ran out of file descriptors):
    /// why; the run is then stopped through `stop`.
    pub(crate) server_gone: Option<String>,
    /// The soft open-file limit in force (raised at start), named when it is reached.
    fd_limit: Option<u64>,
    stop: bench_scheduler::StopHandle,
    /// How the running benchmark's requests ended badly (timeouts, rate limits).
    endings: crate::endings::Endings,
    /// What those endings were, one line per kind and benchmark, said after the report.
    pub(crate) ending_notes: Vec<String>,
    /// The timeouts in force, which the notes name.
    timeouts: bench_worker::Timeouts,
    /// Starts a trace over at each benchmark.
    pub(crate) rewind: data::Rewind,
    /// The URLs of the targets sharing the load, when several (each benchmark counts its
    /// requests by target); empty with one.
    pub(crate) targets: Vec<String>,
    /// The names of the run's model mix, when several (each benchmark reports per model).
    pub(crate) models: Vec<String>,
    /// This process's shard (its report states its share of the target rate).
    pub(crate) shard: Option<bench_core::Shard>,
    /// The run clock (a shard reads its wall clock against it as each benchmark ends).
    clock: Clock,
    /// With `--precision`: ends each benchmark once precise.
    precision: Option<crate::precise::PrecisionWatch>,
    /// The caller's observer.
    pub(crate) events: std::sync::Arc<dyn Events>,
}

/// Why `record` found no server to answer it (a connection refused, reset or timed out before
/// any response), `None` when the server answered: a request whose response headers came is
/// an answer, even when the connection was lost mid-stream after them (a server that resets
/// its streams is up; the fault matrix's every-stream-reset case, starved in CI, once read
/// 12 such resets over 4 s as a server gone).
fn unanswered(record: &RequestRecord) -> Option<&str> {
    if record.headers.is_some() {
        return None;
    }
    let connect_timeout = bench_core::Outcome::Timeout {
        phase: bench_core::TimeoutPhase::Connect,
    };
    match &record.outcome {
        bench_core::Outcome::Connect { message } => Some(message.as_str()),
        o if *o == connect_timeout => Some("connect timed out"),
        _ => None,
    }
}

impl ReportObserver {
    /// Watches for a server that stopped answering: only connection failures for
    /// [`SERVER_GONE_AFTER`] (at least 3 of them) stop the run with a message. A connection
    /// that failed for want of a file descriptor stops it at once, naming the client's limit.
    fn watch_connects(&mut self, record: &RequestRecord) {
        match unanswered(record) {
            // The client's own limit: the server is not to blame, and every request from now
            // on would measure the client. Stop at once, naming the limit.
            Some(message) if bench_worker::is_open_file_limit(message) => {
                if self.server_gone.is_none() {
                    self.server_gone = Some(limits::exhausted(self.fd_limit, message));
                    self.stop.stop();
                }
            }
            Some(message) => {
                let (since, n) = self.unanswered.get_or_insert((record.end, 0));
                *n += 1;
                let (since, n) = (*since, *n);
                if self.server_gone.is_none()
                    && n >= 3
                    && record.end.saturating_sub(since) >= SERVER_GONE_AFTER
                {
                    self.server_gone = Some(format!(
                        "the server stopped answering: the last {n} requests over {:.1} s could not connect ({message})",
                        record.end.saturating_sub(since) as f64 / 1e9
                    ));
                    self.stop.stop();
                }
            }
            None if record.outcome == bench_core::Outcome::Cancelled => {}
            None => self.unanswered = None,
        }
    }
}

impl Observer for ReportObserver {
    fn sweep_step(&mut self, index: usize, step: &bench_profile::SweepStep) {
        self.events.sweep_step(index, step);
    }

    fn benchmark_started(&mut self, index: usize, total: usize, setup: &BenchmarkSetup) {
        self.events.benchmark_started(index, total, &setup.strategy);
        self.rewind.benchmark_started();
        self.gpu_work = (0, 0);
        self.acc = Some(
            Accumulator::new(&self.stats)
                .with_targets(&self.targets)
                .with_models(&self.models),
        );
        if let Some(w) = self.precision.as_mut() {
            w.started(index, setup, self.clock.now());
        }
    }

    fn record(&mut self, _index: usize, record: RequestRecord, phase: Phase) {
        self.watch_connects(&record);
        self.endings.add(&record);
        self.gpu_work.0 += u64::from(record.output_tokens);
        self.gpu_work.1 += u64::from(record.outcome == bench_core::Outcome::Completed);
        let look = self.precision.as_mut().and_then(|w| w.add(&record, phase));
        // The accumulator applies the measurement window itself (same rule as the scheduler).
        if let Some(acc) = self.acc.as_mut() {
            acc.add(record);
            if let (Some(now), Some(w)) = (look, self.precision.as_mut()) {
                w.look(now, acc);
            }
        }
    }

    fn benchmark_finished(&mut self, index: usize, o: &BenchmarkOutcome) {
        let Some(acc) = self.acc.take() else {
            return;
        };
        let report = self.finish_report(acc, o);
        if let Some(slo) = &self.slo {
            let sure = bench_report::slo_verdict(slo, &report);
            self.verdicts.insert(index, (report.meets(slo), sure));
        }
        if let Some(iv) = bench_report::rate_interval(&report) {
            self.rate_intervals.insert(index, iv);
        }
        self.warn_benchmark(o, &report);
        self.write_vllm_file(&report);
        let closed_loop = o.strategy.release() == bench_core::Release::ClosedLoop;
        let notes = self
            .endings
            .take_notes(&o.strategy.label(), closed_loop, &self.timeouts);
        self.ending_notes.extend(notes);
        self.events.benchmark_finished(index, &report);
        self.keep(report);
    }

    fn slo_met(&mut self, index: usize) -> Option<bool> {
        self.verdicts.get(&index).map(|v| v.0)
    }

    fn slo_sure(&mut self, index: usize) -> Option<bench_core::Sure> {
        self.verdicts.get(&index).map(|v| v.1)
    }

    fn rate_interval(&mut self, index: usize) -> Option<bench_core::Interval> {
        self.rate_intervals.get(&index).copied()
    }
}

impl ReportObserver {
    /// The observer of a run about to start: nothing collected, nothing written yet.
    pub(crate) fn new(
        s: &Settings,
        run: RunReport,
        scrapers: crate::services::Scrapers,
        model: &str,
        clock: Clock,
        stop: bench_scheduler::StopHandle,
    ) -> Self {
        let stats = StatsOptions {
            goodput: s.report.goodput.clone(),
            keep_records: s.report.save_records,
            ..StatsOptions::default()
        };
        ReportObserver {
            run,
            stats,
            acc: None,
            files: outputs::Writer::new(s.report.output.clone()),
            wall_epoch: clock.wall_epoch(),
            write_error: None,
            scrapers,
            gpu_work: (0, 0),
            vllm_files: crate::vllm_files::VllmFiles::new(s, model),
            hinted: false,
            slo: s.load.build.slo.clone(),
            verdicts: Default::default(),
            rate_intervals: Default::default(),
            unanswered: None,
            server_gone: None,
            fd_limit: limits::open_files(),
            endings: Default::default(),
            ending_notes: Vec::new(),
            timeouts: s.target.timeouts,
            rewind: data::Rewind::default(),
            targets: Vec::new(),
            models: s
                .target
                .model_mix
                .as_ref()
                .map(|m| m.models.iter().map(|x| x.name.clone()).collect())
                .unwrap_or_default(),
            shard: None,
            clock,
            precision: s
                .load
                .limits
                .precision
                .map(|p| crate::precise::PrecisionWatch::new(p, stop.clone(), clock.wall_epoch())),
            stop,
            events: std::sync::Arc::new(crate::events::NoEvents),
        }
    }
}

impl ReportObserver {
    /// The finished benchmark's report: its figures, with the precision reached, a shard's
    /// share of the target rate, and the server's metrics.
    fn finish_report(&mut self, acc: Accumulator, o: &BenchmarkOutcome) -> BenchmarkReport {
        let meta = BenchmarkMeta {
            strategy: o.strategy.clone(),
            start: o.start,
            end: o.end,
            window: o.window,
            sending_end: o.sending_end,
            rates: Some(o.rates),
            wall_epoch: self.wall_epoch,
            stop_reason: o.stop_reason.name().to_string(),
            label: None,
            sessions: o.sessions,
        };
        let mut report = acc.finish(meta);
        report.ramp = o.ramp.clone();
        report.cancellation = o.cancellation;
        if let Some(w) = self.precision.as_mut() {
            w.finished(&mut report);
        }
        if let Some(sh) = self.shard.filter(|sh| !sh.is_whole()) {
            // This shard's share of the rate asked for (every N-th arrival).
            report.rates.target_rate = report.rates.target_rate.map(|r| r / f64::from(sh.count));
        }
        // Gauges over the window the latency figures describe (docs/metrics.md).
        let tl = &report.timeline;
        let span = bench_servermetrics::Span {
            start: o.start,
            end: o.end,
            open: tl.steady_start_ns.unwrap_or(o.window.open),
            close: tl.steady_end_ns.unwrap_or(o.window.close),
        };
        report.server_metrics = self.scrapers.server_metrics(span);
        report.gpu_metrics = self.scrapers.gpu_metrics(span, self.gpu_work);
        report
    }

    /// Logs the benchmark's error samples (with a hint, once, when the server refused vLLM's
    /// body fields), and the requests never sent or abandoned.
    fn warn_benchmark(&mut self, o: &BenchmarkOutcome, report: &BenchmarkReport) {
        for (kind, messages) in &report.error_samples {
            for m in messages {
                tracing::warn!(label = %o.strategy.label(), kind = %kind, "request errored: {m}");
                if kind == "http_400" && !self.hinted {
                    if let Some(field) = bench_worker::rejected_vllm_field(400, m) {
                        self.hinted = true;
                        self.events.hint(&format!(
                            "the server refused vLLM's `{field}` body field (HTTP 400); \
                             this API does not take vLLM's extensions: run with --vllm-extensions off"
                        ));
                    }
                }
            }
        }
        if o.not_sent > 0 {
            tracing::warn!(
                label = %o.strategy.label(),
                not_sent = o.not_sent,
                "requests were due but never got a concurrency slot"
            );
        }
        if o.abandoned > 0 {
            tracing::warn!(label = %o.strategy.label(), abandoned = o.abandoned, "requests ignored cancellation and were abandoned");
        }
    }

    /// Writes the benchmark's vLLM result file (`--save-result`), keeping a failure for the
    /// exit.
    fn write_vllm_file(&mut self, report: &BenchmarkReport) {
        if let Some(files) = self.vllm_files.as_mut() {
            match files.write(report) {
                Ok(p) => tracing::info!(path = %p.display(), "vLLM result file written"),
                Err(e) => {
                    tracing::error!("writing the vLLM result file failed: {e:#}");
                    self.write_error = Some(format!("{e:#}"));
                }
            }
        }
    }

    /// Adds the benchmark to the run (or its running trial) and writes the files.
    fn keep(&mut self, report: BenchmarkReport) {
        match self.run.trials.as_mut().and_then(|t| t.runs.last_mut()) {
            // Each trial's benchmarks are written as they finish, as a run's are.
            Some(trial) => trial.benchmarks.push(report),
            None => self.run.benchmarks.push(report),
        }
        if let Some(c) = self.run.shard.as_mut().and_then(|s| s.clock.as_mut()) {
            c.wall_minus_run_end_ms = Some(crate::shard::wall_minus_run_ms(&self.clock));
        }
        self.files.write(&self.run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(headers: Option<bench_core::Nanos>, outcome: bench_core::Outcome) -> RequestRecord {
        RequestRecord {
            id: 0,
            scheduled: 0,
            slot: 0,
            dispatched: 0,
            headers,
            chunks: Vec::new(),
            end: 10,
            prompt_tokens: 0,
            prompt_tokens_source: bench_core::TokenSource::Tokenizer,
            output_tokens: 0,
            output_tokens_source: bench_core::TokenSource::Tokenizer,
            requested_output_tokens: None,
            outcome,
            session: None,
            reasoning: None,
            cached_tokens: None,
            images: None,
            target: None,
            model: None,
        }
    }

    #[test]
    fn only_a_request_without_any_response_counts_as_unanswered() {
        let lost = || bench_core::Outcome::Connect {
            message: "connection lost mid-stream: reset".into(),
        };
        assert_eq!(
            unanswered(&record(None, lost())),
            Some("connection lost mid-stream: reset")
        );
        // Headers came: the server answered, whatever became of the stream after them.
        assert_eq!(unanswered(&record(Some(5), lost())), None);
        let timeout = bench_core::Outcome::Timeout {
            phase: bench_core::TimeoutPhase::Connect,
        };
        assert_eq!(
            unanswered(&record(None, timeout)),
            Some("connect timed out")
        );
        assert_eq!(
            unanswered(&record(None, bench_core::Outcome::Cancelled)),
            None
        );
    }
}
