//! Cleartext HTTP/1.1 without a connection task: each request drives its own connection.
//!
//! hyper-util's pooled client runs every connection as a task of its own, so each request
//! crosses tasks (and often threads) several times: the request is handed to the connection
//! task, each body chunk is handed back, and an extra task returns the connection to the pool.
//! At thousands of requests per second those wake-ups were most of the client's kernel time.
//! Here the request's task polls the connection itself while it waits for the response and
//! reads the body, and puts the connection back in the pool when the body has ended. HTTPS and
//! HTTP/2 keep hyper-util's client.

use std::collections::VecDeque;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpSocket, TcpStream};

use crate::client::{BoxError, ClosedBeforeSent, ConnectTimedOut, POOL_IDLE};

type Conn = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// A connection: its request sender and the connection future that does its I/O.
struct Lease {
    tx: http1::SendRequest<Full<Bytes>>,
    conn: Pin<Box<Conn>>,
    /// The connection future has finished (closed or failed): never reuse.
    done: bool,
}

impl Lease {
    /// Polls the connection's I/O (ignored once it has finished).
    fn drive(&mut self, cx: &mut Context<'_>) {
        if !self.done && self.conn.as_mut().poll(cx).is_ready() {
            self.done = true;
        }
    }
}

/// Idle connections to one `host:port`.
pub(crate) struct H1Pool {
    addr: String,
    /// The `Host` header of every request (the target's authority).
    host: http::HeaderValue,
    connect_timeout: Duration,
    max_buf: usize,
    /// Oldest first; requests take the newest.
    idle: Mutex<VecDeque<(Lease, Instant)>>,
    /// Local addresses new connections are made from, in turn (empty: the OS chooses).
    sources: Vec<IpAddr>,
    /// The next source address's turn.
    turn: AtomicUsize,
}

