//! TLS for managed servers: rustls with the `ring` provider (no C build of aws-lc) and the
//! Mozilla root certificates of `webpki-roots`, plus the PEM file `tls_ca_file` names. Whether
//! a connection uses TLS is the URL's `sslmode` (`prefer` by default: when the server offers
//! it; `require`: always).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use taskhub_storage::{StorageError, StorageResult};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector of every connection of a store.
///
/// # Errors
/// `InvalidArgument` if the CA file cannot be read or holds no usable certificate.
pub(crate) fn connector(ca_file: Option<&Path>) -> StorageResult<MakeRustlsConnect> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let bad = |e: String| {
            StorageError::InvalidArgument(format!("postgres.tls_ca_file {}: {e}", path.display()))
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no PEM certificate in the file".into()));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| bad(e.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StorageError::InvalidArgument(format!("TLS configuration: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}
