//! The shared hyper client: pooled connections, HTTP/1.1 or HTTP/2, rustls, and a connect
//! timeout that covers TCP and TLS together.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;

use crate::{Error, WorkerConfig};

/// HTTP/2 stream window: a whole long completion fits without waiting for WINDOW_UPDATEs.
const H2_STREAM_WINDOW: u32 = 16 << 20;
/// HTTP/2 connection window: many concurrent long streams share one connection.
const H2_CONNECTION_WINDOW: u32 = 256 << 20;

/// Idle pooled connections are dropped after this long, below the 5 s keep-alive timeout of
/// uvicorn (vLLM, SGLang) and cpp-httplib (llama.cpp): a request must never be written on a
/// connection the server is closing at that instant ("connection closed before message
/// completed").
pub(crate) const POOL_IDLE: Duration = Duration::from_secs(4);

/// Read buffer limit of HTTP/1.1 connections (response heads; bodies stream through).
pub(crate) const H1_MAX_BUF: usize = 4 << 20;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The client type every request goes through.
pub(crate) type HttpClient = Client<TimeoutConnector, Full<Bytes>>;

/// Marker error: establishing a connection took longer than the connect timeout.
#[derive(Debug)]
pub(crate) struct ConnectTimedOut;

impl std::fmt::Display for ConnectTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connect timed out")
    }
}

impl std::error::Error for ConnectTimedOut {}

/// A pooled HTTP/1.1 connection finished (the server closed it) before the request on it was
/// written: nothing was sent, so the request may be resent.
#[derive(Debug)]
pub(crate) struct ClosedBeforeSent;

impl std::fmt::Display for ClosedBeforeSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server closed the kept-alive connection before the request was written")
    }
}

impl std::error::Error for ClosedBeforeSent {}

/// Wraps the HTTPS connector so the connect timeout covers the TLS handshake too.
#[derive(Clone, Debug)]
pub(crate) struct TimeoutConnector {
    inner: HttpsConnector<HttpConnector>,
    timeout: Duration,
}

impl tower_service::Service<Uri> for TimeoutConnector {
    type Response = MaybeHttpsStream<TokioIo<TcpStream>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let fut = self.inner.call(uri);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => Err(Box::new(ConnectTimedOut) as BoxError),
            }
        })
    }
}

/// Accepts every certificate (`--insecure`). Signatures are still checked, so the handshake
/// is a real TLS handshake; only the identity is not.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn tls_config(cfg: &WorkerConfig, https: bool) -> Result<rustls::ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls {
            reason: e.to_string(),
        })?;
    let mut roots = rustls::RootCertStore::empty();
    // Plain-http targets never handshake: skip loading the system store (slow on some hosts).
    if https && !cfg.insecure {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let native = rustls_native_certs::load_native_certs();
        for cert in native.certs {
            // A broken certificate in the system store is not our user's problem: skip it.
            if let Err(e) = roots.add(cert) {
                tracing::debug!("skipping a system root certificate: {e}");
            }
        }
    }
    if let Some(path) = &cfg.cacert {
        let bad = |reason: String| Error::CaCert {
            path: path.clone(),
            reason,
        };
        let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let mut n = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| bad(format!("unusable certificate: {e}")))?;
            n += 1;
        }
        if n == 0 {
            return Err(bad("no PEM certificate found".into()));
        }
    }
    let mut config = builder.with_root_certificates(roots).with_no_client_auth();
    if cfg.insecure {
        config
            .dangerous()
            .set_certificate_verifier(Arc::new(AcceptAnyCert(provider)));
    }
    Ok(config)
}

/// Builds the shared client for `cfg`.
pub(crate) fn build(cfg: &WorkerConfig, https: bool) -> Result<HttpClient, Error> {
    let tls = tls_config(cfg, https)?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    // Our own timeout (TimeoutConnector) covers TCP and TLS together.
    http.set_connect_timeout(None);
    http.set_keepalive(Some(Duration::from_secs(60)));
    http.set_local_address(cfg.source_addresses.first().copied());
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let https_connector = if cfg.http2 {
        builder.enable_http2().wrap_connector(http)
    } else {
        builder.enable_http1().wrap_connector(http)
    };
    let connector = TimeoutConnector {
        inner: https_connector,
        timeout: cfg.timeouts.connect,
    };
    let mut b = Client::builder(TokioExecutor::new());
    b.timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(usize::MAX)
        .retry_canceled_requests(true);
    if cfg.http2 {
        b.http2_only(true)
            .http2_initial_stream_window_size(H2_STREAM_WINDOW)
            .http2_initial_connection_window_size(H2_CONNECTION_WINDOW)
            .http2_max_frame_size(1 << 20)
            .http2_max_send_buf_size(4 << 20);
    } else {
        // Response headers only; bodies stream through without this limit.
        b.http1_max_buf_size(H1_MAX_BUF);
    }
    Ok(b.build(connector))
}

/// Walks an error's source chain: was it our connect timeout?
pub(crate) fn is_connect_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    find_in_chain::<ConnectTimedOut>(e).is_some()
}

/// The first error of type `T` in `e`'s source chain, `e` included.
fn find_in_chain<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        cur = err.source();
    }
    None
}

/// The error and its causes on one line, repeated messages dropped.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// The server closed the connection after the request was written and before any byte of a
/// response (hyper's "connection closed before message completed" while awaiting the head), or
/// before hyper could write it (canceled): nothing was answered, so the request may be resent.
pub(crate) fn is_closed_unanswered(e: &(dyn std::error::Error + 'static)) -> bool {
    // Canceled: the connection closed before hyper wrote the request at all.
    find_in_chain::<ClosedBeforeSent>(e).is_some()
        || find_in_chain::<hyper::Error>(e)
            .is_some_and(|h| h.is_incomplete_message() || h.is_canceled())
}
