//! The worker: one request in, one record out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use bench_core::{
    Backend, CancelWait, CancellationToken, Clock, Dispatch, Outcome, ReasoningTokens,
    RequestRecord, RequestSpec, Silent, TimeoutPhase, TokenSource, TurnRequest, Waiting,
};
use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use tokio::time::Instant;

use crate::body::{BodyBuilder, Urls};
use crate::client::{self, HttpClient};
use crate::excerpt::excerpt;
use crate::h1::{self, RespBody};
use crate::silence::{self, Mark};
use crate::stream::{Progress, StreamRecorder, StreamState};
use crate::{BackendKind, Error, Timeouts, WorkerConfig};

/// Counts the tokens of generated text (the tokenizer fallback when a server sends no usage).
pub type OutputCounter = Arc<dyn Fn(&str) -> usize + Send + Sync>;

/// How long each of the server-batch endpoints may take to answer ([`Worker::server_batch`]):
/// the batch is a hint, not worth a stall (a loopback server that held `/metrics` open held a
/// one-request run for 90 s: tests/it/peer_flags.rs).
const BATCH_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// After the final event, how long to wait for the body to end so the connection can be
/// reused. A server that keeps the body open longer only loses its pooled connection.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Most bytes of a non-success reply read for its excerpt.
const ERROR_BODY_READ: usize = 64 << 10;
/// Most bytes of a health or model-list reply read.
const PROBE_BODY_READ: usize = 4 << 20;
/// Cap on the up-front allocation for chunk timestamps.
const MAX_PREALLOC_CHUNKS: usize = 8192;
/// Bytes of kept text reserved per expected output token (English runs about 4-5 bytes a
/// token; a longer answer grows the text as before).
const TEXT_BYTES_PER_TOKEN: usize = 8;

struct Inner {
    client: HttpClient,
    urls: Urls,
    backend: BackendKind,
    headers: HeaderMap,
    body: BodyBuilder,
    timeouts: Timeouts,
    model: OnceLock<String>,
    /// The model mix, when requests choose among several models.
    mix: Option<Arc<bench_core::ModelMix>>,
    counter: Option<OutputCounter>,
    /// Replies are streamed (`WorkerConfig::stream`).
    stream: bool,
    /// `WorkerConfig::think_tags`.
    think_tags: bool,
    /// Requests resent because the server closed their connection unanswered (shared by
    /// clones, like the connections).
    resent: Arc<AtomicU64>,
    /// `/v1/responses` events of unknown types, ignored (shared by clones).
    ignored: Arc<AtomicU64>,
    /// Cleartext HTTP/1.1 targets: connections driven by the requests themselves.
    h1: Option<Arc<h1::H1Pool>>,
    /// Connection failures since the last request that got an answer (all requests).
    connect_failures: AtomicU64,
    /// Requests silent for [`bench_core::SILENCE_NOTICE`] (or `WorkerConfig::silence_notice`) or more, for the live progress.
    silent: Arc<silence::Board>,
    /// How long a request may be silent before it goes on the board.
    silence_notice: Duration,
    /// `WorkerConfig::session_header`.
    session_header: Option<HeaderName>,
    /// `WorkerConfig::replica_header`.
    replica_header: Option<HeaderName>,
    /// The replica names seen in `replica_header`, numbered in order of first sight (shared
    /// by clones).
    replica_names: Arc<std::sync::Mutex<Vec<Box<[u8]>>>>,
}

/// A session or replica header name, checked.
fn header_name(flag: &str, name: Option<&String>) -> Result<Option<HeaderName>, Error> {
    name.map(|n| {
        HeaderName::from_bytes(n.trim().as_bytes()).map_err(|_| Error::InvalidHeader {
            name: n.clone(),
            reason: format!("{flag}: not a valid header name"),
        })
    })
    .transpose()
}

/// Back-off of a request that could not connect: it holds its slot this long before it
/// returns, doubling with each consecutive failure from `CONNECT_BACKOFF_FIRST` up to
/// `CONNECT_BACKOFF_MAX`. A closed-loop stream whose server died then reconnects at most about
/// once a second instead of thousands of times (issue 13); its record's end is the moment the
/// connection failed, not the end of the pause.
const CONNECT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest pause after a failed connection.
const CONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The pause after the `failures`-th consecutive connection failure (1-based).
fn connect_backoff(failures: u64) -> Duration {
    let doublings = failures.saturating_sub(1).min(16) as u32;
    CONNECT_BACKOFF_FIRST
        .saturating_mul(1u32 << doublings)
        .min(CONNECT_BACKOFF_MAX)
}

/// How many times one request is resent when the server closes its connection before any
/// response byte (see [`client::is_closed_unanswered`]).
const MAX_RESENDS: u32 = 2;

/// Sends generative requests to one target through one pooled HTTP client. Cheap to clone:
/// clones share the client and its connections.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("target", &self.inner.urls.display)
            .field("backend", &self.inner.backend)
            .field("model", &self.inner.model.get())
            .finish_non_exhaustive()
    }
}

