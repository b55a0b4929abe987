//! Opening a task hub on Azure Storage (`backend = azure`): one clear error line naming the
//! setting for a bad connection string, a bad hub name, a wrong key, an endpoint where nothing
//! answers (with how to start Azurite), or a missing hub.

use std::sync::Arc;

use anyhow::bail;
use taskhub::{Settings, TaskHub};
use taskhub_azure::{AzureError, AzureOptions, AzureStore, HubName, StorageAccount};
use taskhub_storage::{PartitionStore, StorageError, SystemClock};

/// How to start a local emulator that `UseDevelopmentStorage=true` reaches.
pub const START_AZURITE: &str = "start one with `npx azurite@3.37.0 --skipApiVersionCheck --location /tmp/azurite` \
     (default ports 10000-10002) and use azure_storage_connection_string = UseDevelopmentStorage=true";

/// Opens the store of the hub the settings name.
pub async fn open_store(settings: &Settings) -> anyhow::Result<AzureStore> {
    let account =
        StorageAccount::from_connection_string(settings.azure_storage_connection_string.expose())?;
    let hub = HubName::new(&settings.task_hub_name)?;
    let name = hub.to_string();
    match AzureStore::open(AzureOptions {
        account,
        hub,
        clock: Arc::new(SystemClock::new()),
    })
    .await
    {
        Ok(store) => Ok(store),
        Err(AzureError::Open(StorageError::Unavailable(e))) => bail!(
            "no Azure Storage answers (azure_storage_connection_string): {e}; for a local emulator, {START_AZURITE}"
        ),
        Err(e) => bail!("cannot open task hub '{name}' on Azure Storage: {e}"),
    }
}

/// Opens the task hub on Azure Storage; with `must_exist`, a hub that was never created is an
/// error instead of a new one.
pub async fn open_hub(settings: Settings, must_exist: bool) -> anyhow::Result<TaskHub> {
    let store = open_store(&settings).await?;
    let name = settings.task_hub_name.clone();
    if must_exist && store.hub_info().await?.is_none() {
        bail!(
            "no task hub '{name}' on this storage account (task_hub_name); create it with `taskhub worker --backend azure`"
        );
    }
    Ok(TaskHub::open(Arc::new(store), settings).await?)
}

/// Deletes the hub the settings name, saying so (the demo's fresh start).
pub async fn fresh_hub(settings: &Settings) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    store.delete_hub().await?;
    crate::outln!(
        "Demo task hub: '{}' on Azure Storage (started fresh: deleted its queues, tables and blobs)",
        settings.task_hub_name
    );
    Ok(())
}
