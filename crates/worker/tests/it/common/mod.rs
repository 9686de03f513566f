//! A tiny scripted loopback server (HTTP/1.1, HTTP/2 prior knowledge, TLS with ALPN) for the
//! worker's tests: each request gets a [`Script`] saying what to answer and when.

#![allow(dead_code, clippy::unwrap_used)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// One step of a scripted body.
#[derive(Debug, Clone)]
pub enum Step {
    /// Wait.
    Sleep(Duration),
    /// Send bytes.
    Send(Bytes),
    /// Break the connection (the client sees a reset / incomplete body).
    Reset,
}

/// What to answer to one request.
#[derive(Debug, Clone)]
pub struct Script {
    pub status: u16,
    pub content_type: &'static str,
    pub header_delay: Duration,
    pub steps: Vec<Step>,
}

impl Script {
    pub fn sse(events: &[&str]) -> Script {
        Script {
            status: 200,
            content_type: "text/event-stream",
            header_delay: Duration::ZERO,
            steps: events
                .iter()
                .map(|e| Step::Send(Bytes::from(format!("data: {e}\n\n"))))
                .collect(),
        }
    }

    pub fn status(status: u16, body: &str) -> Script {
        Script {
            status,
            content_type: "application/json",
            header_delay: Duration::ZERO,
            steps: vec![Step::Send(Bytes::from(body.to_owned()))],
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path_and_query: String,
    pub version: http::Version,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

type Handler = Arc<dyn Fn(&Seen) -> Script + Send + Sync>;

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// When each `Step::Send` was handed to hyper, in order (the ground truth for timing).
    pub sent: Arc<Mutex<Vec<tokio::time::Instant>>>,
    pub cert_pem: Option<String>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub fn url(&self) -> String {
        let scheme = if self.cert_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.addr.port())
    }

    /// Writes the certificate to a fresh file and returns its path.
    pub fn cert_file(&self) -> std::path::PathBuf {
        let path = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "worker-test")
            .join(format!("{}.pem", self.addr.port()));
        std::fs::write(&path, self.cert_pem.as_deref().unwrap()).unwrap();
        path
    }
}

async fn answer(
    req: Request<Incoming>,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
    sent: Arc<Mutex<Vec<tokio::time::Instant>>>,
) -> Result<
    Response<
        StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, std::io::Error>>>,
    >,
    Infallible,
> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let s = Seen {
        path_and_query: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        version: parts.version,
        headers: parts.headers,
        body,
    };
    let script = handler(&s);
    seen.lock().unwrap().push(s);
    if !script.header_delay.is_zero() {
        tokio::time::sleep(script.header_delay).await;
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    let steps = script.steps.clone();
    tokio::spawn(async move {
        for step in steps {
            match step {
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Send(b) => {
                    sent.lock().unwrap().push(tokio::time::Instant::now());
                    if tx.send(Ok(Frame::data(b))).await.is_err() {
                        return;
                    }
                }
                Step::Reset => {
                    let _ = tx.send(Err(std::io::Error::other("scripted reset"))).await;
                    return;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let body = StreamBody::new(Box::pin(stream) as futures_util::stream::BoxStream<'static, _>);
    let resp = Response::builder()
        .status(script.status)
        .header("content-type", script.content_type)
        .body(body)
        .unwrap();
    Ok(resp)
}

/// Starts a plain-TCP server (HTTP/1.1 and HTTP/2 prior knowledge).
pub async fn start(handler: impl Fn(&Seen) -> Script + Send + Sync + 'static) -> Server {
    start_inner(Arc::new(handler), false).await
}

/// Starts a TLS server with a fresh self-signed certificate for 127.0.0.1 (ALPN h2, http/1.1).
pub async fn start_tls(handler: impl Fn(&Seen) -> Script + Send + Sync + 'static) -> Server {
    start_inner(Arc::new(handler), true).await
}

async fn start_inner(handler: Handler, tls: bool) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sent = Arc::new(Mutex::new(Vec::new()));
    let (acceptor, cert_pem) = if tls {
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .unwrap();
        let pem = ck.cert.pem();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
        let mut cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![ck.cert.der().clone()], key)
        .unwrap();
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        (
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(cfg))),
            Some(pem),
        )
    } else {
        (None, None)
    };
    let seen2 = seen.clone();
    let sent2 = sent.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let handler = handler.clone();
            let seen = seen2.clone();
            let sent = sent2.clone();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let svc =
                    service_fn(move |req| answer(req, handler.clone(), seen.clone(), sent.clone()));
                let builder = auto::Builder::new(TokioExecutor::new());
                match acceptor {
                    Some(acc) => {
                        if let Ok(stream) = acc.accept(tcp).await {
                            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                    }
                }
            });
        }
    });
    Server {
        addr,
        seen,
        sent,
        cert_pem,
        task,
    }
}

/// A listener that accepts connections and never says a word (for connect/TLS timeouts).
pub async fn start_silent() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    (addr, task)
}

/// A loopback port with nothing listening.
pub async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}

/// The binary's timing lock (`bench_test_support`: timing tests exclusive, CPU-heavy ones shared).
pub use bench_test_support::{cpu_heavy_lock, cpu_heavy_lock_blocking, timing_lock};

/// A request of `prompt` (`prompt_tokens` long) asking for `output_tokens`, sent at once, with
/// no batch or image: the request the worker tests send.
pub fn request(
    prompt: &str,
    prompt_tokens: u32,
    output_tokens: Option<u32>,
) -> bench_core::RequestSpec {
    bench_core::RequestSpec {
        prompt: prompt.into(),
        prompt_tokens,
        output_tokens,
        at: None,
        batch: Vec::new(),
        images: Vec::new(),
    }
}