fn deadline(from: Instant, d: Duration) -> Instant {
    from.checked_add(d)
        .unwrap_or_else(|| from + Duration::from_secs(100 * 365 * 86_400))
}

/// The `anthropic-version` header sent to Anthropic's Messages API (the version its
/// streamed events follow); `--header 'anthropic-version: ...'` replaces it.
const ANTHROPIC_VERSION: &str = "2023-06-01";

fn header_map(cfg: &WorkerConfig) -> Result<HeaderMap, Error> {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let accept = if cfg.backend.pooling() {
        "application/json"
    } else {
        "text/event-stream"
    };
    h.insert(ACCEPT, HeaderValue::from_static(accept));
    let anthropic = cfg.backend == BackendKind::AnthropicMessages;
    if anthropic {
        h.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
    }
    if let Some(key) = cfg.api_key.as_deref().filter(|k| !k.trim().is_empty()) {
        // Anthropic's API takes the bare key in `x-api-key`; the others a bearer token.
        let (name, value) = if anthropic {
            (HeaderName::from_static("x-api-key"), key.trim().to_owned())
        } else {
            (AUTHORIZATION, format!("Bearer {}", key.trim()))
        };
        let mut v = HeaderValue::from_str(&value).map_err(|_| Error::InvalidHeader {
            name: name.as_str().to_owned(),
            reason: "the API key contains characters not allowed in a header".into(),
        })?;
        v.set_sensitive(true);
        h.insert(name, v);
    }
    for (name, value) in &cfg.headers {
        let n =
            HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| Error::InvalidHeader {
                name: name.clone(),
                reason: "not a valid header name".into(),
            })?;
        let mut v = HeaderValue::from_str(value.trim()).map_err(|_| Error::InvalidHeader {
            name: name.clone(),
            reason: "the value contains characters not allowed in a header".into(),
        })?;
        // Custom headers often carry keys: never logged, never indexed by HPACK.
        v.set_sensitive(true);
        // A custom header replaces ours (e.g. a different Authorization scheme).
        h.insert(n, v);
    }
    Ok(h)
}

impl Worker {
    /// Validates the configuration and builds the shared client. Does not connect.
    pub async fn new(config: WorkerConfig) -> Result<Worker, Error> {
        let urls = Urls::new(&config)?;
        let headers = header_map(&config)?;
        let session_header = header_name("--session-header", config.session_header.as_ref())?;
        let replica_header = header_name("--replica-header", config.replica_header.as_ref())?;
        let body = BodyBuilder::new(&config)?;
        let https = urls.generate.scheme_str() == Some("https");
        let client = client::build(&config, https)?;
        // Cleartext HTTP/1.1: the requests drive their own connections (see `h1`).
        let h1 = if https || config.http2 {
            None
        } else {
            h1::H1Pool::new(
                &urls.generate,
                config.timeouts.connect,
                client::H1_MAX_BUF,
                config.source_addresses.clone(),
            )
        };
        let model = OnceLock::new();
        if let Some(m) = config
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        {
            let _ = model.set(m.to_owned());
        }
        Ok(Worker {
            inner: Arc::new(Inner {
                client,
                urls,
                backend: config.backend,
                headers,
                body,
                timeouts: config.timeouts,
                model,
                mix: config.models.clone(),
                counter: None,
                // Embeddings and rerank replies are never streamed.
                stream: config.stream && !config.backend.pooling(),
                think_tags: config.think_tags,
                resent: Arc::new(AtomicU64::new(0)),
                ignored: Arc::new(AtomicU64::new(0)),
                h1,
                connect_failures: AtomicU64::new(0),
                session_header,
                replica_header,
                replica_names: Arc::default(),
                silent: Arc::default(),
                silence_notice: config.silence_notice,
            }),
        })
    }

    /// How many requests were resent so far because the server closed their connection before
    /// answering (a kept-alive connection it had already decided to close). Shared by clones.
    pub fn resent_requests(&self) -> u64 {
        self.inner.resent.load(Ordering::Relaxed)
    }

    /// How many `/v1/responses` events of types bench does not know were ignored so far
    /// (docs/backends.md, "Responses"). Shared by clones.
    pub fn ignored_events(&self) -> u64 {
        self.inner.ignored.load(Ordering::Relaxed)
    }

