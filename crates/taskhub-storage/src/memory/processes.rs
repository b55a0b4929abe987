//! The process registry in memory: one map, times from the store's clock.

use async_trait::async_trait;

use super::{MemoryStore, Op};
use crate::error::{StorageError, StorageResult};
use crate::processes::{ProcessAnnouncement, ProcessRecord, ProcessStore};

/// The schema version of the memory backend (it has no stored schema; tests move it with
/// [`MemoryStore::set_stored_schema`]).
pub const MEMORY_SCHEMA_VERSION: u32 = 1;

#[async_trait]
impl ProcessStore for MemoryStore {
    fn schema_supported(&self) -> u32 {
        MEMORY_SCHEMA_VERSION
    }

    async fn announce_process(
        &self,
        process: &ProcessAnnouncement,
    ) -> StorageResult<ProcessRecord> {
        let call = self.enter(Op::AnnounceProcess).await?;
        let now = self.shared.clock.now();
        let record = ProcessRecord {
            id: process.id.clone(),
            kind: process.kind,
            host: process.host.clone(),
            pid: process.pid,
            schema_version: MEMORY_SCHEMA_VERSION,
            build_version: process.build_version.clone(),
            started_at: now,
            heartbeat_at: now,
        };
        self.state()
            .processes
            .insert(record.id.clone(), record.clone());
        call.finish(Ok(record))
    }

    async fn heartbeat_process(&self, id: &str) -> StorageResult<ProcessRecord> {
        let call = self.enter(Op::HeartbeatProcess).await?;
        let now = self.shared.clock.now();
        let mut state = self.state();
        let found = state.stored_schema.unwrap_or(MEMORY_SCHEMA_VERSION);
        let result = match state.processes.get_mut(id) {
            _ if found > MEMORY_SCHEMA_VERSION => Err(StorageError::NewerSchema {
                what: "memory hub".into(),
                found,
                supported: MEMORY_SCHEMA_VERSION,
            }),
            Some(record) => {
                record.heartbeat_at = now;
                Ok(record.clone())
            }
            None => Err(StorageError::NotFound {
                what: format!("process {id:?}"),
            }),
        };
        drop(state);
        call.finish(result)
    }

    async fn list_processes(&self) -> StorageResult<Vec<ProcessRecord>> {
        let call = self.enter(Op::ListProcesses).await?;
        let all = self.state().processes.values().cloned().collect();
        call.finish(Ok(all))
    }

    async fn forget_process(&self, id: &str) -> StorageResult<bool> {
        let call = self.enter(Op::ForgetProcess).await?;
        let existed = self.state().processes.remove(id).is_some();
        call.finish(Ok(existed))
    }

    async fn stored_schema(&self) -> StorageResult<u32> {
        let call = self.enter(Op::StoredSchema).await?;
        let version = self.state().stored_schema.unwrap_or(MEMORY_SCHEMA_VERSION);
        call.finish(Ok(version))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use std::sync::Arc;

    use super::*;
    use crate::processes::{check_schema, ProcessKind};
    use crate::ManualClock;
    use taskhub_core::Timestamp;

    #[tokio::test]
    async fn a_heartbeat_after_a_newer_builds_migration_says_so() {
        let store = MemoryStore::new(Arc::new(ManualClock::new(Timestamp::from_millis(0))));
        let me = ProcessAnnouncement {
            id: "p".into(),
            kind: ProcessKind::Worker,
            host: "h".into(),
            pid: 1,
            build_version: "1.0.0".into(),
        };
        store.announce_process(&me).await.unwrap();
        check_schema(&store, "memory hub").await.unwrap();
        store.set_stored_schema(MEMORY_SCHEMA_VERSION + 1);
        let err = store.heartbeat_process("p").await.unwrap_err();
        assert!(
            matches!(err, StorageError::NewerSchema { found, supported, .. }
                if found == MEMORY_SCHEMA_VERSION + 1 && supported == MEMORY_SCHEMA_VERSION),
            "{err:?}"
        );
        assert!(err.to_string().contains("newer build"), "{err}");
        assert!(check_schema(&store, "memory hub").await.is_err());
    }
}
