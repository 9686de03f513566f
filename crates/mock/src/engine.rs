//! The continuous-batching engine: a FIFO queue, `max_batch` slots, per-sequence prefill, and
//! decode steps on an absolute schedule.
//!
//! The model (see `docs/simulator.md` for the closed form it yields):
//! - a request waits in FIFO order until a batch slot is free, then holds the slot until its
//!   last token (or until its client goes away);
//! - on admission its prefill starts and lasts `prefill_overhead + prompt_tokens / prefill_rate`;
//!   the first token is released when it ends (TTFT = queue wait + prefill);
//! - while any slot is held, the engine runs decode steps back to back; a step that starts with
//!   `r` slots held lasts `step_base + step_per_seq * r`, and at its end every decoding sequence
//!   receives one token; a sequence whose prefill ended joins the decoding set at the next step
//!   boundary; slots freed at a boundary are refilled from the queue at that same instant;
//! - step ends are computed from the previous step's *scheduled* end, never from when the timer
//!   actually fired, so a late wake-up never stretches the schedule.
//!
//! Tokens reach the HTTP side through [`SeqShared`]: a released-token counter and a waker, so
//! the engine never allocates or formats per token.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::metrics::Metrics;

/// Token progress of one sequence, shared by the engine (writer) and the response (reader).
#[derive(Debug, Default)]
pub(crate) struct SeqShared {
    released: AtomicU32,
    waker: AtomicWaker,
    cancelled: AtomicBool,
}

impl SeqShared {
    fn release(&self, tokens: u32) {
        self.released.store(tokens, Ordering::Release);
        self.waker.wake();
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

/// The response side's handle on a sequence. Dropping it tells the engine the client is gone,
/// so the slot is freed at the next event.
#[derive(Debug)]
pub(crate) struct SeqHandle(Arc<SeqShared>);

impl SeqHandle {
    /// Ready with the number of released tokens once it reaches `need`.
    pub(crate) fn poll_released(&self, cx: &mut Context<'_>, need: u32) -> Poll<u32> {
        let r = self.0.released.load(Ordering::Acquire);
        if r >= need {
            return Poll::Ready(r);
        }
        self.0.waker.register(cx.waker());
        let r = self.0.released.load(Ordering::Acquire);
        if r >= need {
            Poll::Ready(r)
        } else {
            Poll::Pending
        }
    }

    /// Waits until at least `need` tokens are released.
    pub(crate) async fn wait_for(&self, need: u32) -> u32 {
        poll_fn(|cx| self.poll_released(cx, need)).await
    }
}

impl Drop for SeqHandle {
    fn drop(&mut self) {
        self.0.cancelled.store(true, Ordering::Release);
    }
}

/// Timing parameters, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EngineParams {
    pub max_batch: usize,
    pub step_base_ns: f64,
    pub step_per_seq_ns: f64,
    pub prefill_overhead_ns: f64,
    /// Nanoseconds per prompt token (0 when the rate is "instant").
    pub prefill_ns_per_token: f64,
}

impl EngineParams {
    pub(crate) fn from_config(c: &crate::MockConfig) -> Self {
        Self {
            max_batch: c.max_batch as usize,
            step_base_ns: c.step_base_ms * 1e6,
            step_per_seq_ns: c.step_per_seq_ms * 1e6,
            prefill_overhead_ns: c.prefill_overhead_ms * 1e6,
            prefill_ns_per_token: if c.prefill_rate > 0.0 {
                1e9 / c.prefill_rate
            } else {
                0.0
            },
        }
    }

    /// Duration of a step that starts with `slots` slots held.
    fn step(&self, slots: usize) -> Duration {
        // At least 1 ns so that a step always moves time forward.
        let ns = (self.step_base_ns + self.step_per_seq_ns * slots as f64).round();
        Duration::from_nanos((ns as u64).max(1))
    }

    /// Prefill time of a prompt.
    fn prefill(&self, prompt_tokens: u32) -> Duration {
        let ns = self.prefill_overhead_ns + self.prefill_ns_per_token * f64::from(prompt_tokens);
        // Capped at a day: nothing a test or a benchmark would wait for.
        Duration::from_nanos(ns.round().min(86_400e9) as u64)
    }
}

struct Submit {
    shared: Arc<SeqShared>,
    prompt_tokens: u32,
    tokens: u32,
}

/// Where requests are handed to the engine task.
#[derive(Debug, Clone)]
pub(crate) struct EngineHandle {
    tx: mpsc::UnboundedSender<Submit>,
}

impl std::fmt::Debug for Submit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Submit")
            .field("prompt_tokens", &self.prompt_tokens)
            .field("tokens", &self.tokens)
            .finish()
    }
}

