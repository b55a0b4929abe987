//! The Azure backend as a plug-in (`taskhub-backends` registers it as `azure`): its options
//! ([`AzureConfig`]: the `[azure]` table, `TASKHUB_AZURE_*`), and a hub named by the
//! `task_hub_name` setting on the account they name. Errors are one line naming the setting to
//! check: a bad connection string, a bad hub name, an endpoint where nothing answers (with how
//! to start Azurite), a missing hub.

use std::sync::Arc;

use async_trait::async_trait;
use taskhub_storage::backend::{
    Backend, BackendConfig, BackendError, BackendOptions, Deleted, HubLocation, OpenMode,
    OpenedStore, OptionDoc,
};
use taskhub_storage::{Clock, StorageError};

use crate::options::{AzureConfig, AzureConfigError, TABLE};
use crate::{AzureError, AzureOptions, AzureStore, HubName, StorageAccount};

/// How to start a local emulator that `UseDevelopmentStorage=true` reaches.
pub const START_AZURITE: &str = "start one with `npx azurite@3.37.0 --skipApiVersionCheck --location /tmp/azurite` \
     (default ports 10000-10002) and use azure.storage_connection_string = UseDevelopmentStorage=true";

/// The Azure backend's plug-in.
#[derive(Debug, Clone, Copy, Default)]
pub struct AzureBackend;

/// The older top-level spellings of the options, still read.
const TOP_LEVEL_KEYS: [&str; 8] = [
    "azure_storage_connection_string",
    "azure_storage_account_name",
    "azure_storage_endpoint_suffix",
    "azure_credential",
    "azure_tenant_id",
    "azure_client_id",
    "azure_client_secret",
    "azure_authority_host",
];

impl AzureBackend {
    /// The options `config` gives: its defaults, the file, the environment, its overrides.
    ///
    /// # Errors
    /// [`AzureConfigError`] naming the option and its source.
    pub fn config_from(config: &BackendConfig) -> Result<AzureConfig, AzureConfigError> {
        AzureConfig::default().layered(config)
    }
}

impl Backend for AzureBackend {
    fn name(&self) -> &'static str {
        TABLE
    }

    fn summary(&self) -> &'static str {
        "Azure Storage queues, tables and blobs (or Azurite), the hub named by task_hub_name"
    }

    fn options(&self) -> Vec<OptionDoc> {
        AzureConfig::default().docs()
    }

    fn top_level_keys(&self) -> &'static [&'static str] {
        &TOP_LEVEL_KEYS
    }

    fn locate(&self, config: &BackendConfig) -> Result<Box<dyn HubLocation>, BackendError> {
        let account = Self::config_from(config)?.account()?;
        let hub = HubName::new(&config.hub_name).map_err(|e| BackendError::Invalid {
            setting: "task_hub_name".to_owned(),
            origin: "the task_hub_name setting".to_owned(),
            reason: match e {
                AzureError::HubName { name, reason } => format!("{name:?}: {reason}"),
                other => other.to_string(),
            },
        })?;
        Ok(Box::new(AzureHub {
            account,
            hub,
            clock: config.clock.clone(),
        }))
    }
}

/// A hub on a storage account.
struct AzureHub {
    account: StorageAccount,
    hub: HubName,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for AzureHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureHub")
            .field("account", &self.account.name)
            .field("hub", &self.hub)
            .finish_non_exhaustive()
    }
}

impl AzureHub {
    async fn store(&self, create: bool) -> Result<AzureStore, AzureError> {
        let options = AzureOptions {
            account: self.account.clone(),
            hub: self.hub.clone(),
            clock: self.clock.clone(),
        };
        if create {
            AzureStore::create(options).await
        } else {
            AzureStore::open(options).await
        }
    }

