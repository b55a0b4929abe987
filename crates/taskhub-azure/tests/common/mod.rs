//! Test support: a fresh hub (its own name) on the account the test environment names.

#![allow(dead_code, reason = "not every test binary uses every helper")]
#![allow(
    clippy::expect_used,
    reason = "test support: a failed expectation is the point"
)]

use std::sync::Arc;

use taskhub_azure::{AzureOptions, AzureStore, HubName, StorageAccount};
use taskhub_storage::{Clock, ManualClock, TaskHubStore};

/// The test account; panics with how to run the tests when the variable is unset.
pub fn account() -> StorageAccount {
    StorageAccount::from_connection_string(&connection_string())
        .expect("a valid test connection string")
}

/// The test account's connection string; panics with how to run the tests when it is unset.
pub fn connection_string() -> String {
    taskhub_test_support::env::azure_connection_string("cargo test -p taskhub-azure")
}

/// A hub name no other test uses.
pub fn unique_hub() -> HubName {
    let id = uuid::Uuid::new_v4().simple().to_string();
    HubName::new(&format!("t{}", &id[..20])).expect("a valid hub name")
}

/// A fresh, empty hub with a name of its own on `account`, its store's timestamps from
/// `clock`.
pub async fn create_store(account: StorageAccount, clock: Arc<dyn Clock>) -> AzureStore {
    AzureStore::create(AzureOptions {
        account,
        hub: unique_hub(),
        clock,
    })
    .await
    .expect("open a fresh hub on the test account")
}

/// A fresh, empty hub on the test account.
pub async fn fresh_store(clock: ManualClock) -> Arc<dyn TaskHubStore> {
    Arc::new(create_store(account(), Arc::new(clock)).await)
}
