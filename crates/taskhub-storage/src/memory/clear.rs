//! Emptying the hub: one critical section over every table, queue and blob but the hub info
//! and the partitions. The counters that make ETags, receipts and dead-letter IDs stay.

use async_trait::async_trait;

use super::{MemoryStore, Op};
use crate::clear::{ClearStore, Cleared};
use crate::error::StorageResult;

#[async_trait]
impl ClearStore for MemoryStore {
    async fn clear_hub(&self) -> StorageResult<Cleared> {
        let call = self.enter(Op::ClearHub).await?;
        let mut state = self.state();
        let cleared = Cleared {
            instances: state.instances.len() as u64,
            histories: state.history.len() as u64,
            messages: state.queues.values_mut().map(|q| q.clear()).sum(),
            payloads: state.payloads.len() as u64,
            dead_letters: state.dead_letters.len() as u64,
        };
        state.instances.clear();
        state.history.clear();
        state.payloads.clear();
        state.dead_letters.clear();
        drop(state);
        call.finish(Ok(cleared))
    }
}
