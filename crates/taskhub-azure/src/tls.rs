//! HTTPS: the seam's rustls configuration (`taskhub_storage::tls`: the `ring` provider, the
//! Mozilla root certificates), plus any extra roots the account names (a private CA, or a
//! test's self-signed certificate). Plain `http://` endpoints (Azurite) keep working.

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::pki_types::CertificateDer;
use taskhub_storage::tls::client_config;
use taskhub_storage::StorageResult;

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
    let extra = tls.extra_roots.iter().cloned().map(CertificateDer::from);
    let config = client_config(extra, "extra root certificate")?;
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
