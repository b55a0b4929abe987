//! Fault injection for tests of code above the seam (feature `testing`): damage that only a
//! broken store or a buggy writer could cause, made on purpose so a runtime test can check that
//! it is handled (a message whose processing fails on every delivery is dead-lettered).

use taskhub_core::InstanceId;
use taskhub_storage::backend::{OpenedStore, OptionValue};
use taskhub_storage::test_hub::server_variable;
use taskhub_storage::{StorageError, StorageResult};

use crate::history::{event_key, SentinelState};
use crate::tables::{entity, Row};
use crate::{AzureBackend, AzureStore};

/// The variable naming the account the tests put their hubs on (Azurite), exported by
/// `scripts/with-azurite.sh`.
pub const TEST_CONNECTION_STRING: &str = "TASKHUB_TEST_AZURE_CONNECTION_STRING";

impl AzureBackend {
    /// A hub opened again by its name on the account is the same hub.
    pub const TEST_HUBS_SHARED: bool = true;

    /// The options of a test's fresh hub: the hub `hub_name` on the test account
    /// ([`TEST_CONNECTION_STRING`]; `dir` is not used).
    ///
    /// # Panics
    /// When the variable is unset, saying how to run the test.
    #[must_use]
    pub fn test_hub_options(_dir: &std::path::Path, _hub_name: &str) -> Vec<OptionValue> {
        let text = server_variable(
            TEST_CONNECTION_STRING,
            "Azurite (a private one on free ports)",
            "scripts/with-azurite.sh",
        );
        vec![OptionValue::new(
            "azure.storage_connection_string",
            text,
            TEST_CONNECTION_STRING,
        )]
    }

    /// [`AzureStore::corrupt_history_event`] on the Azure store `opened` holds.
    ///
    /// # Errors
    /// `InvalidArgument` if `opened` is not an Azure store; as the hook.
    pub async fn corrupt_history_event(
        opened: &OpenedStore,
        id: &InstanceId,
        seq: u64,
    ) -> StorageResult<()> {
        opened
            .require::<AzureStore>("an Azure store")?
            .corrupt_history_event(id, seq)
            .await
    }
}

impl AzureStore {
    /// The sentinel row of the instance's history and the state it holds.
    ///
    /// # Errors
    /// `NotFound` if the instance has no history.
    async fn sentinel_and_state(
        &self,
        instance: &InstanceId,
    ) -> StorageResult<(Row, SentinelState)> {
        let sentinel = self
            .sentinel(instance)
            .await?
            .ok_or_else(|| StorageError::NotFound {
                what: format!("history of '{instance}'"),
            })?;
        let state = self.sentinel_state(&sentinel).await?;
        Ok((sentinel, state))
    }

    /// The RowKey of event `seq` of the instance's current execution.
    async fn current_event_key(&self, instance: &InstanceId, seq: u64) -> StorageResult<String> {
        let (_, state) = self.sentinel_and_state(instance).await?;
        Ok(event_key(state.generation, seq, state.token_of(seq)))
    }

    /// Overwrites the stored event `seq` of the instance's current execution with text that is
    /// not an event, so every later load of its history fails as corrupt.
    pub async fn corrupt_history_event(
        &self,
        instance: &InstanceId,
        seq: u64,
    ) -> StorageResult<()> {
        let key = self.current_event_key(instance, seq).await?;
        let row = entity(
            instance.as_str(),
            &key,
            &[("Event", "{\"v\":1,\"garbage".to_owned())],
        );
        self.tables
            .merge(&self.names.history, &row, Some("*"))
            .await
            .map(|_| ())
    }

    /// Deletes the stored row of event `seq` of the instance's current execution, as a purge
    /// cut short (or another clean-up) leaves a partition with some rows already gone.
    pub async fn delete_history_event(&self, instance: &InstanceId, seq: u64) -> StorageResult<()> {
        let key = self.current_event_key(instance, seq).await?;
        self.tables
            .delete(&self.names.history, instance.as_str(), &key)
            .await
            .map(|_| ())
    }

