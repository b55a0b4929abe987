//! HTTPS: rustls with the `ring` provider (no C build of aws-lc) and the Mozilla root
//! certificates of `webpki-roots`, plus any extra roots the account names (a private CA, or a
//! test's self-signed certificate). Plain `http://` endpoints (Azurite) keep working.

use std::sync::Arc;

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::pki_types::CertificateDer;
use taskhub_storage::{StorageError, StorageResult};

use crate::connection::TlsOptions;

/// How long opening a TCP connection may take.
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The connector of every store: HTTPS or plain HTTP, as each endpoint says.
pub(crate) type Connector = HttpsConnector<HttpConnector>;

/// Builds the connector, trusting the web PKI roots and `tls.extra_roots`.
///
/// # Errors
/// `InvalidArgument` if an extra root is not a usable DER certificate.
pub(crate) fn connector(tls: &TlsOptions) -> StorageResult<Connector> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for der in &tls.extra_roots {
        roots
            .add(CertificateDer::from(der.clone()))
            .map_err(|e| StorageError::InvalidArgument(format!("extra root certificate: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StorageError::InvalidArgument(format!("TLS configuration: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    // A packet-dropping endpoint must fail fast, not after the kernel's ~2 minutes of SYN
    // retries.
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}
