//! The CLI's own entries in the hub's process registry: `serve` and the gRPC and HTTP
//! endpoints (a worker announces itself), and the wait for a newer build's migration.

use std::time::Duration;

use taskhub::{Announced, ProcessKind, TaskHub, WorkerHandle};
use taskhub_storage::StorageError;

/// The records this process announced beside its worker, if any.
pub(crate) struct Announcements(Vec<Announced>);

impl Announcements {
    /// Announces one record per kind.
    pub(crate) async fn of(hub: &TaskHub, kinds: &[ProcessKind]) -> anyhow::Result<Self> {
        let mut all = Vec::with_capacity(kinds.len());
        for kind in kinds {
            all.push(hub.announce(*kind).await?);
        }
        Ok(Self(all))
    }

    /// Resolves once a heartbeat found the hub migrated by a newer build (never, with no
    /// record): the process then stops rather than answer with errors.
    pub(crate) async fn schema_moved(&self) -> StorageError {
        match self.0.first() {
            Some(first) => first.schema_moved().await,
            None => std::future::pending().await,
        }
    }

    /// Removes the records (a clean stop).
    pub(crate) async fn retire(self) {
        for a in self.0 {
            a.retire().await;
        }
    }
}

/// Resolves with the reason once `worker` halted by itself (the hub moved to a newer
/// build's schema).
pub(crate) async fn worker_halted(hub: &TaskHub, worker: &WorkerHandle) -> String {
    loop {
        if let Some(why) = worker.halted() {
            return why;
        }
        hub.clock().sleep(Duration::from_secs(1)).await;
    }
}
