//! Large payloads: blobs `payloads/<instance>/<name>` in `<hub>-largemessages`.

use async_trait::async_trait;
use taskhub_core::InstanceId;
use taskhub_storage::{PayloadStore, StorageResult};

use crate::store::AzureStore;

fn prefix(instance: &InstanceId) -> String {
    format!("payloads/{instance}/")
}

#[async_trait]
impl PayloadStore for AzureStore {
    async fn put_payload(
        &self,
        instance: &InstanceId,
        name: &str,
        data: Vec<u8>,
    ) -> StorageResult<()> {
        self.blobs
            .put(&format!("{}{name}", prefix(instance)), data)
            .await
    }

    async fn get_payload(
        &self,
        instance: &InstanceId,
        name: &str,
    ) -> StorageResult<Option<Vec<u8>>> {
        self.blobs.get(&format!("{}{name}", prefix(instance))).await
    }

    async fn delete_payloads(&self, instance: &InstanceId) -> StorageResult<u64> {
        self.blobs.delete_prefix(&prefix(instance)).await
    }
}
