//! The conformance suite on queues that are not FIFO (a memory store whose dequeues hand out
//! the newest messages first, as Azure Storage queues may): no case depends on the order of
//! dequeues across messages, which the queue contract does not promise.
#![cfg(feature = "testing")]

use std::sync::Arc;

use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{ManualClock, TaskHubStore};

async fn newest_first(clock: ManualClock) -> Arc<dyn TaskHubStore> {
    Arc::new(MemoryStore::newest_first(Arc::new(clock)))
}

taskhub_storage::conformance_tests!(newest_first);
