//! How to reach an account: [`StorageAccount`] (its name, credential and the three service
//! endpoints, from a connection string or an account name with a token credential; keys
//! never printed), [`TlsOptions`], and [`HubName`], the validated task hub name.

use std::fmt;

use base64::Engine as _;

use crate::credential::Credential;
use crate::error::AzureError;

const DEV_ACCOUNT: &str = "devstoreaccount1";
const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// An account key; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccountKey(pub(crate) Vec<u8>);

impl fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccountKey(<redacted>)")
    }
}

/// TLS settings beyond the defaults (the Mozilla root certificates of `webpki-roots`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Extra trusted root certificates, DER-encoded: a private CA in front of the account,
    /// or a test's self-signed certificate.
    pub extra_roots: Vec<Vec<u8>>,
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("extra_roots", &self.extra_roots.len())
            .finish()
    }
}

/// A storage account: its name, how requests authenticate, and the three service endpoints
/// (without a trailing slash; `https://` or, for Azurite, `http://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageAccount {
    /// Account name.
    pub name: String,
    /// Shared Key (from a connection string) or an Entra ID token credential; secrets are
    /// redacted in `Debug`.
    pub credential: Credential,
    /// Blob service endpoint.
    pub blob_endpoint: String,
    /// Queue service endpoint.
    pub queue_endpoint: String,
    /// Table service endpoint.
    pub table_endpoint: String,
    /// TLS beyond the defaults.
    pub tls: TlsOptions,
}

impl StorageAccount {
    /// Parses `UseDevelopmentStorage=true` (Azurite on its default ports) or
    /// `DefaultEndpointsProtocol=..;AccountName=..;AccountKey=..[;BlobEndpoint=..;QueueEndpoint=..;TableEndpoint=..][;EndpointSuffix=..]`.
    ///
    /// # Errors
    /// [`AzureError::ConnectionString`] naming the missing or bad part (never the key).
    pub fn from_connection_string(text: &str) -> Result<Self, AzureError> {
        let mut parts = std::collections::HashMap::new();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                AzureError::ConnectionString(format!(
                    "'{}' is not Key=Value",
                    part.split('=').next().unwrap_or_default()
                ))
            })?;
            parts.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
        let get = |k: &str| parts.get(k).cloned();
        if get("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(Self {
                name: DEV_ACCOUNT.to_owned(),
                credential: Credential::SharedKey(decode_key(DEV_KEY)?),
                blob_endpoint: format!("http://127.0.0.1:10000/{DEV_ACCOUNT}"),
                queue_endpoint: format!("http://127.0.0.1:10001/{DEV_ACCOUNT}"),
                table_endpoint: format!("http://127.0.0.1:10002/{DEV_ACCOUNT}"),
                tls: TlsOptions::default(),
            });
        }
        let name = get("accountname")
            .ok_or_else(|| AzureError::ConnectionString("AccountName is missing".to_owned()))?;
        let key =
            decode_key(&get("accountkey").ok_or_else(|| {
                AzureError::ConnectionString("AccountKey is missing".to_owned())
            })?)?;
        let protocol = get("defaultendpointsprotocol")
            .unwrap_or_else(|| "https".to_owned())
            .to_ascii_lowercase();
        if protocol != "https" && protocol != "http" {
            return Err(AzureError::ConnectionString(
                "DefaultEndpointsProtocol must be https or http".to_owned(),
            ));
        }
        let suffix = get("endpointsuffix").unwrap_or_else(|| DEFAULT_SUFFIX.to_owned());
        let endpoint = |key: &str, service: &str| -> Result<String, AzureError> {
            let url = get(key)
                .unwrap_or_else(|| format!("{protocol}://{name}.{service}.{suffix}"))
                .trim_end_matches('/')
                .to_owned();
            check_endpoint(key, url)
        };
        Ok(Self {
            blob_endpoint: endpoint("blobendpoint", "blob")?,
            queue_endpoint: endpoint("queueendpoint", "queue")?,
            table_endpoint: endpoint("tableendpoint", "table")?,
            name,
            credential: Credential::SharedKey(key),
            tls: TlsOptions::default(),
        })
    }

    /// An account reached with an Entra ID token credential: its endpoints are
    /// `https://<name>.<service>.<suffix>` (`suffix` `core.windows.net` unless given).
    ///
    /// # Errors
    /// [`AzureError::ConnectionString`] for an empty or malformed account name.
    pub fn with_token_credential(
        name: &str,
        suffix: Option<&str>,
        credential: Credential,
    ) -> Result<Self, AzureError> {
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(AzureError::ConnectionString(
                "azure_storage_account_name must be the account name: ASCII letters and digits"
                    .to_owned(),
            ));
        }
        let suffix = suffix
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(DEFAULT_SUFFIX);
        let url = |service: &str| format!("https://{name}.{service}.{suffix}");
        Ok(Self {
            name: name.to_owned(),
            credential,
            blob_endpoint: url("blob"),
            queue_endpoint: url("queue"),
            table_endpoint: url("table"),
            tls: TlsOptions::default(),
        })
    }

    /// Also trusts `der` (a DER-encoded root certificate) for HTTPS endpoints.
    #[must_use]
    pub fn with_extra_root(mut self, der: Vec<u8>) -> Self {
        self.tls.extra_roots.push(der);
        self
    }
}

