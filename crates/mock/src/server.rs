//! The HTTP side: listener, connections (HTTP/1.1 and HTTP/2 prior knowledge on one port,
//! optionally behind TLS), routing and the generation handlers.

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use bench_tokenizer::Tokenizer;

use crate::body::{ConnShared, LogState, MockBody, PendingLog};
use crate::faults::{FaultPlan, Rng};
use crate::log::{EndKind, RequestLog, RequestLogEntry};
use crate::lora::ServedModels;
use crate::metrics::Metrics;
use crate::prefix::{self, Blocks};
use crate::render::{self, CachedUsage, Ctx, EventCycle, Oai, Words};
use crate::replicas::{Lease, Replicas};
use crate::request::{self, Api, Limits};
use crate::spec::{Drafts, SpecModel};
use crate::{tls, Error, MockConfig};

mod pooling;

/// Largest request body accepted.
const MAX_BODY: usize = 64 << 20;

/// Salts the seed of the tool-call draw (its own stream; see `tool_call_share`).
const TOOL_SALT: u64 = 0x7001_ca11_7001_ca11;

/// A running simulator. Dropping it without [`MockServer::shutdown`] leaves its tasks running
/// until the runtime ends.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    url: String,
    model: String,
    cert_pem: Option<String>,
    state: Arc<State>,
    stop: CancellationToken,
    accept: tokio::task::JoinHandle<()>,
    /// One engine task per replica (none in zero-delay mode).
    engines: Vec<tokio::task::JoinHandle<()>>,
}

#[derive(Debug)]
pub(crate) struct State {
    cfg: MockConfig,
    zero_delay: bool,
    model_escaped: String,
    models_body: Bytes,
    words: Words,
    /// Precomputed token events of `/v1/completions` and `/v1/chat/completions`.
    completions_cycle: EventCycle,
    chat_cycle: EventCycle,
    prompts: request::PromptCounter,
    /// The engines (and pooling slots), one per replica, and the router.
    replicas: Replicas,
    metrics: Arc<Metrics>,
    /// Speculative decoding's drafting model, when the engine drafts.
    spec: Option<SpecModel>,
    /// The simulated GPUs behind `/dcgm/metrics`.
    gpus: crate::gpu::GpuExporter,
    log: Option<Arc<RequestLog>>,
    next_id: AtomicU64,
    limits: Limits,
    /// The models served, when several (`models`).
    served: Option<Arc<ServedModels>>,
}