    /// Sets the tokenizer fallback used to count output tokens when the server sends no usage.
    pub fn with_output_counter(self, f: OutputCounter) -> Self {
        let mut inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => Inner {
                client: shared.client.clone(),
                urls: shared.urls.clone(),
                backend: shared.backend,
                headers: shared.headers.clone(),
                body: shared.body.clone(),
                timeouts: shared.timeouts,
                model: shared.model.clone(),
                mix: shared.mix.clone(),
                counter: shared.counter.clone(),
                stream: shared.stream,
                think_tags: shared.think_tags,
                resent: shared.resent.clone(),
                ignored: shared.ignored.clone(),
                connect_failures: AtomicU64::new(0),
                session_header: shared.session_header.clone(),
                replica_header: shared.replica_header.clone(),
                replica_names: shared.replica_names.clone(),
                h1: shared.h1.clone(),
                silent: shared.silent.clone(),
                silence_notice: shared.silence_notice,
            },
        };
        inner.counter = Some(f);
        Worker {
            inner: Arc::new(inner),
        }
    }

    /// The model sent in request bodies: the configured one, or the one
    /// [`Worker::discover_model`] found.
    pub fn model(&self) -> Option<&str> {
        self.inner.model.get().map(String::as_str)
    }

    /// The model request `id` names, and its index in the mix (`None` without a mix: the
    /// one model, as before mixes existed).
    fn model_for(&self, id: u64) -> (Option<&str>, Option<u32>) {
        match &self.inner.mix {
            None => (self.model(), None),
            Some(mix) => {
                let i = mix.choose(id);
                (Some(mix.name(i)), Some(i as u32))
            }
        }
    }

    /// The backend spoken.
    pub fn backend(&self) -> BackendKind {
        self.inner.backend
    }

    /// The URL requests go to (credentials and query removed), for logs and reports.
    pub fn request_url(&self) -> String {
        crate::redact_url(&self.inner.urls.generate.to_string())
    }

    async fn get(&self, uri: &Uri) -> Result<(StatusCode, Bytes), Error> {
        self.get_dated(uri)
            .await
            .map(|(status, _, body)| (status, body))
    }

    /// The target's clock as its `Date` header states it (whole seconds), with when the
    /// probe left and its answer arrived by this machine's wall clock: one `GET` of the model
    /// list. `None` when the server does not answer or sends no valid `Date`.
    pub async fn server_date(&self) -> Option<crate::ServerDate> {
        let sent = SystemTime::now();
        let (_, date, _) = self.get_dated(&self.inner.urls.models).await.ok()?;
        let received = SystemTime::now();
        let date = httpdate::parse_http_date(date?.to_str().ok()?).ok()?;
        Some(crate::ServerDate {
            sent,
            received,
            date,
        })
    }

    /// [`Self::get`] with the answer's `Date` header.
    async fn get_dated(
        &self,
        uri: &Uri,
    ) -> Result<(StatusCode, Option<HeaderValue>, Bytes), Error> {
        let inner = &self.inner;
        let target = inner.urls.display.clone();
        let mut req = Request::builder()
            .method(Method::GET)
            .uri(uri.clone())
            .body(Full::new(Bytes::new()))
            .map_err(|e| Error::InvalidTarget {
                target: target.clone(),
                reason: e.to_string(),
            })?;
        for (k, v) in &inner.headers {
            if k != CONTENT_TYPE && k != ACCEPT {
                req.headers_mut().insert(k.clone(), v.clone());
            }
        }
        let limit = inner.timeouts.first_byte.min(Duration::from_secs(60));
        let unreachable = |reason: String| Error::Unreachable {
            target: target.clone(),
            reason,
        };
        let resp = match tokio::time::timeout(limit, inner.client.request(req)).await {
            Err(_) => return Err(unreachable(format!("no response within {limit:?}"))),
            Ok(Err(e)) => {
                return Err(unreachable(if client::is_connect_timeout(&e) {
                    format!("connect timed out after {:?}", inner.timeouts.connect)
                } else {
                    client::chain(&e)
                }))
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        let date = resp.headers().get(http::header::DATE).cloned();
        let mut body = resp.into_body();
        let mut buf = BytesMut::new();
        let read = async {
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| client::chain(&e))?;
                if let Ok(d) = frame.into_data() {
                    let room = PROBE_BODY_READ.saturating_sub(buf.len());
                    buf.extend_from_slice(d.get(..room.min(d.len())).unwrap_or(&[]));
                    if buf.len() >= PROBE_BODY_READ {
                        break;
                    }
                }
            }
            Ok::<(), String>(())
        };
        match tokio::time::timeout(limit, read).await {
            Err(_) => {
                return Err(unreachable(format!(
                    "reply body not complete within {limit:?}"
                )))
            }
            Ok(Err(e)) => return Err(unreachable(e)),
            Ok(Ok(())) => {}
        }
        Ok((status, date, buf.freeze()))
    }

    /// Checks that the target is up and speaks an LLM API: `GET /v1/models` (a JSON model
    /// list), else `GET /health` (2xx). One clear error otherwise.
    pub async fn health_check(&self) -> Result<(), Error> {
        let urls = &self.inner.urls;
        let target = urls.display.clone();
        let (status, body) = self.get(&urls.models).await?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Error::Unauthorized {
                target,
                status: status.as_u16(),
            });
        }
        if status.is_success() {
            if serde_json::from_slice::<ModelList>(&body).is_ok() {
                return Ok(());
            }
            return Err(Error::NotAnLlmServer {
                target,
                reason: format!(
                    "GET {} answered 200 but not with a JSON model list: {}",
                    urls.models.path(),
                    excerpt(&body)
                ),
            });
        }
        let (hstatus, hbody) = self.get(&urls.health).await?;
        if hstatus.is_success() {
            return Ok(());
        }
        if hstatus == StatusCode::UNAUTHORIZED || hstatus == StatusCode::FORBIDDEN {
            return Err(Error::Unauthorized {
                target,
                status: hstatus.as_u16(),
            });
        }
        Err(Error::NotAnLlmServer {
            target,
            reason: format!(
                "GET {} answered {} and GET {} answered {} ({})",
                urls.models.path(),
                status.as_u16(),
                urls.health.path(),
                hstatus.as_u16(),
                excerpt(&hbody)
            ),
        })
    }

    /// The `owned_by` of the first entry of the server's model list (`vllm`, `sglang`,
    /// `llamacpp`, `bench-mock`, `openai`, ...), which says what kind of server answers; `None`
    /// when there is no model list or no such field.
    pub async fn model_owner(&self) -> Option<String> {
        let (status, body) = self.get(&self.inner.urls.models).await.ok()?;
        if !status.is_success() {
            return None;
        }
        let list = serde_json::from_slice::<ModelList>(&body).ok()?;
        list.data.into_iter().find_map(|m| m.owned_by)
    }

    /// What the server says its batch is ([`bench_core::ServerBatch`]): vLLM's `max_num_seqs`
    /// in a `/metrics` info series, else llama.cpp's `/props` `total_slots`, else SGLang's
    /// `/get_server_info` `max_running_requests`; `None` when none of them answers with it.
    /// The lookup is a hint: each endpoint gets `BATCH_LOOKUP_TIMEOUT` (2 s), so a server that
    /// holds an unknown path open (or answers it slowly) delays the run by that at most.
    pub async fn server_batch(&self) -> Option<bench_core::ServerBatch> {
        use crate::batch::{self, Parse};
        let parse: [Parse; 3] = [
            |b| batch::from_vllm_metrics(&String::from_utf8_lossy(b)),
            batch::from_llamacpp_props,
            batch::from_sglang_info,
        ];
        for (url, parse) in self.inner.urls.batch.iter().zip(parse) {
            let got = tokio::time::timeout(BATCH_LOOKUP_TIMEOUT, self.get(url)).await;
            if let Ok(Ok((status, body))) = got {
                if let Some(b) = status.is_success().then(|| parse(&body)).flatten() {
                    return Some(b);
                }
            }
        }
        None
    }

    /// Asks the server for its model (first of `/v1/models`, else TGI's `/info` `model_id`),
    /// remembers it for request bodies, and returns it. A configured model is returned as is.
    pub async fn discover_model(&self) -> Result<String, Error> {
        if let Some(m) = self.model() {
            return Ok(m.to_owned());
        }
        let urls = &self.inner.urls;
        let target = urls.display.clone();
        let (status, body) = self.get(&urls.models).await?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Error::Unauthorized {
                target,
                status: status.as_u16(),
            });
        }
        let mut found = None;
        if status.is_success() {
            if let Ok(list) = serde_json::from_slice::<ModelList>(&body) {
                found = list
                    .data
                    .into_iter()
                    .filter_map(|m| m.id)
                    .find(|id| !id.is_empty());
            }
        }
        if found.is_none() && self.inner.backend == BackendKind::Tgi {
            if let Ok((s, b)) = self.get(&urls.info).await {
                if s.is_success() {
                    found = serde_json::from_slice::<TgiInfo>(&b)
                        .ok()
                        .and_then(|i| i.model_id)
                        .filter(|id| !id.is_empty());
                }
            }
        }
        let Some(model) = found else {
            return Err(Error::NoModel {
                target,
                path: urls.models.path().to_owned(),
            });
        };
        let _ = self.inner.model.set(model.clone());
        Ok(self.model().unwrap_or(&model).to_owned())
    }
}