/// The endpoint suffix of the public cloud.
const DEFAULT_SUFFIX: &str = "core.windows.net";

/// An endpoint URL must be `http://` or `https://` with a host.
fn check_endpoint(key: &str, url: String) -> Result<String, AzureError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(url),
        Some(_) => Err(AzureError::ConnectionString(format!("{key} has no host"))),
        None => Err(AzureError::ConnectionString(format!(
            "{key} must start with http:// or https://"
        ))),
    }
}

fn decode_key(text: &str) -> Result<AccountKey, AzureError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map(AccountKey)
        .map_err(|_| AzureError::ConnectionString("AccountKey is not valid base64".to_owned()))
}

/// A validated task hub name: 3–45 characters, ASCII letters and digits only, starting with a
/// letter (the rule of the original's Azure Storage provider, which derives queue, table and
/// container names from it).
///
/// Two names that differ only in case name the same objects on an account (queue and
/// container names are lower-cased, table names are case-insensitive): a hub records the name
/// it was created with, and opening it under another case is
/// [`AzureError::HubNameCase`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HubName(String);

impl HubName {
    /// Validates a name.
    ///
    /// # Errors
    /// [`AzureError::HubName`] saying which rule it breaks.
    pub fn new(name: &str) -> Result<Self, AzureError> {
        let bad = |reason: &str| AzureError::HubName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        };
        if !(3..=45).contains(&name.len()) {
            return Err(bad("it must be 3 to 45 characters long"));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad("it may contain only ASCII letters and digits"));
        }
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(bad("it must start with a letter"));
        }
        Ok(Self(name.to_owned()))
    }

    /// The name as given.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The lower-cased name, the prefix of queue and container names.
    #[must_use]
    pub fn lower(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

impl fmt::Display for HubName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_names_follow_the_original_rule() {
        for good in ["abc", "TaskHub1", &"a".repeat(45)] {
            assert!(HubName::new(good).is_ok(), "{good}");
        }
        for bad in ["ab", "1abc", "my-hub", "hub_1", &"a".repeat(46), ""] {
            assert!(HubName::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn connection_strings_parse_and_never_print_the_key() {
        let dev = StorageAccount::from_connection_string("UseDevelopmentStorage=true").unwrap();
        assert_eq!(
            dev.queue_endpoint,
            "http://127.0.0.1:10001/devstoreaccount1"
        );
        let text = format!(
            "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey={DEV_KEY};QueueEndpoint=http://h:1/acct/"
        );
        let acct = StorageAccount::from_connection_string(&text).unwrap();
        assert_eq!(acct.queue_endpoint, "http://h:1/acct");
        assert_eq!(acct.table_endpoint, "http://acct.table.core.windows.net");
        let shown = format!("{acct:?}");
        assert!(
            !shown.contains(DEV_KEY) && !shown.contains("Eby8"),
            "{shown}"
        );
        let err =
            StorageAccount::from_connection_string("AccountName=a;AccountKey=!!").unwrap_err();
        assert!(!err.to_string().contains("!!"));
        assert!(StorageAccount::from_connection_string("AccountKey=abc").is_err());
    }

    #[test]
    fn https_connection_strings_and_endpoints_parse() {
        let text = format!(
            "DefaultEndpointsProtocol=https;AccountName=prod1;AccountKey={DEV_KEY};EndpointSuffix=core.chinacloudapi.cn"
        );
        let acct = StorageAccount::from_connection_string(&text).unwrap();
        assert_eq!(
            acct.blob_endpoint,
            "https://prod1.blob.core.chinacloudapi.cn"
        );
        assert_eq!(
            acct.queue_endpoint,
            "https://prod1.queue.core.chinacloudapi.cn"
        );
        assert_eq!(
            acct.table_endpoint,
            "https://prod1.table.core.chinacloudapi.cn"
        );
        // The protocol defaults to https and the suffix to the public cloud's.
        let acct = StorageAccount::from_connection_string(&format!(
            "AccountName=prod1;AccountKey={DEV_KEY}"
        ))
        .unwrap();
        assert_eq!(acct.queue_endpoint, "https://prod1.queue.core.windows.net");
        // An explicit endpoint wins over the protocol and suffix.
        let acct = StorageAccount::from_connection_string(&format!(
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey={DEV_KEY};BlobEndpoint=https://blobs.example.test:8443/a/"
        ))
        .unwrap();
        assert_eq!(acct.blob_endpoint, "https://blobs.example.test:8443/a");
        assert_eq!(acct.table_endpoint, "https://a.table.core.windows.net");
        for bad in [
            format!("DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey={DEV_KEY}"),
            format!("AccountName=a;AccountKey={DEV_KEY};BlobEndpoint=ftp://x"),
            format!("AccountName=a;AccountKey={DEV_KEY};QueueEndpoint=https://"),
            format!("AccountName=a;AccountKey={DEV_KEY};TableEndpoint=https:///a"),
        ] {
            let err = StorageAccount::from_connection_string(&bad).unwrap_err();
            assert!(
                matches!(err, AzureError::ConnectionString(_)),
                "{bad}: {err}"
            );
            assert!(!err.to_string().contains(DEV_KEY), "{err}");
        }
    }

    #[test]
    fn token_credential_accounts_use_https_endpoints_and_redact_secrets() {
        use crate::credential::{ClientSecretCredential, SecretText};
        let credential = Credential::ClientSecret(ClientSecretCredential {
            tenant_id: "t".to_owned(),
            client_id: "c".to_owned(),
            secret: SecretText::new("very-secret-value"),
            authority_host: crate::credential::DEFAULT_AUTHORITY_HOST.to_owned(),
        });
        let acct = StorageAccount::with_token_credential("prod1", None, credential.clone())
            .unwrap()
            .with_extra_root(vec![1, 2, 3]);
        assert_eq!(acct.table_endpoint, "https://prod1.table.core.windows.net");
        let shown = format!("{acct:?}");
        assert!(!shown.contains("very-secret-value"), "{shown}");
        assert!(shown.contains("extra_roots: 1"), "{shown}");
        let gov = StorageAccount::with_token_credential(
            "prod1",
            Some("core.usgovcloudapi.net"),
            credential.clone(),
        )
        .unwrap();
        assert_eq!(
            gov.blob_endpoint,
            "https://prod1.blob.core.usgovcloudapi.net"
        );
        assert!(StorageAccount::with_token_credential("", None, credential.clone()).is_err());
        assert!(StorageAccount::with_token_credential("a.b/c", None, credential).is_err());
    }
}
