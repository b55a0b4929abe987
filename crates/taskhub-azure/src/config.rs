//! Connection strings and task hub names.

use std::fmt;

use base64::Engine as _;

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

/// A parsed connection string: the account, its Shared Key and the three service endpoints
/// (without a trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageAccount {
    /// Account name.
    pub name: String,
    /// Account key (redacted in `Debug`).
    pub key: AccountKey,
    /// Blob service endpoint.
    pub blob_endpoint: String,
    /// Queue service endpoint.
    pub queue_endpoint: String,
    /// Table service endpoint.
    pub table_endpoint: String,
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
                key: decode_key(DEV_KEY)?,
                blob_endpoint: format!("http://127.0.0.1:10000/{DEV_ACCOUNT}"),
                queue_endpoint: format!("http://127.0.0.1:10001/{DEV_ACCOUNT}"),
                table_endpoint: format!("http://127.0.0.1:10002/{DEV_ACCOUNT}"),
            });
        }
        let name = get("accountname")
            .ok_or_else(|| AzureError::ConnectionString("AccountName is missing".to_owned()))?;
        let key =
            decode_key(&get("accountkey").ok_or_else(|| {
                AzureError::ConnectionString("AccountKey is missing".to_owned())
            })?)?;
        let protocol = get("defaultendpointsprotocol").unwrap_or_else(|| "https".to_owned());
        let suffix = get("endpointsuffix").unwrap_or_else(|| "core.windows.net".to_owned());
        let endpoint = |key: &str, service: &str| -> Result<String, AzureError> {
            let url = get(key)
                .unwrap_or_else(|| format!("{protocol}://{name}.{service}.{suffix}"))
                .trim_end_matches('/')
                .to_owned();
            if url.starts_with("http://") || url.starts_with("https://") {
                Ok(url)
            } else {
                Err(AzureError::ConnectionString(format!(
                    "{key} must start with http:// or https://"
                )))
            }
        };
        Ok(Self {
            blob_endpoint: endpoint("blobendpoint", "blob")?,
            queue_endpoint: endpoint("queueendpoint", "queue")?,
            table_endpoint: endpoint("tableendpoint", "table")?,
            name,
            key,
        })
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
}
