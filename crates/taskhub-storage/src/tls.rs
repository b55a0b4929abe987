//! The TLS client configuration of the backends that reach a server (feature `tls`): rustls
//! with the `ring` provider (no C build of aws-lc), trusting the Mozilla root certificates of
//! `webpki-roots` plus the extra roots the backend's options name.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use crate::error::{StorageError, StorageResult};

/// The client configuration that trusts the web PKI roots and `extra_roots`, with no client
/// certificate.
///
/// # Errors
/// [`StorageError::InvalidArgument`] `{what}: …` if an extra root is not a usable
/// certificate; `TLS configuration: …` if rustls refuses the protocol versions.
pub fn client_config(
    extra_roots: impl IntoIterator<Item = CertificateDer<'static>>,
    what: &str,
) -> StorageResult<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in extra_roots {
        roots
            .add(cert)
            .map_err(|e| StorageError::InvalidArgument(format!("{what}: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StorageError::InvalidArgument(format!("TLS configuration: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
