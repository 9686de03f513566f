//! The vocabulary of bench and the rules its crates share. The vocabulary: what a request asks
//! for ([`RequestSpec`]), what happened to it ([`RequestRecord`], [`Outcome`]), the run clock
//! ([`Clock`]) every timestamp is taken against, the [`Backend`] trait through which the
//! scheduler hands work to a transport, the load shape ([`Strategy`]), why a benchmark stopped
//! ([`StopReason`]) and what it did ([`BenchmarkOutcome`]).
//!
//! The shared rules, each applied by more than one crate and so kept in one place: the
//! measurement [`Window`] and the one rule that places a request in it ([`Phase`]), the
//! steady-state rates over it, the settling time and steady state ([`settle_time`],
//! [`Steady`]), the sustain verdict of an open loop ([`Sustained`]), the SLO and its answer
//! ([`Slo`], [`Capacity`]), intervals ([`Interval`]), precision targets ([`Precision`]), ramps,
//! cancellations, model mixes, shards and load balancing among targets.
//!
//! It owns no I/O and decides nothing about a run (which load to apply, when to send, what to
//! print): it sits at the bottom of the dependency graph so that `profile`, `loader`, `worker`
//! and `report` can agree on types and rules without depending on each other.

mod arrivals;
mod balance;
mod batch;
mod cancel;
mod cancel_wait;
mod image;
mod interval;
mod models;
mod pages;
mod precision;
mod ramp;
mod rates;
mod session;
mod settle;
mod shard;
mod shown;
mod steady;
mod strategy;
mod sustain;
mod window;

pub use arrivals::{TokenArrivals, SKIP_FRACTION};
pub use balance::{affinity_index, Assigned, Balance, Balancer, UnknownBalance};
pub use batch::ServerBatch;
pub use cancel::Cancellation;
pub use cancel_wait::CancelWait;
pub use image::{image_size, ImageCounts, ImageInput};
pub use interval::{crossing, t975, CapacityIntervals, CrossingInterval, Interval, Sure};
pub use models::{
    model_list_text, parse_model_list, ModelMix, ModelSelection, ModelWeight, MAX_MODELS,
};
pub use pages::Pages;
pub use precision::{Precision, PrecisionError, Target, DEFAULT_BUDGET_LENGTHS, KEY_FIGURES};
pub use ramp::{Ramp, RampOver, RampRecord, RampShape, RateChange, MAX_CHANGES};
pub use rates::{BenchmarkOutcome, RateInput, WindowRates};
pub use session::{
    parse_secs, ChatMessage, ConversationSpec, Reply, SessionCounts, SessionTurn, ThinkTime,
    ToolCall, Tools, TurnKind, TurnRequest, FLATTEN_SEPARATOR,
};
pub use settle::{settle_time, SETTLE_BINS, SETTLE_SHORTFALL};
pub use shard::Shard;
pub use shown::escape_controls;
pub use steady::{Found, LatencyScope, Steady, FILL_QUANTILE, MIN_STEADY_REQUESTS};
pub use strategy::{Release, Strategy, DEFAULT_THROUGHPUT_CONCURRENCY};
pub use sustain::{Sustained, Unjudged, Verdict, KEPT_UP, SUSTAIN_BATCHES, SUSTAIN_MIN_ARRIVALS};
pub use window::{Phase, StopReason, Window};

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
pub use tokio_util::sync::CancellationToken;

mod slo;
pub use slo::{
    kept_up, metric_key, served, served_sure, Capacity, NotNarrowed, Refinement, Slo, SloBound,
    SloBracket, SloError, SloLimit, SloMetric, SloStat, Spent, TraceCapacity,
};

/// Whether a count is 0 (serde's `skip_serializing_if` for counts that only some runs have,
/// so that runs without them serialize as before).
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Nanoseconds since the run's [`Clock`] epoch. Plain integers serialize compactly and make
/// per-request records independent of the process that took them.
pub type Nanos = u64;

/// The run's monotonic clock. Every timestamp of a run is a [`Nanos`] offset from one epoch, so
/// records from the scheduler (intended send), the worker (dispatch, chunks) and the report agree.
///
/// Built on `tokio::time::Instant`, so tests on tokio's paused clock see exact, repeatable times.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: tokio::time::Instant,
    wall_epoch: SystemTime,
}

impl Clock {
    /// Starts a clock whose epoch is now.
    pub fn start() -> Self {
        Self {
            epoch: tokio::time::Instant::now(),
            wall_epoch: SystemTime::now(),
        }
    }