#[derive(serde::Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(serde::Deserialize)]
struct ModelEntry {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    owned_by: Option<String>,
}

#[derive(serde::Deserialize)]
struct TgiInfo {
    #[serde(default)]
    model_id: Option<String>,
}

/// How a request ended, before token counts are settled.
struct Ending {
    outcome: Outcome,
    end: Instant,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        body: Bytes,
        session: Option<u64>,
        output_tokens: Option<u32>,
        keep_reply: bool,
        dispatch: &Dispatch,
        cancel: &CancellationToken,
        rec: &mut RequestRecord,
        st: &mut StreamRecorder,
    ) -> Ending {
        let inner = &*self.inner;
        let clock = dispatch.clock;
        let t0 = Instant::now();
        rec.dispatched = clock.since(t0);
        if cancel.is_cancelled() {
            return Ending {
                outcome: Outcome::Cancelled,
                end: t0,
            };
        }
        let total_at = deadline(t0, inner.timeouts.total);
        let mut mark = Mark::new(&inner.silent, dispatch.id);
        // One wait for the cancellation through the whole request (one registration).
        let wait = cancel.cancelled();
        tokio::pin!(wait);
        let mut cancelled = CancelWait::new(cancel, wait);
        let (resp, t_headers) = match self
            .until_headers(&body, session, &mut cancelled, t0, total_at, &mut mark)
            .await
        {
            Ok(r) => r,
            Err(ending) => return ending,
        };
        rec.headers = Some(clock.since(t_headers));
        let replica = inner
            .replica_header
            .as_ref()
            .and_then(|name| resp.headers().get(name))
            .map(|v| self.replica_id(v.as_bytes()));
        let status = resp.status();
        let retry_after = (!status.is_success())
            .then(|| retry_after_ms(status, resp.headers(), SystemTime::now()))
            .flatten();
        let json_reply = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        let mut body = resp.into_body();
        let timers = Timers {
            total_at,
            idle: inner.timeouts.idle,
            idle_from: t_headers,
            notice: inner.silence_notice,
        };
        if !status.is_success() {
            return error_reply(&mut body, status, retry_after, cancel, &timers).await;
        }
        let inputs = st.state.inputs;
        *st = StreamRecorder::new(
            inner.backend,
            inner.counter.is_some() || keep_reply,
            json_reply || !inner.stream,
        )
        .with_think_tags(inner.think_tags)
        .with_inputs(inputs);
        st.state.replica = replica;
        let expected = output_tokens
            .map_or(64, |n| n as usize + 1)
            .min(MAX_PREALLOC_CHUNKS);
        st.state.chunks.reserve(expected);
        // The kept text (for the tokenizer fallback) grows once, not by doubling on each of
        // the first few hundred bytes.
        if let Some(text) = st.state.text.as_mut() {
            text.reserve(expected * TEXT_BYTES_PER_TOKEN);
        }
        let end = match read_stream(&mut body, st, clock, &mut cancelled, &timers, &mut mark).await
        {
            Ok(done_at) => done_at,
            Err(ending) => return ending,
        };
        // Read the (normally already arrived) end of the body so the connection goes back to
        // the pool; anything after the final event is ignored. A cancellation stops the wait.
        let drain = async { while let Some(Ok(_)) = body.frame().await {} };
        tokio::select! {
            biased;
            _ = &mut cancelled => {}
            _ = tokio::time::timeout(DRAIN_GRACE, drain) => {}
        }
        Ending {
            outcome: Outcome::Completed,
            end,
        }
    }

    /// Sends the request and waits for the response's headers, within the first-byte (or
    /// total) timeout; returns them with their arrival time.
    ///
    /// A server may close a kept-alive connection just as a request is written on it
    /// (llama.cpp's server does so after some streamed responses, although it advertised
    /// keep-alive): such a request was never answered, so it is resent, at most
    /// [`MAX_RESENDS`] times, and counted. Its latencies still run from the first send. A
    /// failure to connect waits [`connect_backoff`] before it is reported, so that a
    /// closed-loop stream against a dead server does not spin.
    async fn until_headers(
        &self,
        body: &Bytes,
        session: Option<u64>,
        cancelled: &mut CancelWait<'_, '_>,
        t0: Instant,
        total_at: Instant,
        mark: &mut Mark<'_>,
    ) -> Result<(http::Response<RespBody>, Instant), Ending> {
        let inner = &*self.inner;
        let request = || {
            let mut req = Request::new(Full::new(body.clone()));
            *req.method_mut() = Method::POST;
            *req.uri_mut() = inner.urls.generate.clone();
            *req.headers_mut() = inner.headers.clone();
            if let (Some(name), Some(n)) = (&inner.session_header, session) {
                req.headers_mut().insert(name.clone(), HeaderValue::from(n));
            }
            req
        };
        let first_byte_at = deadline(t0, inner.timeouts.first_byte);
        let (headers_by, headers_phase) = if first_byte_at <= total_at {
            (first_byte_at, TimeoutPhase::FirstByte)
        } else {
            (total_at, TimeoutPhase::Total)
        };
        // The timeout's timer rings first at the silence notice, which puts the request on
        // the board, then at the timeout itself.
        let timer = tokio::time::sleep_until(deadline(t0, inner.silence_notice).min(headers_by));
        tokio::pin!(timer);
        let mut resends = 0;
        let resp = loop {
            let attempt = async {
                match &inner.h1 {
                    Some(pool) => pool
                        .request(request())
                        .await
                        .map(|r| r.map(RespBody::Driven)),
                    None => inner
                        .client
                        .request(request())
                        .await
                        .map(|r| r.map(RespBody::Pooled))
                        .map_err(|e| Box::new(e) as client::BoxError),
                }
            };
            tokio::pin!(attempt);
            let r = loop {
                tokio::select! {
                    biased;
                    _ = &mut *cancelled => return Err(Ending { outcome: Outcome::Cancelled, end: Instant::now() }),
                    r = &mut attempt => break r,
                    _ = &mut timer => {
                        if timer.deadline() >= headers_by {
                            return Err(Ending { outcome: Outcome::Timeout { phase: headers_phase }, end: Instant::now() });
                        }
                        mark.set(t0, Waiting::Response);
                        timer.as_mut().reset(headers_by);
                    }
                }
            };
            match r {
                Err(e) if resends < MAX_RESENDS && client::is_closed_unanswered(&*e) => {
                    resends += 1;
                    inner.resent.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(error = %client::chain(&*e), "connection closed unanswered; resending");
                }
                r => break r,
            }
        };
        let t_headers = Instant::now();
        mark.clear();
        let e = match resp {
            Ok(r) => {
                // One relaxed load per answered request; the store only after failures.
                if inner.connect_failures.load(Ordering::Relaxed) != 0 {
                    inner.connect_failures.store(0, Ordering::Relaxed);
                }
                return Ok((r, t_headers));
            }
            Err(e) => e,
        };
        let outcome = if client::is_connect_timeout(&*e) {
            Outcome::Timeout {
                phase: TimeoutPhase::Connect,
            }
        } else {
            Outcome::Connect {
                message: client::chain(&*e),
            }
        };
        let n = inner.connect_failures.fetch_add(1, Ordering::Relaxed) + 1;
        tokio::select! {
            biased;
            _ = &mut *cancelled => {}
            _ = tokio::time::sleep(connect_backoff(n)) => {}
        }
        Err(Ending {
            outcome,
            end: t_headers,
        })
    }
}

