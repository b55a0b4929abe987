//! The Azure backend's options ([`AzureConfig`]: how to reach the account) from configuration:
//! the `[azure]` table of `taskhub.toml`, `TASKHUB_AZURE_<NAME>` environment variables, and
//! explicit values such as a CLI flag (later sources win). The older top-level keys
//! `azure_<name>` of `taskhub.toml` (and `--set azure_<name>=…`) are still read, before the
//! table. The layering is the seam's ([`BackendOptions`]); this file writes `set()`, the checks
//! ([`AzureConfig::validate`]) and the account the options name ([`AzureConfig::account`]).
//! Errors name `azure.<name>`; secrets never show in `Debug` or messages.
//!
//! ```toml
//! # taskhub.toml
//! [azure]
//! storage_connection_string = "UseDevelopmentStorage=true"
//! ```
//!
//! ```
//! # fn main() -> Result<(), taskhub_azure::AzureConfigError> {
//! use taskhub_azure::{AzureConfig, BackendOptions};
//!
//! let mut config = AzureConfig::default();
//! config.set("storage_account_name", "prod1", "my flag")?;
//! assert!(!config.uses_client_secret(), "no secret: the managed identity");
//! let err = config.set("credential", "password", "TASKHUB_AZURE_CREDENTIAL").unwrap_err();
//! assert!(err.to_string().contains("azure.credential"));
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use taskhub_storage::backend::{BackendOptions, OptionError};

use crate::credential::{
    ClientSecretCredential, Credential, ManagedIdentityCredential, SecretText,
    DEFAULT_AUTHORITY_HOST,
};
use crate::StorageAccount;

/// The table of `taskhub.toml` these options live in.
pub const TABLE: &str = "azure";

/// An Azure option that cannot be applied, or a missing one: the seam's [`OptionError`],
/// naming `azure.<name>` and its source.
pub type AzureConfigError = OptionError;

/// How the Azure backend reaches its storage account: a connection string, or an account
/// name with an Entra ID credential. Secrets never show in `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AzureConfig {
    /// The connection string (`UseDevelopmentStorage=true` for Azurite); never printed.
    pub storage_connection_string: Option<SecretText>,
    /// Entra ID instead of a connection string: the account's name (endpoints
    /// `https://<name>.<service>.<suffix>`). Used when there is no connection string.
    pub storage_account_name: String,
    /// The endpoint suffix with an account name; empty for `core.windows.net`.
    pub storage_endpoint_suffix: String,
    /// `client_secret`, `managed_identity`, or empty (a client secret if one is set, else the
    /// managed identity).
    pub credential: String,
    /// The directory (tenant) ID of a client-secret credential.
    pub tenant_id: String,
    /// The application (client) ID of a client secret, or a user-assigned managed identity's
    /// client ID (empty: the system-assigned identity).
    pub client_id: String,
    /// The client secret; never printed.
    pub client_secret: Option<SecretText>,
    /// The Entra ID authority for client secrets; empty for `https://login.microsoftonline.com`.
    pub authority_host: String,
}

impl fmt::Debug for AzureConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |s: &Option<SecretText>| if s.is_some() { "<redacted>" } else { "<none>" };
        f.debug_struct("AzureConfig")
            .field(
                "storage_connection_string",
                &secret(&self.storage_connection_string),
            )
            .field("storage_account_name", &self.storage_account_name)
            .field("storage_endpoint_suffix", &self.storage_endpoint_suffix)
            .field("credential", &self.credential)
            .field("tenant_id", &self.tenant_id)
            .field("client_id", &self.client_id)
            .field("client_secret", &secret(&self.client_secret))
            .field("authority_host", &self.authority_host)
            .finish()
    }
}

