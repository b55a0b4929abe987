//! How requests authenticate: the account's Shared Key (connection strings, Azurite) or an
//! Entra ID token (production accounts without keys): a service principal's client secret,
//! or the managed identity of the host. Secrets never show in `Debug`.

use std::fmt;

use crate::connection::AccountKey;

/// The Entra ID scope of Azure Storage (queues, tables and blobs).
pub const STORAGE_SCOPE: &str = "https://storage.azure.com/.default";
/// Where client-secret tokens come from unless told otherwise (the public cloud).
pub const DEFAULT_AUTHORITY_HOST: &str = "https://login.microsoftonline.com";
/// The instance metadata service's token endpoint (managed identity on a VM, AKS, ...).
pub const IMDS_ENDPOINT: &str = "http://169.254.169.254/metadata/identity/oauth2/token";

/// A secret string; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretText(String);

impl SecretText {
    /// Wraps a secret.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the request that sends it (never for printing).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A service principal's client secret (OAuth 2.0 client credentials grant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSecretCredential {
    /// The directory (tenant) ID.
    pub tenant_id: String,
    /// The application (client) ID.
    pub client_id: String,
    /// The client secret (redacted in `Debug`).
    pub secret: SecretText,
    /// The authority, without a trailing slash: [`DEFAULT_AUTHORITY_HOST`] for the public
    /// cloud. Tokens come from `<authority>/<tenant>/oauth2/v2.0/token`.
    pub authority_host: String,
}

/// The managed identity of the host the worker runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedIdentityCredential {
    /// A user-assigned identity's client ID; `None` for the system-assigned one.
    pub client_id: Option<String>,
    /// The token endpoint: [`IMDS_ENDPOINT`], or App Service's `IDENTITY_ENDPOINT`.
    pub endpoint: String,
    /// App Service's `IDENTITY_HEADER` (sent as `X-IDENTITY-HEADER`); `None` for IMDS (which
    /// gets `Metadata: true`).
    pub identity_header: Option<SecretText>,
}

impl ManagedIdentityCredential {
    /// The host's identity as its environment describes it: App Service's
    /// `IDENTITY_ENDPOINT` + `IDENTITY_HEADER` when set, else the instance metadata service.
    #[must_use]
    pub fn from_environment(client_id: Option<String>) -> Self {
        let endpoint = std::env::var("IDENTITY_ENDPOINT").ok();
        let header = std::env::var("IDENTITY_HEADER").ok();
        match (endpoint, header) {
            (Some(endpoint), Some(header)) => Self {
                client_id,
                endpoint,
                identity_header: Some(SecretText::new(header)),
            },
            _ => Self {
                client_id,
                endpoint: IMDS_ENDPOINT.to_owned(),
                identity_header: None,
            },
        }
    }
}

/// How requests to the account authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// Shared Key signing with the account key (connection strings, Azurite).
    SharedKey(AccountKey),
    /// An Entra ID token from a service principal's client secret.
    ClientSecret(ClientSecretCredential),
    /// An Entra ID token from the host's managed identity.
    ManagedIdentity(ManagedIdentityCredential),
}