/// The body's timeouts: the whole request's, and the longest silence between two frames.
struct Timers {
    total_at: Instant,
    idle: Duration,
    /// When the silence began (the headers' arrival).
    idle_from: Instant,
    /// How long a silence puts the request on the board of silent requests.
    notice: Duration,
}

/// The `Retry-After` of a 429 or 503 reply in milliseconds: delta-seconds, or an HTTP date
/// (counted from `now`, 0 when it has passed). Anything else, or another status, is `None`.
fn retry_after_ms(status: StatusCode, headers: &HeaderMap, now: SystemTime) -> Option<u64> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let v = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(secs.saturating_mul(1000));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).map_or(0, |d| d.as_millis() as u64))
}

/// An error status: its body is read (at most [`ERROR_BODY_READ`] bytes, within the
/// timeouts) for the excerpt the report shows; the status is what matters.
async fn error_reply(
    body: &mut RespBody,
    status: StatusCode,
    retry_after_ms: Option<u64>,
    cancel: &CancellationToken,
    timers: &Timers,
) -> Ending {
    let total_sleep = tokio::time::sleep_until(timers.total_at);
    tokio::pin!(total_sleep);
    let idle_sleep = tokio::time::sleep_until(deadline(timers.idle_from, timers.idle));
    tokio::pin!(idle_sleep);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let mut buf = BytesMut::new();
    loop {
        // A slow error body only shortens its excerpt.
        tokio::select! {
            biased;
            _ = &mut cancelled => break,
            f = body.frame() => match f {
                Some(Ok(frame)) => {
                    if let Ok(d) = frame.into_data() {
                        let room = ERROR_BODY_READ.saturating_sub(buf.len());
                        buf.extend_from_slice(d.get(..room.min(d.len())).unwrap_or(&[]));
                        if buf.len() >= ERROR_BODY_READ { break; }
                    }
                }
                _ => break,
            },
            _ = &mut total_sleep => break,
            _ = &mut idle_sleep => break,
        }
    }
    Ending {
        outcome: Outcome::Http {
            status: status.as_u16(),
            body: excerpt(&buf).trim().to_owned(),
            retry_after_ms,
        },
        end: Instant::now(),
    }
}