    /// A clock whose epoch is the wall-clock time `wall` (past or future), so that processes
    /// started apart share one time axis (shards given one `--start-at`). Its offsets are
    /// only as aligned as the machines' wall clocks.
    pub fn anchored(wall: SystemTime) -> Self {
        let now = tokio::time::Instant::now();
        let wall_now = SystemTime::now();
        let epoch = match wall.duration_since(wall_now) {
            Ok(ahead) => now + ahead,
            Err(e) => now.checked_sub(e.duration()).unwrap_or(now),
        };
        Self {
            epoch,
            wall_epoch: wall,
        }
    }

    /// Nanoseconds elapsed since the epoch.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.since(tokio::time::Instant::now())
    }

    /// The offset of `instant` from the epoch (0 if it is earlier).
    #[inline]
    pub fn since(&self, instant: tokio::time::Instant) -> Nanos {
        instant.saturating_duration_since(self.epoch).as_nanos() as Nanos
    }

    /// The instant `ns` after the epoch.
    #[inline]
    pub fn instant(&self, ns: Nanos) -> tokio::time::Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    /// Wall-clock time of the epoch, for turning offsets into dates in reports.
    pub fn wall_epoch(&self) -> SystemTime {
        self.wall_epoch
    }

    /// Wall-clock time of offset `ns`.
    pub fn wall(&self, ns: Nanos) -> SystemTime {
        self.wall_epoch + Duration::from_nanos(ns)
    }
}

/// One request to send: produced by the loader, consumed by the worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSpec {
    /// The prompt text. Chat backends send it as the content of one user message.
    pub prompt: Arc<str>,
    /// Prompt tokens as counted by the loader's tokenizer (the message content, not the
    /// rendered chat template).
    pub prompt_tokens: u32,
    /// Output tokens asked for (`max_tokens` and friends). `None` lets the server decide.
    pub output_tokens: Option<u32>,
    /// A trace's recorded arrival: nanoseconds after the replay's first row, before any
    /// speed-up (`None` for data without a schedule); `Strategy::Trace` paces by it (a
    /// session by its first turn's). For a later turn of a trace's session it is instead the
    /// recorded delay after the previous turn's answer, which the session runs as that turn's
    /// pause (scaled by a replay's speed-up) in place of the think time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Nanos>,
    /// The further inputs of a batched request (data key `batch_size`): an embeddings request
    /// sends `prompt` followed by these as its `input` list; a rerank request sends `prompt` as
    /// its query and these as its documents. `prompt_tokens` counts every input. Empty for
    /// generative requests (an empty `Vec` costs no allocation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<Arc<str>>,
    /// Images sent with the prompt (chat backend), each as an `image_url` content part after
    /// the text. Empty without images (no allocation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageInput>,
}

impl RequestSpec {
    /// Inputs the request carries: `prompt` and the [`RequestSpec::batch`].
    pub fn inputs(&self) -> usize {
        1 + self.batch.len()
    }
}

/// Where a token count came from. Reports say it, so a requested count is never passed off
/// as a measured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage` block (or TGI's `details.generated_tokens`).
    Usage,
    /// The client's tokenizer counted the text.
    Tokenizer,
    /// The number of streamed content chunks (one token per chunk assumed); used only when the
    /// server gave no usage and no tokenizer was available.
    Chunks,
    /// Not measured at all: the count the client asked for. Reports flag it.
    Requested,
}

/// One streamed chunk that carried generated (or reasoning) text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Arrival of the chunk's bytes, taken before JSON parsing.
    pub at: Nanos,
    /// Tokens the chunk carried (1 unless the server batches tokens into one event).
    pub tokens: u32,
    /// The chunk carried reasoning text only (`delta.reasoning_content`, `delta.reasoning`, or
    /// text inside `<think>` tags when asked for), no answer text. A chunk that carries both
    /// is an answer chunk: the answer has begun.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasoning: bool,
}

impl Chunk {
    /// A chunk of answer text (or of a response that does not tell reasoning apart).
    pub fn answer(at: Nanos, tokens: u32) -> Self {
        Self {
            at,
            tokens,
            reasoning: false,
        }
    }

    /// A chunk of reasoning text only.
    pub fn reasoning(at: Nanos, tokens: u32) -> Self {
        Self {
            at,
            tokens,
            reasoning: true,
        }
    }
}