impl MockServer {
    /// Validates `config`, loads the tokenizer, binds `config.host:config.port` and starts
    /// serving. Must be called inside a tokio runtime.
    pub async fn start(config: MockConfig) -> Result<MockServer, Error> {
        config.validate()?;
        let tokenizer = match &config.tokenizer {
            None => Tokenizer::builtin(),
            Some(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || Tokenizer::from_file(&path))
                    .await
                    .map_err(|e| Error::Io(io::Error::other(e)))??
            }
        };
        Self::start_with_tokenizer(config, tokenizer).await
    }

    /// [`MockServer::start`] counting with `tokenizer` (already loaded, e.g. the client's own,
    /// so that an in-process simulator agrees with it), whatever `config.tokenizer` says.
    pub async fn start_with_tokenizer(
        config: MockConfig,
        tokenizer: Tokenizer,
    ) -> Result<MockServer, Error> {
        config.validate()?;
        let words = crate::words::choose(&tokenizer);
        let listener = bind(&config.host, config.port).await?;
        let addr = listener.local_addr().map_err(Error::Io)?;
        let (tls_acceptor, cert_pem) = if config.tls {
            let (acceptor, pem) = tls::self_signed(&config.host)?;
            (Some(acceptor), Some(pem))
        } else {
            (None, None)
        };
        let log = RequestLog::open(
            config.log_requests.as_deref(),
            config.record_requests,
            config.log_token_times,
        )?;
        let served = ServedModels::from_config(&config).map(Arc::new);
        let zero_delay = config.is_zero_delay();
        let mut metrics = Metrics::new(
            config.served_model(),
            config.kv_cache_tokens,
            Replicas::count(&config),
        )
        .with_spec(SpecModel::of(&config).map_or(0, |m| m.k));
        if !zero_delay {
            // The batch of every replica behind the one listener: what runs at once.
            metrics = metrics.with_max_num_seqs(config.max_batch * config.replicas);
        }
        let metrics = Arc::new(metrics);
        let (replicas, engines) = Replicas::start(&config, served.as_ref(), &metrics);
        let model_escaped = render::escape(config.served_model());
        let now = unix_secs();
        let completions_cycle = EventCycle::new(Oai::Completions, &model_escaped, &words, now);
        let chat_cycle = EventCycle::new(Oai::Chat, &model_escaped, &words, now);
        let models_body = models_body(&config, served.as_deref());
        let scheme = if config.tls { "https" } else { "http" };
        let url = format!("{scheme}://{addr}");
        let model = config.served_model().to_string();
        let limits = Limits {
            default_max_tokens: config.default_max_tokens,
            max_model_len: config.max_model_len,
            // Token ids only for the prefix cache's block hashes.
            prompt_ids: config.prefix_cache_blocks > 0 && !zero_delay,
            strict: config.strict,
        };
        let gpus = crate::gpu::GpuExporter::new(&config, Replicas::count(&config));
        let state = Arc::new(State {
            gpus,
            spec: SpecModel::of(&config),
            cfg: config,
            zero_delay,
            model_escaped,
            models_body,
            words,
            completions_cycle,
            chat_cycle,
            prompts: request::PromptCounter::new(tokenizer),
            replicas,
            metrics,
            log,
            next_id: AtomicU64::new(0),
            limits,
            served,
        });
        let stop = CancellationToken::new();
        let accept = tokio::spawn(accept_loop(
            listener,
            state.clone(),
            tls_acceptor,
            stop.clone(),
        ));
        let replicas = state.replicas.len();
        tracing::info!(%url, zero_delay, replicas, "mock server listening");
        Ok(MockServer {
            addr,
            url,
            model,
            cert_pem,
            state,
            stop,
            accept,
            engines,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, `http://127.0.0.1:PORT` (or `https://...` with TLS).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The served model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The PEM of the self-signed certificate when serving TLS, for a client's trust store.
    pub fn tls_certificate_pem(&self) -> Option<String> {
        self.cert_pem.clone()
    }

    /// The ground-truth records so far (needs `record_requests`; empty otherwise), in the order
    /// responses ended.
    pub fn request_log(&self) -> Vec<RequestLogEntry> {
        self.state
            .log
            .as_ref()
            .map(|l| l.snapshot())
            .unwrap_or_default()
    }

    /// The `/metrics` text right now.
    pub fn metrics_text(&self) -> String {
        self.state.metrics.render()
    }

    /// Stops accepting, closes every connection (in-flight responses are cut), stops the
    /// engines and flushes the request log.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.accept.await;
        for e in &self.engines {
            e.abort();
        }
        for e in self.engines {
            let _ = e.await;
        }
        if let Some(log) = &self.state.log {
            // Records of connections just closed are pushed when their bodies drop, which the
            // aborted connection tasks have done by now.
            if let Some(writer) = log.close() {
                let _ = tokio::task::spawn_blocking(move || writer.join()).await;
            }
        }
    }
}

/// Connections waiting to be accepted (the kernel caps it at `net.core.somaxconn`): a client
/// opening tens of thousands of streams at once connects in a burst, and connections beyond
/// the backlog wait a SYN retransmission (a second or more) each.
const BACKLOG: u32 = 65_535;

/// The HTTP/2 connection receive window (see `serve`).
const H2_CONNECTION_WINDOW: u32 = 64 << 20;

async fn bind(host: &str, port: u16) -> Result<TcpListener, Error> {
    let r = match host.parse::<IpAddr>() {
        Ok(ip) => listen(SocketAddr::new(ip, port)),
        Err(_) => TcpListener::bind((host, port)).await,
    };
    r.map_err(|source| Error::Bind {
        addr: format!("{host}:{port}"),
        source,
    })
}

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std's and tokio's own bind do: a restarted simulator can take its port back at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: CancellationToken,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            r = listener.accept() => match r {
                Ok((tcp, _)) => {
                    let _ = tcp.set_nodelay(true);
                    conns.spawn(serve_conn(state.clone(), tcp, tls.clone()));
                }
                Err(e) => {
                    // E.g. out of file descriptors: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
    drop(listener);
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

async fn serve_conn(state: Arc<State>, tcp: TcpStream, tls: Option<tokio_rustls::TlsAcceptor>) {
    let conn = Arc::new(ConnShared::default());
    let io = match tls {
        None => ConnIo::Tcp(tcp, conn.clone()),
        Some(acceptor) => {
            match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                Ok(Ok(s)) => ConnIo::Tls(Box::new(s), conn.clone()),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            }
        }
    };
    let max_streams = state.cfg.http2_max_streams;
    let svc = hyper::service::service_fn(move |req| {
        let state = state.clone();
        let conn = conn.clone();
        async move { Ok::<_, Infallible>(handle(&state, &conn, req).await) }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    // No header read timeout: hyper's default (30 s, armed whenever a connection waits for a
    // request head) registers and cancels a timer per request, which costs a zero-delay
    // response a measurable share of its CPU; a loopback test server does not need it.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    // A connection window of 64 MiB: with hyper's 1 MiB, thousands of request bodies sent at
    // once outrun it, the client's h2 splits them into small DATA frames to fit what is left,
    // and h2's budget for small unread frames (half the window) ends the connection with
    // GOAWAY ENHANCE_YOUR_CALM "too_many_data_frames" (20,000 streams at once did).
    builder
        .http2()
        .timer(TokioTimer::new())
        .initial_connection_window_size(H2_CONNECTION_WINDOW)
        .max_concurrent_streams(max_streams);
    if let Err(e) = builder.serve_connection(TokioIo::new(io), svc).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// A connection's transport. On drop after an injected reset, the socket is closed with
/// `SO_LINGER` 0 so the peer sees a TCP RST rather than an orderly close.
enum ConnIo {
    Tcp(TcpStream, Arc<ConnShared>),
    Tls(
        Box<tokio_rustls::server::TlsStream<TcpStream>>,
        Arc<ConnShared>,
    ),
}

impl Drop for ConnIo {
    fn drop(&mut self) {
        let (tcp, conn) = match self {
            ConnIo::Tcp(t, c) => (&*t, c),
            ConnIo::Tls(s, c) => (s.get_ref().0, c),
        };
        if conn.reset.load(Ordering::Acquire) {
            let _ = tcp.set_zero_linger();
        }
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnIo::Tcp(t, _) => Pin::new(t).poll_read(cx, buf),
            ConnIo::Tls(s, _) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ConnIo::Tcp(t, _) => Pin::new(t).poll_write(cx, buf),
            ConnIo::Tls(s, _) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ConnIo::Tcp(t, _) => Pin::new(t).poll_write_vectored(cx, bufs),
            ConnIo::Tls(s, _) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ConnIo::Tcp(t, _) => t.is_write_vectored(),
            ConnIo::Tls(s, _) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnIo::Tcp(t, _) => Pin::new(t).poll_flush(cx),
            ConnIo::Tls(s, _) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnIo::Tcp(t, _) => Pin::new(t).poll_shutdown(cx),
            ConnIo::Tls(s, _) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

fn response(status: StatusCode, content_type: &'static str, body: MockBody) -> Response<MockBody> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn error_response(api: Option<Api>, status: StatusCode, message: &str) -> Response<MockBody> {
    let body = match api {
        Some(a) if a.is_tgi() => render::tgi_error(status.as_u16(), message),
        Some(Api::Messages) => render::anthropic_error(status.as_u16(), message),
        _ => render::oai_error(status.as_u16(), message),
    };
    response(status, "application/json", MockBody::full(body, 0, None))
}

async fn handle(
    state: &Arc<State>,
    conn: &Arc<ConnShared>,
    req: Request<Incoming>,
) -> Response<MockBody> {
    let api = match req.uri().path() {
        "/v1/completions" => Some(Api::Completions),
        "/v1/chat/completions" => Some(Api::Chat),
        "/v1/responses" => Some(Api::Responses),
        "/v1/messages" => Some(Api::Messages),
        "/generate_stream" => Some(Api::TgiStream),
        "/generate" => Some(Api::Tgi),
        _ => None,
    };
    if let Some(api) = api {
        if req.method() != Method::POST {
            return error_response(
                Some(api),
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed: use POST",
            );
        }
        return generate(state, conn, req, api).await;
    }
    if let Some(api) = pooling::route(req.uri().path()) {
        if req.method() != Method::POST {
            return error_response(
                None,
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed: use POST",
            );
        }
        return pooling::serve(state, req, api).await;
    }
    let path = req.uri().path();
    let get = req.method() == Method::GET;
    match path {
        "/v1/models" if get => response(
            StatusCode::OK,
            "application/json",
            MockBody::full(state.models_body.clone(), 0, None),
        ),
        "/health" if get => response(StatusCode::OK, "text/plain", MockBody::empty()),
        "/metrics" if get => response(
            StatusCode::OK,
            "text/plain; version=0.0.4",
            MockBody::full(Bytes::from(state.metrics.render()), 0, None),
        ),
        "/dcgm/metrics" if get => response(
            StatusCode::OK,
            "text/plain; version=0.0.4",
            MockBody::full(Bytes::from(state.gpus.render(&state.metrics)), 0, None),
        ),
        "/v1/models" | "/health" | "/metrics" | "/dcgm/metrics" => error_response(
            None,
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: use GET",
        ),
        _ => error_response(
            None,
            StatusCode::NOT_FOUND,
            &format!("no route for {} {path}", req.method()),
        ),
    }
}

/// The prefix-cache blocks of a request: its prompt ids followed by the output tokens it will
/// get but the last (whose KV a real engine never computes). Empty without a prefix cache.
fn cache_blocks(ids: &[u32], prompt_tokens: u32, ctx: &Ctx<'_>, block_size: u32) -> Blocks {
    if ids.is_empty() {
        return Blocks::default();
    }
    let mut all = Vec::with_capacity(ids.len() + ctx.tokens as usize);
    all.extend_from_slice(ids);
    all.extend((0..ctx.tokens.saturating_sub(1)).map(|i| ctx.words.id_at(ctx.word_start, i)));
    let bs = block_size.max(1);
    Blocks {
        hashes: prefix::block_hashes(&all, bs),
        in_prompt: (prompt_tokens.min(ids.len() as u32) / bs) as usize,
    }
}

/// The body of `GET /v1/models`: the one model, with vLLM's fields (`owned_by: "bench-mock"`
/// tells bench it may send vLLM's extensions; `"system"` in strict mode, as a server that
/// refuses them).
fn models_body(config: &MockConfig, served: Option<&ServedModels>) -> Bytes {
    if let Some(s) = served {
        let data = s.list(config, unix_secs());
        return Bytes::from(serde_json::json!({"object": "list", "data": data}).to_string());
    }
    Bytes::from(
        serde_json::json!({
            "object": "list",
            "data": [{
                "id": config.model,
                "object": "model",
                "created": unix_secs(),
                "owned_by": if config.strict { "system" } else { "bench-mock" },
                "root": config.model,
                "parent": null,
                "max_model_len": config.max_model_len,
            }]
        })
        .to_string(),
    )
}

async fn generate(
    state: &Arc<State>,
    conn: &Arc<ConnShared>,
    req: Request<Incoming>,
    api: Api,
) -> Response<MockBody> {
    let arrival = Instant::now();
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let session = req
        .headers()
        .get(state.cfg.affinity_header.as_str())
        .cloned();
    let lease = state
        .replicas
        .route_keyed(session.as_ref().map(HeaderValue::as_bytes));
    let served_by = HeaderValue::from(lease.index());
    let mut log = pending_log(state, id, api.path(), arrival, &lease);
    if let Some(l) = &mut log.0 {
        l.entry.stream = api == Api::TgiStream;
        l.entry.session = session.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    }
    let mut r = generate_routed(state, conn, req, api, id, lease, log).await;
    r.headers_mut().insert(SERVED_BY, served_by);
    r
}

/// The response header naming the replica that served a generation request (its index, from
/// 0), as a router's `x-served-by` does.
pub(crate) const SERVED_BY: HeaderName = HeaderName::from_static("x-served-by");

/// [`generate`] once the request is routed.
#[allow(clippy::too_many_arguments)]
async fn generate_routed(
    state: &Arc<State>,
    conn: &Arc<ConnShared>,
    req: Request<Incoming>,
    api: Api,
    id: u64,
    lease: Lease,
    mut log: PendingLog,
) -> Response<MockBody> {
    let http1 = req.version() <= Version::HTTP_11;
    let body = match read_body(req).await {
        Ok(b) => b,
        Err((status, msg)) => return fail(state, api, log.take(), status, &msg),
    };
    let model = match pick_model(state, api, &body) {
        Ok(m) => m,
        Err(msg) => return fail(state, api, log.take(), StatusCode::NOT_FOUND, &msg),
    };
    if let (Some(l), Some(s)) = (&mut log.0, &state.served) {
        l.entry.model = Some(s.name(model).to_string());
    }
    let p = match request::parse(api, &body, &state.prompts, state.limits) {
        Ok(p) => p,
        Err(msg) => return fail(state, api, log.take(), StatusCode::BAD_REQUEST, &msg),
    };
    drop(body);

    let cfg = &state.cfg;
    let mut rng = Rng::new(cfg.seed, id);
    let tokens = if p.ignore_eos || cfg.ignore_eos {
        p.limit
    } else {
        // An EOS somewhere between the minimum asked for and the limit.
        rng.range(p.min_tokens.clamp(1, p.limit), p.limit)
    };
    let word_start = (rng.next_u64() % state.words.len().max(1) as u64) as usize;
    let drafts = state.spec.map_or_else(Drafts::default, |m| {
        Drafts::draw(m, &mut crate::spec::rng(cfg.seed, id), tokens)
    });
    let plan = if cfg.faults.is_none() {
        FaultPlan::default()
    } else {
        FaultPlan::draw(&cfg.faults, &mut rng, tokens).snapped(|k| drafts.snap(tokens, k))
    };
    // A seeded draw of its own, so turning tool calls on changes no other draw.
    let tool = p
        .tools
        .offered
        .as_deref()
        .filter(|_| p.tools.after_user && cfg.tool_call_share > 0.0)
        .filter(|_| Rng::new(cfg.seed ^ TOOL_SALT, id).unit() < cfg.tool_call_share);
    if let Some(l) = &mut log.0 {
        l.entry.tool_tokens = p.tools.tokens;
        l.entry.tool_call = tool.is_some();
        l.entry.stream = p.stream;
        l.entry.prompt_tokens = p.prompt_tokens;
        l.entry.planned_tokens = tokens;
        l.entry.images = p.images;
        l.entry.image_tokens = p.image_tokens;
        if api.reasons() && tool.is_none() {
            l.entry.reasoning_tokens = cfg.reasoning_tokens.min(tokens);
        }
        l.entry.faults = plan.records(p.stream);
        (l.entry.spec_drafts, l.entry.spec_accepted_tokens) = drafts.totals();
    }
    if plan.slow_headers {
        tokio::time::sleep(Duration::from_millis(cfg.faults.slow_headers_ms)).await;
    }
    if let Some(status) = plan.status {
        return fault_response(state, api, log, status);
    }
    state.metrics.count_status(200);
    state.metrics.add_prompt(u64::from(p.prompt_tokens));

    let ctx = Ctx {
        id,
        created: unix_secs(),
        model: state
            .served
            .as_ref()
            .map_or(state.model_escaped.as_str(), |s| s.escaped(model)),
        words: &state.words,
        word_start,
        tokens,
        finish_length: tokens == p.limit,
        prompt_tokens: p.prompt_tokens,
        reasoning: if api.reasons() && tool.is_none() {
            cfg.reasoning_tokens.min(tokens)
        } else {
            0
        },
        // Only a timed engine with a prefix cache knows what it served; a stream is rendered
        // before admission and fills the count in as it writes its usage.
        cached: match (&state.replicas.get(&lease).engine, cfg.prefix_cache_blocks) {
            (Some(_), 1..) if !state.zero_delay && p.stream => CachedUsage::Slot,
            (Some(_), 1..) if !state.zero_delay => CachedUsage::Known(0),
            _ => CachedUsage::Omit,
        },
        drafts: (!drafts.is_empty()).then_some(&drafts),
    };
    let blocks = cache_blocks(&p.ids, p.prompt_tokens, &ctx, cfg.block_size);
    let answer = Answer {
        api,
        tool,
        model,
        p: &p,
        ctx: &ctx,
        blocks,
        log,
        lease,
    };
    if p.stream {
        stream_response(state, conn, answer, &plan, http1)
    } else {
        full_response(state, answer).await
    }
}

/// What a successful answer is made of.
struct Answer<'a> {
    api: Api,
    /// A chat answer calling this tool (JSON-escaped name) instead of answering in text.
    tool: Option<&'a str>,
    /// The served model it runs on (0 with one model).
    model: u16,
    p: &'a request::Parsed,
    ctx: &'a Ctx<'a>,
    blocks: Blocks,
    log: PendingLog,
    /// The replica it was routed to, held until the response ends.
    lease: Lease,
}

/// The request log entry of a request arriving now, routed by `lease` (nothing without
/// `--log-requests`).
fn pending_log(
    state: &State,
    id: u64,
    endpoint: &str,
    arrival: Instant,
    lease: &Lease,
) -> PendingLog {
    PendingLog(state.log.as_ref().map(|sink| {
        Box::new(LogState {
            entry: RequestLogEntry {
                id,
                replica: lease.index() as u32,
                endpoint: endpoint.to_string(),
                stream: false,
                status: 200,
                prompt_tokens: 0,
                planned_tokens: 0,
                reasoning_tokens: 0,
                tool_tokens: 0,
                tool_call: false,
                session: None,
                output_tokens: 0,
                arrival_unix_ns: sink.timebase.unix_ns(arrival),
                submitted_unix_ns: None,
                first_token_unix_ns: None,
                last_token_unix_ns: None,
                cached_tokens: 0,
                token_unix_ns: Vec::new(),
                faults: Vec::new(),
                end: EndKind::ClientGone,
                arrival: Some(arrival),
                first_token: None,
                last_token: None,
                inputs: 0,
                reply_unix_ns: None,
                images: 0,
                image_tokens: 0,
                spec_drafts: 0,
                spec_accepted_tokens: 0,
                model: None,
            },
            sink: sink.clone(),
        })
    }))
}

/// The served model a generation request names (0, the base, with one model or for TGI's
/// API, which names none); the message of vLLM's 404 for a name not served.
fn pick_model(state: &State, api: Api, body: &[u8]) -> Result<u16, String> {
    match &state.served {
        Some(s) if !api.is_tgi() => s.pick(body),
        _ => Ok(0),
    }
}

/// The request body, at most [`MAX_BODY`] bytes; the status and message of the refusal.
async fn read_body(req: Request<Incoming>) -> Result<Bytes, (StatusCode, String)> {
    match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large".into(),
            ))
        }
        Err(e) => Err((StatusCode::BAD_REQUEST, format!("reading the body: {e}"))),
    }
}

/// An error answer in the API's own format, counted and logged with its status.
fn fail(
    state: &State,
    api: Api,
    log: Option<Box<LogState>>,
    status: StatusCode,
    msg: &str,
) -> Response<MockBody> {
    if api.is_tgi() {
        let body = render::tgi_error(status.as_u16(), msg);
        fail_with(state, log, status, body)
    } else if api == Api::Messages {
        let body = render::anthropic_error(status.as_u16(), msg);
        fail_with(state, log, status, body)
    } else {
        fail_plain(state, log, status, msg)
    }
}

/// An error answer in OpenAI's format, counted and logged with its status.
fn fail_plain(
    state: &State,
    log: Option<Box<LogState>>,
    status: StatusCode,
    msg: &str,
) -> Response<MockBody> {
    fail_with(state, log, status, render::oai_error(status.as_u16(), msg))
}

fn fail_with(
    state: &State,
    mut log: Option<Box<LogState>>,
    status: StatusCode,
    body: Bytes,
) -> Response<MockBody> {
    state.metrics.count_status(status.as_u16());
    if let Some(l) = &mut log {
        l.entry.status = status.as_u16();
    }
    response(status, "application/json", MockBody::full(body, 0, log))
}

/// A simulated error status (with `Retry-After: 1` on 429 and 503).
fn fault_response(state: &State, api: Api, mut log: PendingLog, status: u16) -> Response<MockBody> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let msg = format!("simulated fault: {status}");
    let mut r = fail(state, api, log.take(), status, &msg);
    if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// The streamed body of a text answer on `api`.
fn stream_body(
    state: &State,
    api: Api,
    ctx: &Ctx<'_>,
    p: &request::Parsed,
    plan: &FaultPlan,
    timed: bool,
) -> render::Rendered {
    let include_usage = p.include_usage;
    match api {
        Api::Completions => render::oai_stream(
            Oai::Completions,
            ctx,
            include_usage,
            plan,
            timed,
            Some(&state.completions_cycle),
        ),
        Api::Chat => render::oai_stream(
            Oai::Chat,
            ctx,
            include_usage,
            plan,
            timed,
            Some(&state.chat_cycle),
        ),
        Api::TgiStream | Api::Tgi => render::tgi_stream(ctx, p.details, plan, timed),
        Api::Responses => render::responses_stream(ctx, plan, timed),
        Api::Messages => render::messages_stream(ctx, plan, timed),
    }
}

/// A streamed answer, its tokens released by the engine (or at once in zero-delay mode).
fn stream_response(
    state: &State,
    conn: &Arc<ConnShared>,
    mut a: Answer<'_>,
    plan: &FaultPlan,
    http1: bool,
) -> Response<MockBody> {
    let (cfg, p, ctx, tokens) = (&state.cfg, a.p, a.ctx, a.ctx.tokens);
    let timed = !state.zero_delay;
    let rendered = match (a.api, a.tool) {
        (Api::Chat, Some(name)) => render::tool_stream(ctx, name, p.include_usage, plan, timed),
        (api, _) => stream_body(state, api, ctx, p, plan, timed),
    };
    let gate = match &state.replicas.get(&a.lease).engine {
        Some(e) if timed => {
            a.log.submitted();
            let drafts = ctx.drafts.cloned().unwrap_or_default();
            Some(e.submit_full(a.model, p.prompt_tokens, tokens, a.blocks, drafts))
        }
        _ => {
            state.metrics.add_generated(u64::from(tokens));
            None
        }
    };
    let stall_for = (cfg.faults.stall_ms > 0).then(|| Duration::from_millis(cfg.faults.stall_ms));
    let body = MockBody::stream(
        rendered,
        tokens,
        gate,
        stall_for,
        conn.clone(),
        http1,
        a.log.take(),
        (!timed).then(|| state.metrics.clone()),
    )
    .leased(a.lease);
    let mut r = response(StatusCode::OK, "text/event-stream", body);
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// A whole answer, sent when the engine has released its last token.
async fn full_response(state: &State, mut a: Answer<'_>) -> Response<MockBody> {
    let (p, mut ctx, tokens) = (a.p, *a.ctx, a.ctx.tokens);
    match &state.replicas.get(&a.lease).engine {
        Some(e) if !state.zero_delay => {
            a.log.submitted();
            let drafts = ctx.drafts.cloned().unwrap_or_default();
            let gate = e.submit_full(a.model, p.prompt_tokens, tokens, a.blocks, drafts);
            gate.wait_for(tokens).await;
            if let Some(l) = &mut a.log.0 {
                l.entry.cached_tokens = gate.cached_tokens();
            }
            if ctx.cached != CachedUsage::Omit {
                ctx.cached = CachedUsage::Known(gate.cached_tokens());
            }
        }
        _ => state.metrics.add_generated(u64::from(tokens)),
    }
    let data = match (a.api, a.tool) {
        (Api::Chat, Some(name)) => render::tool_full(&ctx, name),
        (api, _) => full_body(api, &ctx, p),
    };
    response(
        StatusCode::OK,
        "application/json",
        MockBody::full(data, tokens, a.log.take()).leased(a.lease),
    )
}

/// The whole body of a text answer on `api`.
fn full_body(api: Api, ctx: &Ctx<'_>, p: &request::Parsed) -> Bytes {
    match api {
        Api::Completions => render::oai_full(Oai::Completions, ctx),
        Api::Chat => render::oai_full(Oai::Chat, ctx),
        Api::TgiStream | Api::Tgi => render::tgi_full(ctx, p.details),
        Api::Responses => render::responses_full(ctx),
        Api::Messages => render::messages_full(ctx),
    }
}