impl std::fmt::Debug for H1Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Pool")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl H1Pool {
    /// A pool for the target of `uri`; `None` if it names no host.
    pub(crate) fn new(
        uri: &http::Uri,
        connect_timeout: Duration,
        max_buf: usize,
        sources: Vec<IpAddr>,
    ) -> Option<Arc<Self>> {
        let authority = uri.authority()?;
        Some(Arc::new(Self {
            addr: format!("{}:{}", authority.host(), uri.port_u16().unwrap_or(80)),
            host: http::HeaderValue::from_str(authority.as_str()).ok()?,
            connect_timeout,
            max_buf,
            idle: Mutex::new(VecDeque::new()),
            sources,
            turn: AtomicUsize::new(0),
        }))
    }

    /// An idle connection ready for a request, or a new one.
    async fn lease(&self) -> Result<Lease, BoxError> {
        loop {
            let next = self.idle.lock().map(|mut v| v.pop_back()).unwrap_or(None);
            let Some((mut lease, since)) = next else {
                break;
            };
            if since.elapsed() >= POOL_IDLE {
                continue;
            }
            // Let the connection notice a close or finish its last exchange, then ask whether
            // it takes a request now; anything but "ready" drops it.
            let mut cx = Context::from_waker(Waker::noop());
            lease.drive(&mut cx);
            if !lease.done && matches!(lease.tx.poll_ready(&mut cx), Poll::Ready(Ok(()))) {
                return Ok(lease);
            }
        }
        let stream = tokio::time::timeout(self.connect_timeout, self.connect())
            .await
            .map_err(|_| Box::new(ConnectTimedOut) as BoxError)?
            .map_err(|e| Box::new(ConnectError(self.addr.clone(), e)) as BoxError)?;
        let _ = stream.set_nodelay(true);
        let (tx, conn) = http1::Builder::new()
            .max_buf_size(self.max_buf)
            .handshake(TokioIo::new(stream))
            .await?;
        Ok(Lease {
            tx,
            conn: Box::pin(conn),
            done: false,
        })
    }

    /// A new TCP connection to the target, from the next source address when there are some.
    async fn connect(&self) -> std::io::Result<TcpStream> {
        if self.sources.is_empty() {
            return TcpStream::connect(&self.addr).await;
        }
        let source = self.sources[self.turn.fetch_add(1, Ordering::Relaxed) % self.sources.len()];
        let Some(to) = tokio::net::lookup_host(&self.addr)
            .await?
            .find(|a| a.is_ipv4() == source.is_ipv4())
        else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                format!(
                    "the source address {source} and the target have no address family in common"
                ),
            ));
        };
        let socket = if to.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.bind(SocketAddr::new(source, 0))?;
        socket.connect(to).await
    }

    fn put(&self, lease: Lease) {
        if lease.done {
            return;
        }
        if let Ok(mut v) = self.idle.lock() {
            // Connections idle too long are closed here, not left open until a burst needs them.
            while v.front().is_some_and(|(_, t)| t.elapsed() >= POOL_IDLE) {
                v.pop_front();
            }
            v.push_back((lease, Instant::now()));
        }
    }

    /// Sends `req` on a pooled or new connection, driving the connection until the response
    /// head arrives; the body keeps driving it and returns it to the pool when it has ended.
    pub(crate) async fn request(
        self: &Arc<Self>,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<DrivenBody>, BoxError> {
        // As hyper-util's client sends it: origin-form target, and a Host header unless the
        // caller gave one.
        let (mut parts, body) = req.into_parts();
        if !parts.headers.contains_key(http::header::HOST) {
            parts.headers.insert(http::header::HOST, self.host.clone());
        }
        if let Some(pq) = parts.uri.path_and_query() {
            parts.uri = http::Uri::from(pq.clone());
        }
        let req = Request::from_parts(parts, body);
        let lease = self.lease().await?;
        self.send_on(lease, req).await
    }

    /// Sends `req` on `lease` and drives the connection until the response head arrives.
    ///
    /// The connection can finish (the server's close seen) between the pool's check and the
    /// first poll here, with the request still queued: hyper then ends the connection without
    /// writing it, and its answer would come only when the connection is dropped, which the
    /// lease prevents. So a finished connection with the request unanswered is an error at
    /// once ([`ClosedBeforeSent`], resent by the caller), not a wait for the first-byte
    /// timeout (issue 20: a request waited 600 s on a connection llama.cpp had closed).
    async fn send_on(
        self: &Arc<Self>,
        mut lease: Lease,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<DrivenBody>, BoxError> {
        let mut sent = std::pin::pin!(lease.tx.send_request(req));
        let resp = std::future::poll_fn(|cx| {
            lease.drive(cx);
            match sent.as_mut().poll(cx) {
                Poll::Pending if lease.done => {
                    Poll::Ready(Err(Box::new(ClosedBeforeSent) as BoxError))
                }
                Poll::Pending => Poll::Pending,
                Poll::Ready(r) => Poll::Ready(r.map_err(|e| Box::new(e) as BoxError)),
            }
        })
        .await?;
        let (parts, body) = resp.into_parts();
        let ended = body.is_end_stream();
        let mut driven = DrivenBody {
            body,
            lease: Some(lease),
            pool: self.clone(),
            ended,
        };
        if ended {
            driven.release();
        }
        Ok(Response::from_parts(parts, driven))
    }
}

/// A connect failure, naming the address.
#[derive(Debug)]
struct ConnectError(String, std::io::Error);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tcp connect error to {}", self.0)
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.1)
    }
}

/// A response body that drives its connection while it is read.
pub(crate) struct DrivenBody {
    body: Incoming,
    lease: Option<Lease>,
    pool: Arc<H1Pool>,
    ended: bool,
}

impl DrivenBody {
    /// The body has ended: the connection goes back to the pool.
    fn release(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.pool.put(lease);
        }
    }
}

