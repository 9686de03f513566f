//! A minimal hyper client for the simulator's tests (the real worker is a separate crate).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpStream;

/// One response as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    /// When the response head arrived.
    pub head_at: Instant,
    /// Each body frame with its arrival time.
    pub chunks: Vec<(Instant, Bytes)>,
    /// The body error, if the body did not end cleanly.
    pub error: Option<hyper::Error>,
    /// The request was written just before this.
    pub sent_at: Instant,
}

impl Reply {
    pub fn body(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body()).expect("utf-8 body")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body()).expect("JSON body")
    }

    /// SSE payloads (`data:` with or without a space), in order.
    pub fn events(&self) -> Vec<String> {
        sse_events(&self.text())
    }

    /// Arrival time of every event payload (the time of the frame that completed it).
    pub fn timed_events(&self) -> Vec<(Instant, String)> {
        let mut out = Vec::new();
        let mut buf = String::new();
        for (t, b) in &self.chunks {
            buf.push_str(std::str::from_utf8(b).expect("utf-8 frame"));
            while let Some(i) = buf.find("\n\n") {
                let ev: String = buf.drain(..i + 2).collect();
                for e in sse_events(&ev) {
                    out.push((*t, e));
                }
            }
        }
        out
    }
}

pub fn sse_events(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let p = e.strip_prefix("data:").expect("event starts with data:");
            p.strip_prefix(' ').unwrap_or(p).to_string()
        })
        .collect()
}

/// The text of generated tokens in OpenAI / TGI stream events, one entry per token event.
pub fn token_texts(events: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for e in events {
        if e == "[DONE]" {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(e) else {
            continue;
        };
        if let Some(t) = v["choices"][0]["text"].as_str() {
            out.push(t.to_string());
        } else if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
            if !t.is_empty() {
                out.push(t.to_string());
            }
        } else if let Some(t) = v["token"]["text"].as_str() {
            out.push(t.to_string());
        }
    }
    out
}

pub fn request(addr: SocketAddr, path: &str, body: &Value) -> Request<Full<Bytes>> {
    Request::post(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request")
}

pub fn raw_request(addr: SocketAddr, path: &str, body: &'static str) -> Request<Full<Bytes>> {
    Request::post(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .expect("request")
}

pub fn get(addr: SocketAddr, path: &str) -> Request<Full<Bytes>> {
    Request::get(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .expect("request")
}

pub async fn h1(addr: SocketAddr) -> http1::SendRequest<Full<Bytes>> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let (send, conn) = http1::handshake(TokioIo::new(tcp))
        .await
        .expect("h1 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

pub async fn h2(addr: SocketAddr) -> http2::SendRequest<Full<Bytes>> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
        .await
        .expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

/// Reads a whole response, timing every frame.
pub async fn read(resp: Response<Incoming>, sent_at: Instant) -> Reply {
    let head_at = Instant::now();
    let status = resp.status().as_u16();
    let (parts, mut body) = resp.into_parts();
    let mut chunks = Vec::new();
    let mut error = None;
    loop {
        match body.frame().await {
            None => break,
            Some(Ok(f)) => {
                let at = Instant::now();
                if let Ok(d) = f.into_data() {
                    if !d.is_empty() {
                        chunks.push((at, d));
                    }
                }
            }
            Some(Err(e)) => {
                error = Some(e);
                break;
            }
        }
    }
    Reply {
        status,
        headers: parts.headers,
        head_at,
        chunks,
        error,
        sent_at,
    }
}

/// POSTs `body` to `path` on a fresh HTTP/1.1 connection.
pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    let mut send = h1(addr).await;
    let sent_at = Instant::now();
    let resp = send
        .send_request(request(addr, path, body))
        .await
        .expect("response head");
    read(resp, sent_at).await
}

/// Like [`post`], but on an existing HTTP/1.1 connection.
pub async fn post_on(
    send: &mut http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    path: &str,
    body: &Value,
) -> Reply {
    send.ready().await.expect("connection ready");
    let sent_at = Instant::now();
    let resp = send
        .send_request(request(addr, path, body))
        .await
        .expect("response head");
    read(resp, sent_at).await
}

/// GETs `path` on a fresh HTTP/1.1 connection.
pub async fn get_once(addr: SocketAddr, path: &str) -> Reply {
    let mut send = h1(addr).await;
    let sent_at = Instant::now();
    let resp = send
        .send_request(get(addr, path))
        .await
        .expect("response head");
    read(resp, sent_at).await
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The binary's timing lock (`bench_test_support`: timing tests exclusive, CPU-heavy ones shared).
pub use bench_test_support::{cpu_heavy_lock, timing_lock};