/// Reads a successful response's stream into `st` until its final event; the arrival of
/// that event, or how the request ended otherwise.
///
/// The frames already at hand when the task wakes are read in one go ([`frames`]): each is
/// timed and parsed as it comes, as before, but the cancellation, the timers and the silence
/// board are looked at once per wake-up, not once per frame (a 128-token answer is about 130
/// frames, often all in one read: docs/performance.md, "Client CPU per request").
async fn read_stream(
    body: &mut RespBody,
    st: &mut StreamRecorder,
    clock: Clock,
    cancelled: &mut CancelWait<'_, '_>,
    timers: &Timers,
    mark: &mut Mark<'_>,
) -> Result<Instant, Ending> {
    let idle = timers.idle;
    let total_at = timers.total_at;
    // The silence rings first at the notice (the request goes on the board), then at the idle
    // timeout; every piece of the body sets it again from its arrival. One timer serves the
    // silence and the whole request's timeout: it rings at the earlier, the total's on a tie.
    let first_ring = idle.min(timers.notice);
    let mut last = timers.idle_from;
    let mut idle_due = deadline(last, first_ring);
    let timer = tokio::time::sleep_until(idle_due.min(total_at));
    tokio::pin!(timer);
    let ending = |outcome, end| Err(Ending { outcome, end });
    loop {
        tokio::select! {
            biased;
            _ = &mut *cancelled => return ending(Outcome::Cancelled, Instant::now()),
            f = frames(body, st, clock) => match f {
                Frames::More(t) => {
                    last = t;
                    idle_due = deadline(t, first_ring);
                    timer.as_mut().reset(idle_due.min(total_at));
                    mark.clear();
                }
                Frames::Done(t) => {
                    mark.clear();
                    return Ok(t);
                }
                Frames::Ended(outcome, t) => return ending(outcome, t),
            },
            _ = &mut timer => {
                if total_at <= idle_due {
                    return ending(Outcome::Timeout { phase: TimeoutPhase::Total }, Instant::now());
                }
                let idle_at = deadline(last, idle);
                if idle_due >= idle_at {
                    return ending(Outcome::Timeout { phase: TimeoutPhase::Idle }, Instant::now());
                }
                mark.set(last, Waiting::Stream);
                idle_due = idle_at;
                timer.as_mut().reset(idle_due.min(total_at));
            }
        }
    }
}

