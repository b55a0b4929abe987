//! The large-payload store: blobs keyed by instance and name.

use async_trait::async_trait;
use taskhub_core::InstanceId;
use taskhub_storage::{PayloadStore, StorageResult};

use crate::errors::PgResultExt;
use crate::store::PostgresStore;

const WHAT: &str = "payloads";

#[async_trait]
impl PayloadStore for PostgresStore {
    async fn put_payload(
        &self,
        instance: &InstanceId,
        name: &str,
        data: Vec<u8>,
    ) -> StorageResult<()> {
        let (client, stmt) = self
            .prepared(
                WHAT,
                "INSERT INTO payloads (instance_id, name, data) VALUES ($1, $2, $3)
                 ON CONFLICT (instance_id, name) DO UPDATE SET data = excluded.data",
            )
            .await?;
        client
            .execute(&stmt, &[&instance.as_str(), &name, &data])
            .await
            .ctx(WHAT)?;
        Ok(())
    }

    async fn get_payload(
        &self,
        instance: &InstanceId,
        name: &str,
    ) -> StorageResult<Option<Vec<u8>>> {
        let (client, stmt) = self
            .prepared(
                WHAT,
                "SELECT data FROM payloads WHERE instance_id = $1 AND name = $2",
            )
            .await?;
        let row = client
            .query_opt(&stmt, &[&instance.as_str(), &name])
            .await
            .ctx(WHAT)?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn delete_payloads(&self, instance: &InstanceId) -> StorageResult<u64> {
        let (client, stmt) = self
            .prepared(WHAT, "DELETE FROM payloads WHERE instance_id = $1")
            .await?;
        client.execute(&stmt, &[&instance.as_str()]).await.ctx(WHAT)
    }
}
