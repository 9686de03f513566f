//! The scraper: its own task and its own HTTP client (one connection, kept alive), so that
//! nothing it does touches the request path. It scrapes on an interval and on demand (at each
//! benchmark's end), timestamps each scrape on the run clock, and keeps folded snapshots.
//!
//! Any failure (connection refused, a status other than 200, a body larger than the limit,
//! text that is not Prometheus, an empty exposition, no answer within the timeout) stops it for
//! the rest of the run and leaves one message for the CLI to warn with; summaries are then
//! `None` and the report has no server metrics.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bench_core::Clock;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Body as _;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{mpsc, oneshot};

use crate::summary::{summarize, ServerMetrics, Span, Timed};
use crate::{parse, snapshot, Error};

/// How to scrape.
#[derive(Debug, Clone)]
pub struct ScrapeOptions {
    /// `http://` or `https://` URL of the exposition.
    pub url: String,
    /// Time between periodic scrapes.
    pub interval: Duration,
    /// Longest a scrape may take.
    pub timeout: Duration,
    /// Largest exposition accepted, bytes.
    pub max_bytes: usize,
}

impl ScrapeOptions {
    /// Defaults: 1 s interval, 5 s timeout, 16 MiB.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
            max_bytes: 16 << 20,
        }
    }
}

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

#[derive(Debug, Default)]
struct Shared {
    scrapes: Vec<Timed>,
    failure: Option<String>,
}

/// A running scraper.
#[derive(Debug)]
pub struct Scraper {
    shared: Arc<Mutex<Shared>>,
    trigger: mpsc::Sender<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    shown_url: String,
    interval: Duration,
    timeout: Duration,
}

impl Scraper {
    /// Starts scraping now. Fails only on an unusable URL.
    pub fn spawn(opts: ScrapeOptions, clock: Clock) -> Result<Self, Error> {
        let uri: hyper::Uri = opts
            .url
            .parse()
            .map_err(|_| Error::Url(redact(&opts.url)))?;
        match uri.scheme_str() {
            Some("http") | Some("https") if uri.host().is_some() => {}
            _ => return Err(Error::Url(redact(&opts.url))),
        }
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (trigger, rx) = mpsc::channel(4);
        let client = client()?;
        let task = tokio::spawn(run(client, uri, opts.clone(), clock, shared.clone(), rx));
        Ok(Self {
            shared,
            trigger,
            task,
            shown_url: redact(&opts.url),
            interval: opts.interval,
            timeout: opts.timeout,
        })
    }

    /// Scrapes now and waits for it (at most the timeout); marks the scrape as a boundary.
    pub async fn scrape_now(&self) {
        let (tx, rx) = oneshot::channel();
        if self.trigger.send(tx).await.is_ok() {
            let _ = tokio::time::timeout(self.timeout + Duration::from_millis(100), rx).await;
        }
    }

    /// Why scraping stopped, if it did.
    pub fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    /// The server's view of one benchmark; `None` once scraping has failed.
    pub fn summarize(&self, span: Span) -> Option<ServerMetrics> {
        let s = self.lock();
        if s.failure.is_some() {
            return None;
        }
        summarize(
            &s.scrapes,
            span,
            &self.shown_url,
            self.interval.as_secs_f64(),
        )
    }

    /// The number of series (label sets) of `name` at the last scrape: a DCGM exporter's GPUs.
    pub fn series(&self, name: &str) -> Option<u32> {
        let s = self.lock();
        match s.scrapes.last()?.snap.get(name)? {
            crate::snapshot::Folded::Gauge { series, .. }
            | crate::snapshot::Folded::Counter { series, .. } => Some(*series),
            crate::snapshot::Folded::Histogram(_) => None,
        }
    }

    /// This node's GPU figures over one benchmark (DCGM names, [`crate::gpu`]); `None` once
    /// scraping has failed.
    pub fn gpu_node(&self, span: Span) -> Option<crate::gpu::GpuNode> {
        let sm = self.summarize(span)?;
        let gpus = self
            .series(crate::gpu::POWER)
            .or_else(|| self.series(crate::gpu::UTIL))
            .unwrap_or(0);
        Some(crate::gpu::node(&sm, gpus))
    }

    /// The scraped URL, without credentials.
    pub fn url(&self) -> &str {
        &self.shown_url
    }

    /// Scrapes taken so far.
    pub fn scrape_count(&self) -> usize {
        self.lock().scrapes.len()
    }

    /// Stops the task.
    pub fn stop(&self) {
        self.task.abort();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `/metrics` on the target's scheme, host and port (`http://h:8000/v1` -> `http://h:8000/metrics`).
pub fn default_url(target: &str) -> Option<String> {
    let uri: hyper::Uri = target.parse().ok()?;
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?;
    Some(format!("{scheme}://{authority}/metrics"))
}

/// The URL without its userinfo (`user:password@`).
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s && !url[s + 3..at].contains('/') => {
            format!("{}{}", &url[..s + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

fn client() -> Result<HttpClient, Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let mut b = Client::builder(TokioExecutor::new());
    b.pool_max_idle_per_host(1);
    Ok(b.build(connector))
}

async fn run(
    client: HttpClient,
    uri: hyper::Uri,
    opts: ScrapeOptions,
    clock: Clock,
    shared: Arc<Mutex<Shared>>,
    mut rx: mpsc::Receiver<oneshot::Sender<()>>,
) {
    let mut tick = tokio::time::interval(opts.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let done = tokio::select! {
            _ = tick.tick() => None,
            t = rx.recv() => match t {
                Some(t) => Some(t),
                None => return,
            },
        };
        let at = clock.now();
        let result =
            match tokio::time::timeout(opts.timeout, fetch(&client, &uri, opts.max_bytes)).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {:?}", opts.timeout)),
            };
        let result = result.and_then(|text| {
            let e = parse::parse(&text).map_err(|e| e.to_string())?;
            if e.samples.is_empty() {
                return Err("the exposition has no samples".to_string());
            }
            Ok(snapshot::fold(&e))
        });
        let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(snap) => s.scrapes.push(Timed {
                at,
                snap,
                boundary: done.is_some(),
            }),
            Err(e) => {
                s.failure = Some(e);
                return;
            }
        }
        drop(s);
        if let Some(d) = done {
            let _ = d.send(());
        }
    }
}

async fn fetch(client: &HttpClient, uri: &hyper::Uri, max: usize) -> Result<String, String> {
    let req = hyper::Request::get(uri.clone())
        .header(http::header::ACCEPT, "text/plain;version=0.0.4")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let resp = client
        .request(req)
        .await
        .map_err(|e| format!("request failed: {}", source_chain(&e)))?;
    if resp.status() != hyper::StatusCode::OK {
        return Err(format!("answered {}", resp.status()));
    }
    let mut body = resp.into_body();
    if body.size_hint().lower() as usize > max {
        return Err(format!("the exposition is larger than {max} bytes"));
    }
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the body: {e}"))?;
        if let Some(d) = frame.data_ref() {
            if buf.len() + d.len() > max {
                return Err(format!("the exposition is larger than {max} bytes"));
            }
            buf.extend_from_slice(d);
        }
    }
    String::from_utf8(buf).map_err(|_| "the exposition is not UTF-8 text".to_string())
}

fn source_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
