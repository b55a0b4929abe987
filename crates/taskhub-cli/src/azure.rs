//! Opening a task hub on Azure Storage (`backend = azure`): one clear error line naming the
//! setting for a bad connection string, a bad hub name, a wrong key, an endpoint where nothing
//! answers (with how to start Azurite), or a missing hub.

use std::sync::Arc;

use anyhow::bail;
use taskhub::{Settings, TaskHub};
use taskhub_azure::credential::DEFAULT_AUTHORITY_HOST;
use taskhub_azure::{
    AzureError, AzureOptions, AzureStore, ClientSecretCredential, Credential, HubName,
    ManagedIdentityCredential, SecretText, StorageAccount,
};
use taskhub_storage::{PartitionStore, StorageError, SystemClock};

/// How to start a local emulator that `UseDevelopmentStorage=true` reaches.
pub const START_AZURITE: &str = "start one with `npx azurite@3.37.0 --skipApiVersionCheck --location /tmp/azurite` \
     (default ports 10000-10002) and use azure_storage_connection_string = UseDevelopmentStorage=true";

/// The account the settings name: a connection string, or else an account name with an
/// Entra ID credential (client secret or managed identity).
pub fn account(settings: &Settings) -> anyhow::Result<StorageAccount> {
    if !settings.azure_storage_connection_string.is_empty()
        || settings.azure_storage_account_name.is_empty()
    {
        return Ok(StorageAccount::from_connection_string(
            settings.azure_storage_connection_string.expose(),
        )?);
    }
    let client_id = Some(settings.azure_client_id.clone()).filter(|c| !c.is_empty());
    let credential = if settings.uses_client_secret() {
        Credential::ClientSecret(ClientSecretCredential {
            tenant_id: settings.azure_tenant_id.clone(),
            client_id: settings.azure_client_id.clone(),
            secret: SecretText::new(settings.azure_client_secret.expose()),
            authority_host: Some(settings.azure_authority_host.clone())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| DEFAULT_AUTHORITY_HOST.to_owned()),
        })
    } else {
        Credential::ManagedIdentity(ManagedIdentityCredential::from_environment(client_id))
    };
    let suffix = Some(settings.azure_storage_endpoint_suffix.as_str()).filter(|s| !s.is_empty());
    Ok(StorageAccount::with_token_credential(
        &settings.azure_storage_account_name,
        suffix,
        credential,
    )?)
}

/// Opens the store of the hub the settings name; with `create`, creates its tables and
/// container if missing (workers, the demo, a start), else a missing hub is an error that
/// creates nothing.
pub async fn open_store(settings: &Settings, create: bool) -> anyhow::Result<AzureStore> {
    match try_open_store(settings, create).await? {
        Ok(store) => Ok(store),
        Err(e) => Err(open_error(settings, e)),
    }
}

/// [`open_store`] with the library's error, for callers that handle some of them.
async fn try_open_store(
    settings: &Settings,
    create: bool,
) -> anyhow::Result<Result<AzureStore, AzureError>> {
    let options = AzureOptions {
        account: account(settings)?,
        hub: HubName::new(&settings.task_hub_name)?,
        clock: Arc::new(SystemClock::new()),
    };
    Ok(if create {
        AzureStore::create(options).await
    } else {
        AzureStore::open(options).await
    })
}

/// One error line naming the setting to check.
fn open_error(settings: &Settings, e: AzureError) -> anyhow::Error {
    match e {
        AzureError::Open(StorageError::Unavailable(e)) => anyhow::anyhow!(
            "no Azure Storage answers (azure_storage_connection_string or azure_storage_account_name): {e}; for a local emulator, {START_AZURITE}"
        ),
        e @ (AzureError::HubNotFound { .. } | AzureError::HubNameCase { .. }) => e.into(),
        e => anyhow::anyhow!(
            "cannot open task hub '{}' on Azure Storage: {e}",
            settings.task_hub_name
        ),
    }
}

/// Opens the task hub on Azure Storage; with `must_exist`, a hub that was never created is an
/// error instead of a new one (and nothing is created).
pub async fn open_hub(settings: Settings, must_exist: bool) -> anyhow::Result<TaskHub> {
    let store = open_store(&settings, !must_exist).await?;
    let name = settings.task_hub_name.clone();
    if must_exist && store.hub_info().await?.is_none() {
        bail!(
            "no task hub '{name}' on this storage account (task_hub_name); create it with `taskhub worker --backend azure`"
        );
    }
    Ok(TaskHub::open(crate::metrics::store(store), settings).await?)
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

/// Deletes the hub the settings name, saying so (the demo's fresh start). On a real account
/// (not an emulator on this machine) a hub that has instances is deleted only with
/// `allow_real` (the demo's `--fresh`): the demo must never wipe a user's hub by surprise.
pub async fn fresh_hub(settings: &Settings, allow_real: bool) -> anyhow::Result<()> {
    let account = account(settings)?;
    let local = is_local(&account);
    let store = match try_open_store(settings, false).await? {
        Ok(store) => store,
        Err(AzureError::HubNotFound { .. }) => {
            crate::outln!(
                "Demo task hub: '{}' on Azure Storage (new)",
                settings.task_hub_name
            );
            return Ok(());
        }
        Err(e) => return Err(open_error(settings, e)),
    };
    if !local && !allow_real {
        use taskhub_storage::{InstanceQuery, InstanceStore as _};
        let page = store
            .list_instances(&InstanceQuery {
                page_size: 1,
                include_entities: true,
                ..InstanceQuery::default()
            })
            .await?;
        if !page.instances.is_empty() {
            bail!(
                "the demo starts on a fresh hub and would delete the task hub '{}' on the account \
                 '{}', which has instances: name another hub (task_hub_name), or pass --fresh to \
                 delete it",
                settings.task_hub_name,
                account.name
            );
        }
    }
    store.delete_hub().await?;
    crate::outln!(
        "Demo task hub: '{}' on Azure Storage (started fresh: deleted its queues, tables and blobs)",
        settings.task_hub_name
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

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
    fn settings_choose_the_credential() {
        let mut s = Settings::default();
        s.set(
            "azure_storage_connection_string",
            "UseDevelopmentStorage=true",
        )
        .unwrap();
        s.set("azure_storage_account_name", "prod1").unwrap();
        assert!(matches!(
            account(&s).unwrap().credential,
            Credential::SharedKey(_)
        ));
        s.set("azure_storage_connection_string", "").unwrap();
        let mi = account(&s).unwrap();
        assert_eq!(mi.queue_endpoint, "https://prod1.queue.core.windows.net");
        assert!(matches!(mi.credential, Credential::ManagedIdentity(_)));
        for (k, v) in [
            ("azure_tenant_id", "t1"),
            ("azure_client_id", "c1"),
            ("azure_client_secret", "top-secret"),
            ("azure_storage_endpoint_suffix", "core.usgovcloudapi.net"),
        ] {
            s.set(k, v).unwrap();
        }
        let sp = account(&s).unwrap();
        assert_eq!(
            sp.blob_endpoint,
            "https://prod1.blob.core.usgovcloudapi.net"
        );
        match &sp.credential {
            Credential::ClientSecret(c) => {
                assert_eq!((c.tenant_id.as_str(), c.client_id.as_str()), ("t1", "c1"));
                assert_eq!(c.authority_host, DEFAULT_AUTHORITY_HOST);
            }
            other => panic!("expected a client secret, got {other:?}"),
        }
        assert!(!format!("{sp:?}").contains("top-secret"));
    }
}