impl Body for DrivenBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        if let Some(lease) = this.lease.as_mut() {
            lease.drive(cx);
        }
        let r = Pin::new(&mut this.body).poll_frame(cx);
        match &r {
            Poll::Ready(None) => {
                this.ended = true;
                this.release();
            }
            Poll::Ready(Some(Err(_))) => {
                // A failed body leaves the connection in no state to reuse.
                this.lease = None;
            }
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The body of a response from either transport.
pub(crate) enum RespBody {
    /// From hyper-util's client (HTTPS, HTTP/2, and the health check).
    Pooled(Incoming),
    /// From [`H1Pool`].
    Driven(DrivenBody),
}

impl Body for RespBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            RespBody::Pooled(b) => Pin::new(b).poll_frame(cx),
            RespBody::Driven(b) => Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Pooled(b) => b.is_end_stream(),
            RespBody::Driven(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Pooled(b) => b.size_hint(),
            RespBody::Driven(b) => b.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers one request on a connection, then closes it 50 ms later: the
    /// close lands while the connection sits in the pool.
    async fn answer_once_then_close() -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = l.local_addr().expect("addr");
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.expect("accept");
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.expect("read");
                if n == 0 {
                    return;
                }
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                .await
                .expect("write");
            tokio::time::sleep(Duration::from_millis(50)).await;
        });
        format!("http://{addr}/v1/completions")
    }

    fn post(url: &str) -> Request<Full<Bytes>> {
        Request::post(url)
            .body(Full::new(Bytes::from_static(b"{}")))
            .expect("request")
    }

    /// Issue 20: a pooled connection the server closed, taken before the close was seen (the
    /// race between the pool's check and the first poll, forced here by skipping the check):
    /// the request fails at once as resendable, where it used to wait for the first-byte
    /// timeout (600 s by default) with the connection held open.
    #[tokio::test]
    async fn a_connection_closed_before_the_request_was_written_fails_at_once() {
        let url = answer_once_then_close().await;
        let pool = H1Pool::new(
            &url.parse().expect("uri"),
            Duration::from_secs(5),
            1 << 16,
            Vec::new(),
        )
        .expect("pool");
        let first = pool.request(post(&url)).await.expect("first answer");
        let body = first.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], b"ok");
        // The body's end put the connection back; the server closes it 50 ms later.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (lease, _) = pool
            .idle
            .lock()
            .expect("pool")
            .pop_back()
            .expect("the connection was pooled");
        let second = tokio::time::timeout(Duration::from_secs(10), pool.send_on(lease, post(&url)))
            .await
            .expect("an answer at once, not a wait for the first-byte timeout");
        let e = second.err().expect("the closed connection cannot answer");
        assert!(crate::client::is_closed_unanswered(&*e), "{e}");
    }

    /// `--source-address`: new connections come from each source address in turn (a
    /// loopback server records the peer address of every connection it accepts; it closes
    /// each connection after its answer, so every request makes a new one).
    #[tokio::test]
    async fn new_connections_take_the_source_addresses_in_turn() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = l.local_addr().expect("addr");
        let (peers_tx, mut peers) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut s, peer)) = l.accept().await {
                let _ = peers_tx.send(peer.ip());
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
                    )
                    .await;
            }
        });
        let url = format!("http://{addr}/v1/completions");
        let sources: Vec<IpAddr> = vec![[127, 0, 0, 2].into(), [127, 0, 0, 3].into()];
        let pool = H1Pool::new(
            &url.parse().expect("uri"),
            Duration::from_secs(5),
            1 << 16,
            sources.clone(),
        )
        .expect("pool");
        let mut seen = Vec::new();
        for _ in 0..4 {
            let r = pool.request(post(&url)).await.expect("answer");
            let body = r.into_body().collect().await.expect("body").to_bytes();
            assert_eq!(&body[..], b"ok");
            seen.push(peers.recv().await.expect("a connection"));
        }
        assert_eq!(seen, [sources[0], sources[1], sources[0], sources[1]]);
    }

    /// A source address of the other family than the target's is a connect error naming both.
    #[tokio::test]
    async fn a_source_address_of_the_wrong_family_is_a_connect_error() {
        let url = answer_once_then_close().await;
        let pool = H1Pool::new(
            &url.parse().expect("uri"),
            Duration::from_secs(5),
            1 << 16,
            vec!["::1".parse().expect("v6")],
        )
        .expect("pool");
        let e = pool.request(post(&url)).await.err().expect("no connection");
        let text = format!("{e}: {:?}", std::error::Error::source(&*e));
        assert!(text.contains("::1"), "{text}");
    }
}