    /// Writes the hub's layout version as another build would: `Some(n)` as a build of
    /// layout `n` records it (a newer build's migration), `None` as a build from before
    /// layout versions rewrites the info row (without the property: layout 1).
    pub async fn set_stored_layout(&self, layout: Option<u32>) -> StorageResult<()> {
        let (pk, rk) = ("hub", "info");
        let row = self.info_row().await?;
        let mut props: Vec<(&str, String)> = ["PartitionCount", "CreatedAt", "Prohibited"]
            .into_iter()
            .map(|name| (name, row.str(name).to_owned()))
            .collect();
        if let Some(n) = layout {
            props.push(("Layout", crate::store::num(u64::from(n))));
        }
        self.tables
            .replace(&self.names.partitions, &entity(pk, rk, &props), None)
            .await
            .map(|_| ())
    }

    /// Makes the next `n` checkpoints fail their step 5 (clearing the pending outbox), as a
    /// lost answer or a crash right there would.
    pub fn fail_next_outbox_clears(&self, n: u64) {
        self.inject_clear_failures
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many rows the instance's History partition holds (events of every execution, rows
    /// written ahead of a commit that never came, the sentinel), and how many blobs its
    /// history has: to see what a torn checkpoint left behind.
    pub async fn history_footprint(&self, instance: &InstanceId) -> StorageResult<(usize, usize)> {
        let filter = format!("PartitionKey eq {}", crate::tables::lit(instance.as_str()));
        let rows = self.tables.query_all(&self.names.history, &filter).await?;
        let blobs = self.blobs.list(&format!("history/{instance}/")).await?;
        Ok((rows.len(), blobs.len()))
    }

    /// The blobs of an instance's row data (`instances/<id>/…`): one while its row is over the
    /// property limit, none once it is inline again or deleted.
    pub async fn instance_blobs(&self, instance: &InstanceId) -> StorageResult<Vec<String>> {
        self.blobs.list(&format!("instances/{instance}/")).await
    }
}

impl AzureStore {
    /// The blobs of an instance's pending outboxes (`outbox/<id>/…`): none once every outbox
    /// over the inline limit has been cleared or replaced.
    pub async fn outbox_blobs(&self, instance: &InstanceId) -> StorageResult<Vec<String>> {
        self.blobs.list(&format!("outbox/{instance}/")).await
    }

    /// Makes the next `n` commits skip the clean-up that follows them (deleting the previous
    /// execution's rows and blobs), as a crash right after the commit would.
    pub fn skip_next_collections(&self, n: u64) {
        self.inject_skip_collections
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// Pads the `Spans` of the instance's history sentinel with entries that change nothing
    /// (spans from sequence 0, shadowed by the real ones that follow them) until its JSON is at
    /// least `chars` long: the sentinel as about a thousand checkpoints of over 99 events each
    /// leave it, without writing them all.
    pub async fn pad_history_spans(
        &self,
        instance: &InstanceId,
        chars: usize,
    ) -> StorageResult<()> {
        let (sentinel, state) = self.sentinel_and_state(instance).await?;
        let real = serde_json::to_string(&state.spans).unwrap_or_default();
        let filler = "[0,\"ffffffff\"],".len();
        let n = chars.saturating_sub(real.len()) / filler + 1;
        let mut spans: Vec<(u64, String)> = vec![(0, "ffffffff".to_owned()); n];
        spans.extend(state.spans);
        let row = entity(
            instance.as_str(),
            crate::history::SENTINEL,
            &[
                ("Spans", serde_json::to_string(&spans).unwrap_or_default()),
                ("SpansBlob", String::new()),
            ],
        );
        self.tables
            .merge(&self.names.history, &row, Some(&sentinel.etag))
            .await
            .map(|_| ())
    }
}