impl BackendOptions for AzureConfig {
    const TABLE: &'static str = TABLE;
    const NAMES: &'static [&'static str] = &[
        "storage_connection_string",
        "storage_account_name",
        "storage_endpoint_suffix",
        "credential",
        "tenant_id",
        "client_id",
        "client_secret",
        "authority_host",
    ];
    const TOP_LEVEL_KEYS: bool = true;
    const STRINGS_ONLY: bool = true;

    /// The value is trimmed; empty clears the option. Every option is empty by default.
    fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), OptionError> {
        let value = value.trim();
        let secret = || Some(SecretText::new(value)).filter(|_| !value.is_empty());
        match name {
            "storage_connection_string" => self.storage_connection_string = secret(),
            "storage_account_name" => value.clone_into(&mut self.storage_account_name),
            "storage_endpoint_suffix" => value.clone_into(&mut self.storage_endpoint_suffix),
            "credential" => {
                let v = value.to_ascii_lowercase().replace('-', "_");
                if !["", "client_secret", "managed_identity"].contains(&v.as_str()) {
                    let reason =
                        format!("expected client_secret or managed_identity, got {value:?}");
                    return Err(Self::invalid(name, origin, reason));
                }
                self.credential = v;
            }
            "tenant_id" => value.clone_into(&mut self.tenant_id),
            "client_id" => value.clone_into(&mut self.client_id),
            "client_secret" => self.client_secret = secret(),
            "authority_host" => value.clone_into(&mut self.authority_host),
            _ => return Err(Self::unknown(name, origin)),
        }
        Ok(())
    }
}

impl AzureConfig {
    /// The defaults with the settings of `file` (if given) and the environment `env` applied,
    /// in that order: what a library user calls to honour the same configuration as the
    /// `taskhub` CLI.
    ///
    /// # Errors
    /// [`AzureConfigError`] naming the option and its source.
    pub fn from_config(
        file: Option<&Path>,
        env: &HashMap<String, String>,
    ) -> Result<Self, AzureConfigError> {
        Self::default().with_sources(file, env)
    }

    /// True if the Entra ID credential is a client secret (`credential = client_secret`, or
    /// unset with a `client_secret`); false for the managed identity.
    #[must_use]
    pub fn uses_client_secret(&self) -> bool {
        match self.credential.as_str() {
            "client_secret" => true,
            "managed_identity" => false,
            _ => self.client_secret.is_some(),
        }
    }

