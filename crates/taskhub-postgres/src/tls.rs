//! TLS for managed servers: the seam's rustls configuration (`taskhub_storage::tls`: the
//! `ring` provider, the Mozilla root certificates), plus the PEM file `tls_ca_file` names. Whether
//! a connection uses TLS is the URL's `sslmode` (`prefer` by default: when the server offers
//! it; `require`: always).

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use taskhub_storage::tls::client_config;
use taskhub_storage::{StorageError, StorageResult};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector of every connection of a store.
///
/// # Errors
/// `InvalidArgument` if the CA file cannot be read or holds no usable certificate.
pub(crate) fn connector(ca_file: Option<&Path>) -> StorageResult<MakeRustlsConnect> {
    let Some(path) = ca_file else {
        return Ok(MakeRustlsConnect::new(client_config([], "")?));
    };
    let what = format!("postgres.tls_ca_file {}", path.display());
    let bad = |e: String| StorageError::InvalidArgument(format!("{what}: {e}"));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in the file".into()));
    }
    Ok(MakeRustlsConnect::new(client_config(certs, &what)?))
}