/// The reasoning tokens of one response, with where their count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningTokens {
    /// Reasoning tokens: part of the record's `output_tokens`, so the answer tokens are
    /// `output_tokens - tokens` (saturating).
    pub tokens: u32,
    /// `usage` when the server sent `usage.completion_tokens_details.reasoning_tokens`, else
    /// `tokenizer` (the reasoning text counted) or `chunks` (one token per reasoning chunk).
    pub source: TokenSource,
}

/// Which timeout fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutPhase {
    /// Establishing the connection (TCP and TLS).
    Connect,
    /// Waiting for the response headers / first byte.
    FirstByte,
    /// Waiting too long between two chunks of the body.
    Idle,
    /// The whole request took longer than its limit.
    Total,
}

/// What became of a request. Failures are data, counted in reports, never errors that abort a
/// run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The response ended normally.
    Completed,
    /// Cancelled by the scheduler (the benchmark's time ran out, or the user interrupted);
    /// the record keeps what had arrived.
    Cancelled,
    /// Cancelled by the client on purpose, as load (`--cancel-rate`, [`Cancellation`]): its
    /// own status, neither an error nor incomplete; the record keeps what had arrived.
    ClientCancelled,
    /// The server answered with a non-success status.
    Http {
        /// The HTTP status code.
        status: u16,
        /// A bounded excerpt of the body.
        body: String,
        /// The server's `Retry-After` (429 and 503), in milliseconds, as sent (not bounded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// The connection could not be made or was lost (refused, reset, TLS failure).
    Connect {
        /// What went wrong.
        message: String,
    },
    /// A timeout fired.
    Timeout {
        /// Which one.
        phase: TimeoutPhase,
    },
    /// The server sent an error event inside the stream (`data: {"error": ...}`).
    StreamError {
        /// The server's message.
        message: String,
    },
    /// The server's reply could not be understood (malformed SSE or JSON, wrong framing).
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The reply was well-formed JSON but not the answer asked for: an embeddings reply
    /// without vectors or with a vector count other than the inputs sent, a rerank reply
    /// without results or with more results than documents.
    BadReply {
        /// What was wrong, with the counts.
        message: String,
    },
}

/// The three statuses reports split counts by (guidellm's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Finished normally.
    Completed,
    /// Cancelled while in flight.
    Incomplete,
    /// Failed.
    Errored,
    /// Cancelled by the client on purpose (`--cancel-rate`).
    Cancelled,
}

impl Outcome {
    /// The report status of this outcome.
    pub fn status(&self) -> Status {
        match self {
            Outcome::Completed => Status::Completed,
            Outcome::Cancelled => Status::Incomplete,
            Outcome::ClientCancelled => Status::Cancelled,
            _ => Status::Errored,
        }
    }

    /// What the server or the transport said, for the outcomes that carry a message (the
    /// HTTP error body excerpt, the connection error, the stream's error event, the protocol
    /// fault).
    pub fn message(&self) -> Option<&str> {
        match self {
            Outcome::Http { body, .. } => Some(body),
            Outcome::Connect { message }
            | Outcome::StreamError { message }
            | Outcome::Protocol { message }
            | Outcome::BadReply { message } => Some(message),
            Outcome::Completed
            | Outcome::Cancelled
            | Outcome::ClientCancelled
            | Outcome::Timeout { .. } => None,
        }
    }

    /// A short stable name for grouping errors in reports, e.g. `http_503`, `timeout_idle`;
    /// a 429 is `rate_limited` ([`RATE_LIMITED`]).
    pub fn kind_name(&self) -> String {
        match self {
            Outcome::Completed => "completed".into(),
            Outcome::Cancelled => "cancelled".into(),
            Outcome::ClientCancelled => "client_cancelled".into(),
            Outcome::Http { status: 429, .. } => RATE_LIMITED.into(),
            Outcome::Http { status, .. } => format!("http_{status}"),
            Outcome::Connect { .. } => "connect".into(),
            Outcome::Timeout { phase } => match phase {
                TimeoutPhase::Connect => "timeout_connect".into(),
                TimeoutPhase::FirstByte => "timeout_first_byte".into(),
                TimeoutPhase::Idle => "timeout_idle".into(),
                TimeoutPhase::Total => "timeout_total".into(),
            },
            Outcome::StreamError { .. } => "stream_error".into(),
            Outcome::Protocol { .. } => "protocol".into(),
            Outcome::BadReply { .. } => "bad_reply".into(),
        }
    }

    /// How long the server asked the client to wait before its next request (`Retry-After` on
    /// a 429 or 503), bounded by [`RETRY_AFTER_MAX`]. Closed-loop streams and sessions pause
    /// this long before they send again; open-loop schedules do not move.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Outcome::Http {
                retry_after_ms: Some(ms),
                ..
            } => Some(Duration::from_millis(*ms).min(RETRY_AFTER_MAX)),
            _ => None,
        }
    }
}

