//! Deleting a whole task hub (the demo's fresh start; tests).

use taskhub_storage::{QueueName, StorageResult, MAX_PARTITIONS};

use crate::http::{status_error, Req, Service};
use crate::store::AzureStore;

impl AzureStore {
    /// Deletes every object of the hub: its queues, tables and blob container. Missing ones
    /// are fine. The store is unusable afterwards (open the hub again to re-create it).
    /// Azurite deletes at once; real Azure Storage keeps a deleted table's name for a while
    /// (re-creating it fails with 409 meanwhile), so use a new hub name there instead.
    ///
    /// # Errors
    /// The first storage error.
    pub async fn delete_hub(&self) -> StorageResult<()> {
        let mut queues: Vec<QueueName> = (0..MAX_PARTITIONS).map(QueueName::Control).collect();
        queues.push(QueueName::WorkItems);
        for q in queues {
            let name = self.queue_name(q)?;
            self.delete(Service::Queue, format!("/{name}"), None, &name)
                .await?;
        }
        for table in [
            &self.names.history,
            &self.names.instances,
            &self.names.partitions,
            &self.names.dead_letters,
        ] {
            self.delete(Service::Table, format!("/Tables('{table}')"), None, table)
                .await?;
        }
        let container = self.blobs.name.clone();
        self.delete(
            Service::Blob,
            format!("/{container}"),
            Some(("restype", "container")),
            &container,
        )
        .await
    }

    async fn delete(
        &self,
        service: Service,
        path: String,
        query: Option<(&'static str, &'static str)>,
        what: &str,
    ) -> StorageResult<()> {
        let mut req = Req::new(service, "DELETE", path);
        if let Some((k, v)) = query {
            req = req.query(k, v);
        }
        if service == Service::Table {
            req = req.header("accept", "application/json;odata=nometadata");
        }
        let resp = self.http.send(&req).await?;
        if resp.ok() || resp.status == 404 {
            Ok(())
        } else {
            Err(status_error(&resp, what))
        }
    }
}