/// What [`frames`] read.
enum Frames {
    /// Data frames arrived, the last at this instant; the stream goes on.
    More(Instant),
    /// The final event arrived at this instant.
    Done(Instant),
    /// The body ended, failed or broke the protocol: how the request ended, and when.
    Ended(Outcome, Instant),
}

/// Reads every body frame that is ready into `st`, each timed on its arrival (before anything
/// is parsed); pending until at least one data frame came or the body ended.
fn frames<'a>(
    body: &'a mut RespBody,
    st: &'a mut StreamRecorder,
    clock: Clock,
) -> impl std::future::Future<Output = Frames> + 'a {
    std::future::poll_fn(move |cx| {
        let mut got = None;
        loop {
            let f = match std::pin::Pin::new(&mut *body).poll_frame(cx) {
                std::task::Poll::Ready(f) => f,
                std::task::Poll::Pending => {
                    return got.map_or(std::task::Poll::Pending, |t| {
                        std::task::Poll::Ready(Frames::More(t))
                    })
                }
            };
            // The arrival time, taken before anything is parsed.
            let t = Instant::now();
            let ended = match f {
                None => Frames::Ended(st.on_end(clock.since(t)), t),
                Some(Err(e)) => {
                    let message = format!("connection lost mid-stream: {}", client::chain(&e));
                    Frames::Ended(Outcome::Connect { message }, t)
                }
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    got = Some(t);
                    match st.on_data(data, clock.since(t)) {
                        Progress::More => continue,
                        Progress::Done => Frames::Done(t),
                        Progress::Failed(outcome) => Frames::Ended(outcome, t),
                    }
                }
            };
            return std::task::Poll::Ready(ended);
        }
    })
}