/// The error kind of a `429 Too Many Requests` reply.
pub const RATE_LIMITED: &str = "rate_limited";

/// The longest pause a server's `Retry-After` imposes on a closed-loop stream or a session
/// (a benchmark's end cuts it short too).
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);

/// How the scheduler released one request: handed to [`Backend::send`].
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    /// Sequence number within the benchmark.
    pub id: u64,
    /// The run clock.
    pub clock: Clock,
    /// When the strategy wanted the request sent (the intended time; latency measured from
    /// here is free of coordinated omission).
    pub scheduled: Nanos,
    /// When the request got a concurrency slot (equals `scheduled` when it did not wait).
    pub slot: Nanos,
}

/// Everything that happened to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Sequence number within the benchmark.
    pub id: u64,
    /// Intended send time.
    pub scheduled: Nanos,
    /// When a concurrency slot was obtained (client queue time is `slot - scheduled`).
    pub slot: Nanos,
    /// Just before the request was written.
    pub dispatched: Nanos,
    /// Response headers arrived.
    pub headers: Option<Nanos>,
    /// Every chunk that carried generated text, in arrival order. The first is TTFT's end.
    pub chunks: Vec<Chunk>,
    /// The response ended (or failed, or was cancelled).
    pub end: Nanos,
    /// Prompt tokens: server usage when given, else the loader's count.
    pub prompt_tokens: u32,
    /// Where `prompt_tokens` came from.
    pub prompt_tokens_source: TokenSource,
    /// Output tokens received.
    pub output_tokens: u32,
    /// Where `output_tokens` came from.
    pub output_tokens_source: TokenSource,
    /// Output tokens that were asked for, if any.
    pub requested_output_tokens: Option<u32>,
    /// What became of the request.
    pub outcome: Outcome,
    /// The session and turn this request was, when the benchmark ran sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionTurn>,
    /// Reasoning tokens, when the response carried reasoning (a reasoning chunk, or a
    /// non-zero `reasoning_tokens` in its usage); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningTokens>,
    /// Prompt tokens the server says it served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`); `None` when it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
    /// The images the request sent, when it sent any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageCounts>,
    /// The target it was sent to, by index from 0 in the order the targets were given, when
    /// the run spread its load across several ([`Balance`]); `None` with one target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<u32>,
    /// The model it named, by index from 0 in the order of the run's model mix (docs/cli.md,
    /// "Model mixes"); `None` with one model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<u32>,
}

impl RequestRecord {
    /// The arrival of the first generated token.
    pub fn first_token(&self) -> Option<Nanos> {
        self.chunks.first().map(|c| c.at)
    }

    /// The arrival of the last generated token.
    pub fn last_token(&self) -> Option<Nanos> {
        self.chunks.last().map(|c| c.at)
    }

    /// The arrival of the first answer (non-reasoning) chunk: TTFO's end.
    pub fn first_answer(&self) -> Option<Nanos> {
        self.chunks.iter().find(|c| !c.reasoning).map(|c| c.at)
    }

    /// Output tokens that were not reasoning (all of them when the response had none).
    pub fn answer_tokens(&self) -> u32 {
        self.output_tokens
            .saturating_sub(self.reasoning.map_or(0, |r| r.tokens))
    }

    /// The report status.
    pub fn status(&self) -> Status {
        self.outcome.status()
    }
}

/// A transport that turns one [`RequestSpec`] into one [`RequestRecord`]. The scheduler is
/// generic over it, so tests drive the scheduler with a fake backend on tokio's paused clock.
///
/// Implementations must never panic on anything a server sends, must return promptly (with
/// [`Outcome::Cancelled`] and whatever arrived) once `cancel` fires, and must take
/// `dispatched` just before writing the request.
pub trait Backend: Send + Sync + 'static {
    /// Sends one request and records what happened.
    fn send(
        &self,
        spec: RequestSpec,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> impl Future<Output = RequestRecord> + Send;

    /// Sends one turn of a session and records what happened, with the reply the server
    /// streamed (its text and tool call; `None` when it is not known). The default flattens the conversation into one
    /// prompt ([`TurnRequest::flattened`]) and knows no reply text.
    fn send_turn(
        &self,
        turn: TurnRequest,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> impl Future<Output = (RequestRecord, Option<Reply>)> + Send {
        let spec = turn.flattened();
        let sent = self.send(spec, dispatch, cancel);
        async move { (sent.await, None) }
    }

    /// The requests in flight that have had no byte from the server for at least
    /// [`SILENCE_NOTICE`], for the live progress. The default knows of none.
    fn silent(&self) -> Vec<Silent> {
        Vec::new()
    }
}

/// How long a request in flight may go without a byte from the server before the live
/// progress names it (a stall shows long before its timeout ends it).
pub const SILENCE_NOTICE: Duration = Duration::from_secs(10);

/// A request in flight that has had no byte from the server for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Silent {
    /// The request's sequence number within its benchmark.
    pub id: u64,
    /// How long since it was sent, or since the last byte of its stream.
    pub silent_for: Duration,
    /// Whether it still waits for the response, or for the rest of a started stream.
    pub waiting_for: Waiting,
}

