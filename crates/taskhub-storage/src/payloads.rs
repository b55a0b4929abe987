//! The large-payload store: payloads over the queue and table size limits.

use async_trait::async_trait;
use taskhub_core::InstanceId;

use crate::error::StorageResult;

/// Blob-like storage keyed by instance and name.
///
/// Contract:
/// * `put_payload` MUST overwrite an existing blob of the same key; `get_payload` MUST return
///   exactly the bytes stored, or `None`.
/// * `delete_payloads` MUST delete every blob of the instance and return how many it deleted.
#[async_trait]
pub trait PayloadStore: Send + Sync {
    /// Stores a blob.
    async fn put_payload(
        &self,
        instance: &InstanceId,
        name: &str,
        data: Vec<u8>,
    ) -> StorageResult<()>;
    /// Reads a blob.
    async fn get_payload(
        &self,
        instance: &InstanceId,
        name: &str,
    ) -> StorageResult<Option<Vec<u8>>>;
    /// Deletes every blob of an instance (purge).
    async fn delete_payloads(&self, instance: &InstanceId) -> StorageResult<u64>;
}
