//! Deleting a whole task hub (the demo's fresh start; tests), and listing what an account
//! holds.

use taskhub_storage::{QueueName, StorageError, StorageResult, MAX_PARTITIONS};

use crate::http::{status_error, Req, Service};
use crate::store::AzureStore;
use crate::xml;

/// Every table, queue and blob container of a storage account, by name (sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountObjects {
    /// Table names.
    pub tables: Vec<String>,
    /// Queue names.
    pub queues: Vec<String>,
    /// Blob container names.
    pub containers: Vec<String>,
}

impl AzureStore {
    /// Deletes every object of the hub: its blob container, queues and tables. Missing ones
    /// are fine. The store is unusable afterwards ([`create`](Self::create) the hub again).
    /// Azurite deletes at once; real Azure Storage keeps a deleted name for a while
    /// (409 TableBeingDeleted and the like), which [`create`](Self::create) waits out.
    ///
    /// # Errors
    /// The first storage error.
    pub async fn delete_hub(&self) -> StorageResult<()> {
        // The container first: it is what marks the hub as existing, so a deletion cut short
        // leaves a hub that `open` reports missing (and `create` completes again).
        let container = self.blobs.name.clone();
        self.delete(
            Service::Blob,
            format!("/{container}"),
            Some(("restype", "container")),
            &container,
        )
        .await?;
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
        Ok(())
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

    /// Lists every table, queue and container of the account (of every hub on it), following
    /// continuation tokens: for diagnostics, and for tests that check what opening a hub
    /// creates.
    ///
    /// # Errors
    /// The first storage error.
    pub async fn account_objects(&self) -> StorageResult<AccountObjects> {
        let mut out = AccountObjects::default();
        let mut next = String::new();
        loop {
            let mut req = Req::new(Service::Table, "GET", "/Tables".to_owned())
                .header("accept", "application/json;odata=nometadata");
            if !next.is_empty() {
                req = req.query("NextTableName", next.clone());
            }
            let resp = self.http.send(&req).await?;
            if !resp.ok() {
                return Err(status_error(&resp, "the list of tables"));
            }
            let value: serde_json::Value =
                serde_json::from_slice(&resp.body).map_err(|e| StorageError::Corrupt {
                    what: "the list of tables".to_owned(),
                    detail: e.to_string(),
                })?;
            if let Some(items) = value.get("value").and_then(|v| v.as_array()) {
                out.tables.extend(
                    items
                        .iter()
                        .filter_map(|t| t.get("TableName").and_then(|n| n.as_str()))
                        .map(str::to_owned),
                );
            }
            match resp.header("x-ms-continuation-nexttablename") {
                Some(n) if !n.is_empty() => next = n.to_owned(),
                _ => break,
            }
        }
        out.queues = self.list_xml(Service::Queue, "Queue").await?;
        out.containers = self.list_xml(Service::Blob, "Container").await?;
        out.tables.sort();
        out.queues.sort();
        out.containers.sort();
        Ok(out)
    }

    /// The names of a `comp=list` listing (queues or containers), following `NextMarker`.
    async fn list_xml(&self, service: Service, element: &str) -> StorageResult<Vec<String>> {
        let mut names = Vec::new();
        let mut marker = String::new();
        loop {
            let mut req = Req::new(service, "GET", "/".to_owned()).query("comp", "list");
            if !marker.is_empty() {
                req = req.query("marker", marker.clone());
            }
            let resp = self.http.send(&req).await?;
            if !resp.ok() {
                return Err(status_error(&resp, &format!("the list of {element}s")));
            }
            let text = resp.text();
            for item in xml::elements(&text, element) {
                if let Some(name) = xml::first(item, "Name") {
                    names.push(name);
                }
            }
            match xml::first(&text, "NextMarker") {
                Some(m) if !m.is_empty() => marker = m,
                _ => return Ok(names),
            }
        }
    }
}
