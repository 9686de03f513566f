//! The self-signed certificate made at start for `tls: true`.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::Error;

/// A TLS acceptor offering ALPN `h2` and `http/1.1`, and the certificate's PEM. The
/// certificate names `localhost`, `127.0.0.1`, `::1` and `host`.
pub(crate) fn self_signed(host: &str) -> Result<(tokio_rustls::TlsAcceptor, String), Error> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    if !host.is_empty() && !names.iter().any(|n| n == host) && host != "0.0.0.0" && host != "::" {
        names.push(host.to_string());
    }
    let ck = rcgen::generate_simple_self_signed(names).map_err(|e| Error::Tls(e.to_string()))?;
    let pem = ck.cert.pem();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), pem))
}