impl EngineHandle {
    /// Queues a sequence of `tokens` output tokens (at least 1).
    pub(crate) fn submit(&self, prompt_tokens: u32, tokens: u32) -> SeqHandle {
        let shared = Arc::new(SeqShared::default());
        let msg = Submit {
            shared: shared.clone(),
            prompt_tokens,
            tokens: tokens.max(1),
        };
        if self.tx.send(msg).is_err() {
            // The engine is gone (server shutting down): release everything so that no
            // response waits forever.
            shared.release(u32::MAX);
        }
        SeqHandle(shared)
    }
}

/// Starts the engine task.
pub(crate) fn spawn(
    params: EngineParams,
    metrics: Arc<Metrics>,
) -> (EngineHandle, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let engine = Engine {
        params,
        metrics,
        waiting: VecDeque::new(),
        prefilling: Vec::new(),
        joining: Vec::new(),
        decoding: Vec::new(),
        step_deadline: None,
    };
    let task = tokio::spawn(engine.run(rx));
    (EngineHandle { tx }, task)
}

struct Waiting {
    shared: Arc<SeqShared>,
    prompt_tokens: u32,
    tokens: u32,
    arrival: Instant,
}

struct Active {
    shared: Arc<SeqShared>,
    prompt_tokens: u32,
    tokens: u32,
    released: u32,
    prefill_end: Instant,
    /// When the engine received it (server-side latencies start here).
    arrival: Instant,
    /// Scheduled time of its latest token.
    last_token: Instant,
}

impl Active {
    /// Its first token, released at scheduled time `t`.
    fn first_token(&mut self, t: Instant, metrics: &Metrics) {
        self.released = 1;
        self.last_token = t;
        self.shared.release(1);
        metrics.add_generated(1);
        metrics.ttft.observe(t - self.arrival);
        if self.tokens <= 1 {
            metrics.e2e.observe(t - self.arrival);
        }
    }
}

struct Engine {
    params: EngineParams,
    metrics: Arc<Metrics>,
    waiting: VecDeque<Waiting>,
    prefilling: Vec<Active>,
    /// Prefill done, first token released, waiting for the next step boundary.
    joining: Vec<Active>,
    decoding: Vec<Active>,
    /// Scheduled end of the step in progress; `None` when no slot is held.
    step_deadline: Option<Instant>,
}

