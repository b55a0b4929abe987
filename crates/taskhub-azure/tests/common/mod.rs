//! Test support: a fresh hub (its own name) on the account the test environment names.

#![allow(dead_code, reason = "not every test binary uses every helper")]
#![allow(
    clippy::expect_used,
    reason = "test support: a failed expectation is the point"
)]

use std::sync::Arc;

use taskhub_azure::{AzureOptions, AzureStore, HubName, StorageAccount};
use taskhub_storage::{Clock, ManualClock, TaskHubStore};

/// Event `e{i}` raised with input `i`, `i` ms after `start`.
pub fn raised_event(start: taskhub_core::Timestamp, i: u64) -> taskhub_core::HistoryEvent {
    taskhub_core::HistoryEvent::new(
        taskhub_core::Timestamp::from_millis(start.as_millis() + i),
        taskhub_core::EventKind::EventRaised {
            name: format!("e{i}"),
            input: taskhub_core::Payload::from_json(i.to_string()).expect("a JSON number"),
        },
    )
}

/// A checkpoint of `id` that appends `events` to execution `e1` (a new one when `expected`
/// is `None`) and writes nothing else.
pub fn history_checkpoint(
    id: &taskhub_core::InstanceId,
    expected: Option<taskhub_storage::ETag>,
    events: Vec<taskhub_core::HistoryEvent>,
) -> taskhub_storage::CheckpointRequest {
    taskhub_storage::CheckpointRequest {
        instance_id: id.clone(),
        fence: None,
        history: Some(taskhub_storage::HistoryWrite {
            execution_id: taskhub_core::ExecutionId::new("e1").expect("a valid execution ID"),
            new_execution: expected.is_none(),
            expected,
            events,
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// A row of instance `id` of orchestration `name` in `status` (execution `e1`, partition 0,
/// no input), created and updated at `at`.
pub fn instance_row(
    id: &taskhub_core::InstanceId,
    name: &str,
    status: taskhub_core::OrchestrationStatus,
    at: taskhub_core::Timestamp,
) -> taskhub_storage::InstanceRow {
    let execution = taskhub_core::ExecutionId::new("e1").expect("a valid execution ID");
    taskhub_storage::InstanceRow {
        status,
        ..taskhub_storage::InstanceRow::new(id.clone(), name, execution, at)
    }
}

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