impl Backend for Worker {
    async fn send(
        &self,
        spec: RequestSpec,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> RequestRecord {
        let (model, chosen) = self.model_for(dispatch.id);
        let body = self.inner.body.build(model, &spec);
        let sent = Sent {
            body,
            prompt_tokens: spec.prompt_tokens,
            output_tokens: spec.output_tokens,
            keep_reply: false,
            inputs: spec.inputs(),
            // Only chat sends them (the CLI refuses images with other backends).
            images: (self.inner.backend == BackendKind::OpenAiChat)
                .then(|| bench_core::ImageCounts::of(&spec.images))
                .flatten(),
            session: None,
        };
        let mut rec = self.exchange(sent, dispatch, cancel).await.0;
        rec.model = chosen;
        rec
    }

    async fn send_turn(
        &self,
        turn: TurnRequest,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> (RequestRecord, Option<bench_core::Reply>) {
        let (model, chosen) = self.model_for(dispatch.id);
        let body = self.inner.body.build_turn(model, &turn);
        let sent = Sent {
            body,
            prompt_tokens: turn.prompt_tokens(),
            output_tokens: turn.current().and_then(|t| t.output_tokens),
            keep_reply: true,
            inputs: 1,
            images: None,
            session: Some(turn.session),
        };
        let (mut rec, reply) = self.exchange(sent, dispatch, cancel).await;
        rec.model = chosen;
        (rec, reply)
    }

    fn silent(&self) -> Vec<Silent> {
        self.inner.silent.list()
    }
}

/// The reasoning tokens of a response (docs/metrics.md, "Reasoning"): the server's
/// `usage.completion_tokens_details.reasoning_tokens` when it sent one (unless it says 0 while
/// reasoning text arrived), else the reasoning text counted by the tokenizer, else one token
/// per event that carried reasoning text. `None` when the response carried no reasoning.
fn reasoning_tokens(st: &StreamState, counter: Option<&OutputCounter>) -> Option<ReasoningTokens> {
    let seen = st.reasoning_events > 0;
    if let Some(n) = st.usage_reasoning.filter(|&n| n > 0 || !seen) {
        return (n > 0).then_some(ReasoningTokens {
            tokens: n,
            source: TokenSource::Usage,
        });
    }
    if !seen {
        return None;
    }
    Some(match (counter, &st.reasoning_text) {
        (Some(count), Some(text)) => ReasoningTokens {
            tokens: u32::try_from(count(text)).unwrap_or(u32::MAX),
            source: TokenSource::Tokenizer,
        },
        _ => ReasoningTokens {
            tokens: st.reasoning_events,
            source: TokenSource::Chunks,
        },
    })
}

/// What one exchange sends.
struct Sent {
    body: Bytes,
    /// The loader's count, reported unless the server's usage says otherwise.
    prompt_tokens: u32,
    output_tokens: Option<u32>,
    /// Keep the streamed text and hand it back (sessions only: it costs a copy per chunk).
    keep_reply: bool,
    /// Inputs of the request (more than 1 for batched embeddings and rerank requests).
    inputs: usize,
    /// The images the request sent.
    images: Option<bench_core::ImageCounts>,
    /// A session's number, sent in the session header (`--session-header`).
    session: Option<u64>,
}

impl Worker {
    /// The number of replica name `name` (from 0, in order of first sight).
    fn replica_id(&self, name: &[u8]) -> u32 {
        let mut names = self
            .inner
            .replica_names
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let i = match names.iter().position(|n| **n == *name) {
            Some(i) => i,
            None => {
                names.push(name.into());
                names.len() - 1
            }
        };
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    /// Sends one request body and records what happened; with `keep_reply`, returns the text
    /// the server streamed too.
    async fn exchange(
        &self,
        sent: Sent,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> (RequestRecord, Option<bench_core::Reply>) {
        let mut rec_stream =
            StreamRecorder::new(self.inner.backend, false, false).with_inputs(sent.inputs);
        let mut rec = RequestRecord {
            target: None,
            model: None,
            cached_tokens: None,
            session: None,
            reasoning: None,
            images: sent.images,
            id: dispatch.id,
            scheduled: dispatch.scheduled,
            slot: dispatch.slot,
            dispatched: 0,
            headers: None,
            chunks: Vec::new(),
            end: 0,
            prompt_tokens: sent.prompt_tokens,
            prompt_tokens_source: TokenSource::Tokenizer,
            output_tokens: 0,
            output_tokens_source: TokenSource::Chunks,
            requested_output_tokens: sent.output_tokens,
            outcome: Outcome::Completed,
        };
        let ending = self
            .run(
                sent.body,
                sent.session,
                sent.output_tokens,
                sent.keep_reply,
                &dispatch,
                &cancel,
                &mut rec,
                &mut rec_stream,
            )
            .await;
        let st = rec_stream.state;
        if st.ignored_events > 0 {
            let n = u64::from(st.ignored_events);
            self.inner.ignored.fetch_add(n, Ordering::Relaxed);
        }
        rec.end = dispatch.clock.since(ending.end).max(rec.dispatched);
        rec.outcome = ending.outcome;
        if let Some(p) = st.usage_prompt {
            rec.prompt_tokens = p;
            rec.prompt_tokens_source = TokenSource::Usage;
        }
        let chunk_tokens: u32 = st.chunks.iter().map(|c| c.tokens).sum();
        match (st.usage_completion, &self.inner.counter, &st.text) {
            (Some(n), _, _) => {
                rec.output_tokens = n;
                rec.output_tokens_source = TokenSource::Usage;
            }
            (None, Some(count), Some(text)) => {
                let reasoning = st.reasoning_text.as_deref().map_or(0, |r| count(r));
                rec.output_tokens = u32::try_from(count(text) + reasoning).unwrap_or(u32::MAX);
                rec.output_tokens_source = TokenSource::Tokenizer;
            }
            _ => {
                rec.output_tokens = chunk_tokens;
                rec.output_tokens_source = TokenSource::Chunks;
            }
        }
        rec.reasoning = reasoning_tokens(&st, self.inner.counter.as_ref());
        rec.cached_tokens = st.usage_cached;
        if self.inner.backend.pooling() {
            // Nothing is generated: no output token, and the server says so by its API.
            rec.output_tokens = 0;
            rec.output_tokens_source = TokenSource::Usage;
        }
        // Not streamed: the whole reply arrived at once, so there is no first token to time.
        if self.inner.stream {
            rec.chunks = st.chunks;
        }
        if !matches!(rec.outcome, Outcome::Completed) {
            tracing::debug!(id = rec.id, outcome = %rec.outcome.kind_name(), "request did not complete");
        }
        let reply = if sent.keep_reply {
            st.text.map(|text| bench_core::Reply {
                text,
                tool_call: st.tool_call,
                replica: st.replica,
            })
        } else {
            None
        };
        (rec, reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::RETRY_AFTER,
            HeaderValue::from_str(v).expect("a header value"),
        );
        h
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_on_429_and_503_only() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let limited = StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(retry_after_ms(limited, &headers("1"), now), Some(1000));
        assert_eq!(
            retry_after_ms(StatusCode::SERVICE_UNAVAILABLE, &headers(" 120 "), now),
            Some(120_000)
        );
        // 2015-10-21 07:28:00 GMT is `now`; ten seconds later is 10 s away, earlier is 0.
        assert_eq!(
            retry_after_ms(limited, &headers("Wed, 21 Oct 2015 07:28:10 GMT"), now),
            Some(10_000)
        );
        assert_eq!(
            retry_after_ms(limited, &headers("Wed, 21 Oct 2015 07:27:00 GMT"), now),
            Some(0)
        );
        assert_eq!(retry_after_ms(limited, &headers("soon"), now), None);
        assert_eq!(retry_after_ms(limited, &headers("-3"), now), None);
        assert_eq!(retry_after_ms(limited, &HeaderMap::new(), now), None);
        assert_eq!(
            retry_after_ms(StatusCode::INTERNAL_SERVER_ERROR, &headers("1"), now),
            None
        );
    }
}