    /// Checks that the account is named: a connection string, or an account name (with a
    /// client secret's tenant, client and secret when the credential is one).
    ///
    /// # Errors
    /// An error naming the missing option.
    pub fn validate(&self) -> Result<(), AzureConfigError> {
        if self.storage_connection_string.is_some() {
            return Ok(());
        }
        if self.storage_account_name.is_empty() {
            return Err(Self::missing(
                "storage_connection_string",
                "must be set when backend = azure (UseDevelopmentStorage=true for a local \
                 Azurite), or azure.storage_account_name with an Entra ID credential",
            ));
        }
        if self.uses_client_secret() {
            for (name, missing) in [
                ("tenant_id", self.tenant_id.is_empty()),
                ("client_id", self.client_id.is_empty()),
                ("client_secret", self.client_secret.is_none()),
            ] {
                if missing {
                    return Err(Self::missing(
                        name,
                        "must be set for a client_secret credential (azure.credential)",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The account these options name: the connection string if set, else the account name
    /// with its Entra ID credential (client secret or managed identity).
    ///
    /// # Errors
    /// [`AzureConfigError`] for a missing option or a malformed connection string or account
    /// name (never showing a key or secret).
    pub fn account(&self) -> Result<StorageAccount, AzureConfigError> {
        self.validate()?;
        let invalid = |name: &str, e: crate::AzureError| {
            let reason = match e {
                crate::AzureError::ConnectionString(why) => why,
                other => other.to_string(),
            };
            Self::invalid(name, "the configuration", reason)
        };
        if let Some(text) = &self.storage_connection_string {
            return StorageAccount::from_connection_string(text.expose())
                .map_err(|e| invalid("storage_connection_string", e));
        }
        let credential = if self.uses_client_secret() {
            Credential::ClientSecret(ClientSecretCredential {
                tenant_id: self.tenant_id.clone(),
                client_id: self.client_id.clone(),
                secret: self
                    .client_secret
                    .clone()
                    .unwrap_or_else(|| SecretText::new("")),
                authority_host: Some(self.authority_host.clone())
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(|| DEFAULT_AUTHORITY_HOST.to_owned()),
            })
        } else {
            let client_id = Some(self.client_id.clone()).filter(|c| !c.is_empty());
            Credential::ManagedIdentity(ManagedIdentityCredential::from_environment(client_id))
        };
        let suffix = Some(self.storage_endpoint_suffix.as_str()).filter(|s| !s.is_empty());
        StorageAccount::with_token_credential(&self.storage_account_name, suffix, credential)
            .map_err(|e| invalid("storage_account_name", e))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn file_then_env_and_the_older_top_level_keys() {
        let dir = std::env::temp_dir().join(format!("taskhub-azure-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("taskhub.toml");
        std::fs::write(
            &file,
            "partition_count = 2\nazure_storage_account_name = \"old\"\nazure_tenant_id = \"t0\"\n[azure]\nstorage_account_name = \"prod1\"\n",
        )
        .unwrap();
        let c = AzureConfig::from_config(Some(&file), &HashMap::new()).unwrap();
        assert_eq!(c.storage_account_name, "prod1", "the table wins");
        assert_eq!(c.tenant_id, "t0");
        let env = HashMap::from([(
            "TASKHUB_AZURE_STORAGE_CONNECTION_STRING".to_owned(),
            "UseDevelopmentStorage=true".to_owned(),
        )]);
        let c = AzureConfig::from_config(Some(&file), &env).unwrap();
        assert!(matches!(
            c.account().unwrap().credential,
            Credential::SharedKey(_)
        ));

        std::fs::write(&file, "[azure]\nbogus = \"x\"\n").unwrap();
        let err = AzureConfig::from_config(Some(&file), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("azure.bogus") && err.contains("unknown option"),
            "{err}"
        );
        let env = HashMap::from([("TASKHUB_AZURE_CREDENTIAL".to_owned(), "pw".to_owned())]);
        let err = AzureConfig::from_config(None, &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("azure.credential") && err.contains("TASKHUB_AZURE_CREDENTIAL"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn validation_names_the_missing_option_and_secrets_are_never_printed() {
        let mut c = AzureConfig::default();
        let err = c.validate().unwrap_err().to_string();
        assert!(err.contains("azure.storage_connection_string"), "{err}");
        c.set("storage_account_name", "prod1", "--set").unwrap();
        c.validate().unwrap();
        assert!(matches!(
            c.account().unwrap().credential,
            Credential::ManagedIdentity(_)
        ));
        c.set("client_secret", "hunter2-secret", "--set").unwrap();
        assert!(c.uses_client_secret());
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("azure.tenant_id"));
        c.set("tenant_id", "t1", "--set").unwrap();
        c.set("client_id", "c1", "--set").unwrap();
        c.set("storage_endpoint_suffix", "core.usgovcloudapi.net", "--set")
            .unwrap();
        let account = c.account().unwrap();
        assert_eq!(
            account.blob_endpoint,
            "https://prod1.blob.core.usgovcloudapi.net"
        );
        match &account.credential {
            Credential::ClientSecret(s) => assert_eq!(s.authority_host, DEFAULT_AUTHORITY_HOST),
            other => panic!("expected a client secret, got {other:?}"),
        }
        c.set("credential", "Managed-Identity", "--set").unwrap();
        assert!(!c.uses_client_secret());
        c.set(
            "storage_connection_string",
            "AccountName=a;AccountKey=c2VjcmV0",
            "--set",
        )
        .unwrap();
        let shown = format!("{c:?} {:?}", c.account().unwrap());
        assert!(
            !shown.contains("hunter2-secret") && !shown.contains("c2VjcmV0"),
            "{shown}"
        );
    }
}