/// What a [`Silent`] request waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// The response's first byte (the first-byte timeout ends it).
    Response,
    /// The next piece of a stream that has started (the idle timeout ends it).
    Stream,
}

impl Waiting {
    /// How the progress line says it.
    pub fn name(self) -> &'static str {
        match self {
            Waiting::Response => "waiting for the response",
            Waiting::Stream => "mid-stream",
        }
    }
}

impl<B: Backend> Backend for Arc<B> {
    fn send(
        &self,
        spec: RequestSpec,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> impl Future<Output = RequestRecord> + Send {
        (**self).send(spec, dispatch, cancel)
    }

    fn send_turn(
        &self,
        turn: TurnRequest,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> impl Future<Output = (RequestRecord, Option<Reply>)> + Send {
        (**self).send_turn(turn, dispatch, cancel)
    }

    fn silent(&self) -> Vec<Silent> {
        (**self).silent()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_status_and_kind() {
        assert_eq!(Outcome::Completed.status(), Status::Completed);
        assert_eq!(Outcome::Cancelled.status(), Status::Incomplete);
        assert_eq!(Outcome::ClientCancelled.status(), Status::Cancelled);
        let o = Outcome::Http {
            status: 503,
            body: "busy".into(),
            retry_after_ms: None,
        };
        assert_eq!(o.status(), Status::Errored);
        assert_eq!(o.kind_name(), "http_503");
        assert_eq!(o.retry_after(), None);
        let limited = |ms| Outcome::Http {
            status: 429,
            body: String::new(),
            retry_after_ms: ms,
        };
        assert_eq!(limited(None).kind_name(), "rate_limited");
        assert_eq!(limited(None).status(), Status::Errored);
        assert_eq!(
            limited(Some(1500)).retry_after(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            limited(Some(3_600_000)).retry_after(),
            Some(RETRY_AFTER_MAX)
        );
        assert_eq!(
            Outcome::Timeout {
                phase: TimeoutPhase::Idle
            }
            .kind_name(),
            "timeout_idle"
        );
    }

    #[test]
    fn record_round_trips_through_json() {
        let r = RequestRecord {
            target: None,
            model: None,
            cached_tokens: None,
            session: None,
            reasoning: Some(ReasoningTokens {
                tokens: 1,
                source: TokenSource::Chunks,
            }),
            images: Some(ImageCounts {
                count: 2,
                pixels: 640 * 480,
                bytes: 1234,
            }),
            id: 7,
            scheduled: 1,
            slot: 2,
            dispatched: 3,
            headers: Some(4),
            chunks: vec![Chunk::reasoning(5, 1), Chunk::answer(9, 2)],
            end: 10,
            prompt_tokens: 11,
            prompt_tokens_source: TokenSource::Usage,
            output_tokens: 3,
            output_tokens_source: TokenSource::Tokenizer,
            requested_output_tokens: Some(3),
            outcome: Outcome::Timeout {
                phase: TimeoutPhase::FirstByte,
            },
        };
        let s = serde_json::to_string(&r).expect("serialize");
        let back: RequestRecord = serde_json::from_str(&s).expect("deserialize");
        assert_eq!(back, r);
        assert_eq!(back.first_token(), Some(5));
        assert_eq!(back.last_token(), Some(9));
        assert_eq!(back.first_answer(), Some(9));
        assert_eq!(back.answer_tokens(), 2);
        assert!(s.contains("\"reasoning\":true"), "{s}");
        assert_eq!(
            s.matches("\"reasoning\":").count(),
            2,
            "answer chunks omit the flag: {s}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn clock_is_exact_on_paused_time() {
        let c = Clock::start();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(c.now(), 1_500_000_000);
        assert_eq!(c.since(c.instant(42)), 42);
    }
}