    /// One error line naming the setting to check.
    fn error(&self, e: AzureError) -> BackendError {
        match e {
            AzureError::HubNotFound { name } => BackendError::NotFound {
                hub: format!("'{name}' on this storage account"),
                setting: "task_hub_name".to_owned(),
            },
            AzureError::Open(StorageError::Unavailable(e)) => BackendError::Unreachable(format!(
                "no Azure Storage answers (azure.storage_connection_string or azure.storage_account_name): {e}; for a local emulator, {START_AZURITE}"
            )),
            e => BackendError::Open {
                hub: self.describe(),
                reason: e.to_string(),
            },
        }
    }
}

/// True if every endpoint of the account is on this machine (Azurite, not a real account).
fn is_local(account: &StorageAccount) -> bool {
    [
        &account.blob_endpoint,
        &account.queue_endpoint,
        &account.table_endpoint,
    ]
    .iter()
    .all(|e| {
        let host = e
            .split_once("://")
            .map_or(e.as_str(), |(_, rest)| rest)
            .split(['/', ':'])
            .next()
            .unwrap_or("");
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

#[async_trait]
impl HubLocation for AzureHub {
    fn backend(&self) -> &'static str {
        TABLE
    }

    fn place(&self) -> String {
        format!("'{}' on Azure Storage", self.hub)
    }

    fn describe(&self) -> String {
        format!("the task hub '{}' on Azure Storage", self.hub)
    }

    fn contents(&self) -> String {
        "its queues, tables and blob container".to_owned()
    }

    fn is_local(&self) -> bool {
        is_local(&self.account)
    }

    async fn open(&self, mode: OpenMode, instrument: bool) -> Result<OpenedStore, BackendError> {
        let store = self
            .store(mode == OpenMode::CreateIfMissing)
            .await
            .map_err(|e| self.error(e))?;
        Ok(OpenedStore::new(store, instrument))
    }

    async fn delete(&self) -> Result<Deleted, BackendError> {
        let store = match self.store(false).await {
            Ok(store) => store,
            Err(AzureError::HubNotFound { .. }) => {
                return Ok(Deleted {
                    existed: false,
                    note: "new".to_owned(),
                })
            }
            Err(e) => return Err(self.error(e)),
        };
        store.delete_hub().await?;
        Ok(Deleted {
            existed: true,
            note: "deleted its queues, tables and blobs".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use taskhub_storage::backend::OptionValue;

    use super::*;

    #[test]
    fn only_an_emulator_on_this_machine_counts_as_local() {
        let dev = StorageAccount::from_connection_string("UseDevelopmentStorage=true").unwrap();
        assert!(is_local(&dev));
        let azurite = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;\
             BlobEndpoint=http://127.0.0.1:41001/devstoreaccount1;\
             QueueEndpoint=http://127.0.0.1:41002/devstoreaccount1;\
             TableEndpoint=http://127.0.0.1:41003/devstoreaccount1",
        )
        .unwrap();
        assert!(is_local(&azurite));
        let real = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=https;AccountName=prod1;AccountKey=a2V5;EndpointSuffix=core.windows.net",
        )
        .unwrap();
        assert!(!is_local(&real));
    }

    #[test]
    fn locate_names_the_bad_setting() {
        let config = BackendConfig::default();
        let err = AzureBackend.locate(&config).unwrap_err().to_string();
        assert!(err.contains("azure.storage_connection_string"), "{err}");
        let config = BackendConfig {
            defaults: vec![OptionValue::new(
                "azure.storage_connection_string",
                "UseDevelopmentStorage=true",
                "the demo's defaults",
            )],
            hub_name: "my-hub".to_owned(),
            ..BackendConfig::default()
        };
        let err = AzureBackend.locate(&config).unwrap_err().to_string();
        assert!(
            err.contains("task_hub_name") && err.contains("my-hub"),
            "{err}"
        );
        let config = BackendConfig {
            hub_name: "Demo1".to_owned(),
            ..config
        };
        let hub = AzureBackend.locate(&config).unwrap();
        assert!(hub.is_local());
        assert_eq!(hub.place(), "'Demo1' on Azure Storage");
    }
}
