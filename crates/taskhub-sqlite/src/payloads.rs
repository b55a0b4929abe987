//! The large-payload store: blobs keyed by instance and name.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};
use taskhub_core::InstanceId;
use taskhub_storage::{PayloadStore, StorageResult};

use crate::errors::SqlResultExt;
use crate::store::SqliteStore;

const WHAT: &str = "payloads";

#[async_trait]
impl PayloadStore for SqliteStore {
    async fn put_payload(
        &self,
        instance: &InstanceId,
        name: &str,
        data: Vec<u8>,
    ) -> StorageResult<()> {
        let instance = instance.clone();
        let name = name.to_owned();
        self.write(move |tx| {
            tx.conn
                .prepare_cached(
                    "INSERT INTO payloads (instance_id, name, data) VALUES (?1, ?2, ?3)
                     ON CONFLICT (instance_id, name) DO UPDATE SET data = excluded.data",
                )
                .and_then(|mut s| s.execute(params![instance.as_str(), name, data]))
                .ctx(WHAT)?;
            Ok(())
        })
        .await
    }

    async fn get_payload(
        &self,
        instance: &InstanceId,
        name: &str,
    ) -> StorageResult<Option<Vec<u8>>> {
        let instance = instance.clone();
        let name = name.to_owned();
        self.read(move |tx| {
            tx.prepare_cached("SELECT data FROM payloads WHERE instance_id = ?1 AND name = ?2")
                .and_then(|mut s| {
                    s.query_row(params![instance.as_str(), name], |r| r.get(0))
                        .optional()
                })
                .ctx(WHAT)
        })
        .await
    }

    async fn delete_payloads(&self, instance: &InstanceId) -> StorageResult<u64> {
        let sql = "DELETE FROM payloads WHERE instance_id = ?1";
        let n = self.delete_rows_of(WHAT, sql, instance).await?;
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }
}