impl Engine {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Submit>) {
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let sleep = tokio::time::sleep_until(far);
        tokio::pin!(sleep);
        loop {
            let next = self.next_event();
            sleep.as_mut().reset(next.unwrap_or(far));
            tokio::select! {
                biased;
                msg = rx.recv() => {
                    let Some(msg) = msg else { break };
                    let now = Instant::now();
                    self.run_until(now);
                    // Requests that arrived together are admitted together, so the step that
                    // starts now is sized for all of them.
                    let mut next_msg = Some(msg);
                    while let Some(msg) = next_msg {
                        self.waiting.push_back(Waiting {
                            shared: msg.shared,
                            prompt_tokens: msg.prompt_tokens,
                            tokens: msg.tokens,
                            arrival: now,
                        });
                        next_msg = rx.try_recv().ok();
                    }
                    self.admit(now);
                    self.start_steps_if_idle(now);
                }
                () = &mut sleep, if next.is_some() => {
                    self.run_until(Instant::now());
                }
            }
            self.publish_gauges();
        }
        // Engine stopping: let every response finish rather than hang.
        for a in self
            .prefilling
            .iter()
            .chain(&self.joining)
            .chain(&self.decoding)
        {
            a.shared.release(u32::MAX);
        }
        for w in &self.waiting {
            w.shared.release(u32::MAX);
        }
    }

    fn slots(&self) -> usize {
        self.prefilling.len() + self.joining.len() + self.decoding.len()
    }

    fn next_prefill_end(&self) -> Option<Instant> {
        self.prefilling.iter().map(|a| a.prefill_end).min()
    }

    fn next_event(&self) -> Option<Instant> {
        match (self.next_prefill_end(), self.step_deadline) {
            (Some(p), Some(d)) => Some(p.min(d)),
            (p, d) => p.or(d),
        }
    }

    /// Processes, in scheduled order, every event due at or before `now`.
    fn run_until(&mut self, now: Instant) {
        while let Some(t) = self.next_event() {
            if t > now {
                break;
            }
            // Prefills ending at a boundary join that boundary, so they go first.
            let mut freed = false;
            let mut i = 0;
            while i < self.prefilling.len() {
                if self.prefilling[i].prefill_end <= t {
                    let mut a = self.prefilling.swap_remove(i);
                    if a.shared.is_cancelled() {
                        freed = true;
                        continue;
                    }
                    a.first_token(t, &self.metrics);
                    if a.tokens <= 1 {
                        freed = true;
                    } else {
                        self.joining.push(a);
                    }
                } else {
                    i += 1;
                }
            }
            if self.step_deadline == Some(t) {
                self.step_boundary(t);
            } else if freed {
                self.admit(t);
                self.start_steps_if_idle(t);
            }
        }
    }

    /// The end of a decode step at scheduled time `t`.
    fn step_boundary(&mut self, t: Instant) {
        let mut generated = 0u64;
        let m = &self.metrics;
        self.decoding.retain_mut(|a| {
            if a.shared.is_cancelled() {
                return false;
            }
            a.released += 1;
            a.shared.release(a.released);
            generated += 1;
            m.itl.observe(t - a.last_token);
            a.last_token = t;
            if a.released >= a.tokens {
                m.e2e.observe(t - a.arrival);
            }
            a.released < a.tokens
        });
        self.metrics.add_generated(generated);
        self.joining.retain(|a| !a.shared.is_cancelled());
        self.decoding.append(&mut self.joining);
        self.step_deadline = None;
        self.admit(t);
        // Sequences admitted now with no prefill time join this boundary too.
        self.decoding.append(&mut self.joining);
        self.start_steps_if_idle(t);
    }

    /// Starts the next step at `t` when slots are held and no step is running.
    fn start_steps_if_idle(&mut self, t: Instant) {
        if self.step_deadline.is_none() && self.slots() > 0 {
            self.decoding.append(&mut self.joining);
            self.step_deadline = Some(t + self.params.step(self.slots()));
        }
    }

    /// Fills free slots from the queue, FIFO, with admission time `t`.
    fn admit(&mut self, t: Instant) {
        while self.slots() < self.params.max_batch {
            let Some(w) = self.waiting.pop_front() else {
                break;
            };
            if w.shared.is_cancelled() {
                continue;
            }
            let prefill = self.params.prefill(w.prompt_tokens);
            let a = Active {
                shared: w.shared,
                prompt_tokens: w.prompt_tokens,
                tokens: w.tokens,
                released: 0,
                prefill_end: t + prefill,
                arrival: w.arrival,
                last_token: t,
            };
            if prefill.is_zero() {
                let mut a = a;
                a.first_token(t, &self.metrics);
                if a.tokens > 1 {
                    self.joining.push(a);
                }
            } else {
                self.prefilling.push(a);
            }
        }
    }

    fn publish_gauges(&self) {
        self.metrics.set_queue(self.slots(), self.waiting.len());
        // The KV model: every slot-holding sequence holds its prompt and its output so far.
        let held: u64 = self
            .prefilling
            .iter()
            .chain(&self.joining)
            .chain(&self.decoding)
            .map(|a| u64::from(a.prompt_tokens) + u64::from(a.released))
            .sum();
        self.metrics.set_kv_tokens(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn server_histograms_and_kv_tokens_follow_the_schedule() {
        // One slot, 10 ms steps, 5 ms prefill, 3 tokens, prompt of 7 tokens: first token at 5,
        // joins the boundary at 10, tokens at 20 and 30.
        let metrics = Arc::new(Metrics::new("m", 1000));
        let (engine, _task) = spawn(params(1, 10.0, 0.0, 5.0), metrics.clone());
        let h = engine.submit(7, 3);
        h.wait_for(1).await;
        tokio::task::yield_now().await;
        assert_eq!(metrics.kv_tokens(), 8, "prompt + 1 token held");
        h.wait_for(3).await;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        assert_eq!((metrics.ttft.count(), ms(metrics.ttft.sum())), (1, 5.0));
        assert_eq!((metrics.itl.count(), ms(metrics.itl.sum())), (2, 25.0));
        assert_eq!((metrics.e2e.count(), ms(metrics.e2e.sum())), (1, 30.0));
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(metrics.kv_tokens(), 0, "a finished sequence holds nothing");
        let text = metrics.render();
        assert!(
            text.contains(
                "vllm:time_to_first_token_seconds_bucket{le=\"0.005\",model_name=\"m\"} 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 1\n"));
        assert!(text.contains("vllm:kv_cache_usage_perc{model_name=\"m\"} 0\n"));
    }

    fn params(max_batch: usize, base_ms: f64, per_seq_ms: f64, prefill_ms: f64) -> EngineParams {
        EngineParams {
            max_batch,
            step_base_ns: base_ms * 1e6,
            step_per_seq_ns: per_seq_ms * 1e6,
            prefill_overhead_ns: prefill_ms * 1e6,
            prefill_ns_per_token: 0.0,
        }
    }

    /// Submits a sequence at the current (paused) time and returns the offsets in ms from
    /// `t0` at which each of its tokens was released.
    fn track(engine: &EngineHandle, t0: Instant, tokens: u32) -> tokio::task::JoinHandle<Vec<f64>> {
        let h = engine.submit(0, tokens);
        tokio::spawn(async move {
            let mut at = Vec::new();
            for k in 1..=tokens {
                h.wait_for(k).await;
                at.push((Instant::now() - t0).as_secs_f64() * 1e3);
            }
            at
        })
    }

    #[tokio::test(start_paused = true)]
    async fn exact_schedule_with_queue_prefill_and_batch_dependent_steps() {
        let metrics = Arc::new(Metrics::new("m", 1000));
        // 2 slots, step = 10 + 1 * slots ms, prefill 5 ms.
        let (engine, _task) = spawn(params(2, 10.0, 1.0, 5.0), metrics.clone());
        let t0 = Instant::now();
        let a = track(&engine, t0, 3);
        let b = track(&engine, t0, 3);
        let c = track(&engine, t0, 3);
        let (a, b, c) = (
            a.await.expect("a"),
            b.await.expect("b"),
            c.await.expect("c"),
        );
        // A and B admitted at 0, first token at 5 (prefill), join the boundary at 12, then one
        // token per 12 ms step (2 slots held).
        assert_eq!(a, vec![5.0, 24.0, 36.0]);
        assert_eq!(b, vec![5.0, 24.0, 36.0]);
        // C waits in the queue until the boundary at 36, prefill ends at 41, joins at 47 (the
        // step started at 36 with 1 slot held lasts 11 ms), then 11 ms steps.
        assert_eq!(c, vec![41.0, 58.0, 69.0]);
        assert_eq!(metrics.generated(), 9);
    }

    #[tokio::test(start_paused = true)]
    async fn saturated_cycle_matches_closed_form() {
        // B = 3, S = 4 + 2 * 3 = 10 ms, P = 13 ms, n = 5: cycle = (ceil(13/10) + 4) * 10 = 60.
        let (engine, _task) = spawn(params(3, 4.0, 2.0, 13.0), Arc::new(Metrics::new("m", 1000)));
        let t0 = Instant::now();
        // 6 closed-loop clients, 4 requests each.
        let mut clients = Vec::new();
        for _ in 0..6 {
            let engine = engine.clone();
            clients.push(tokio::spawn(async move {
                let mut done = Vec::new();
                for _ in 0..4 {
                    let h = engine.submit(0, 5);
                    h.wait_for(5).await;
                    done.push((Instant::now() - t0).as_secs_f64() * 1e3);
                }
                done
            }));
        }
        let mut all = Vec::new();
        for c in clients {
            all.extend(c.await.expect("client"));
        }
        all.sort_by(f64::total_cmp);
        // After the first wave (whose first step may start before every client has arrived),
        // waves of 3 completions every 60 ms.
        assert_eq!(all.len(), 24);
        for i in 6..all.len() {
            assert_eq!(all[i] - all[i - 3], 60.0, "completion {i}: {all:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_sequences_free_their_slot() {
        let (engine, _task) = spawn(params(1, 10.0, 0.0, 0.0), Arc::new(Metrics::new("m", 1000)));
        let t0 = Instant::now();
        let first = engine.submit(0, 100);
        let second = track(&engine, t0, 2);
        tokio::time::sleep(Duration::from_millis(25)).await;
        drop(first);
        // The slot frees at the boundary at 30 ms; the second starts there.
        assert_eq!(second.await.expect("second"), vec![30.0, 40.0]);
    }

    #[tokio::test(start_paused = true)]
    async fn unloaded_sequence_gets_one_token_per_step() {
        let (engine, _task) = spawn(params(4, 10.0, 0.0, 0.0), Arc::new(Metrics::new("m", 1000)));
        let t0 = Instant::now();
        let h = engine.submit(0, 50);
        // Check only the last token: the 49 steps after the first token take 490 ms.
        h.wait_for(50).await;
        assert_eq!(Instant::now() - t0, Duration::from_millis(490));
    }
}
