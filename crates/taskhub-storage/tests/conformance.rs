//! The conformance suite on the memory backend.

use std::sync::Arc;

use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{ManualClock, TaskHubStore};

async fn make_store(clock: ManualClock) -> Arc<dyn TaskHubStore> {
    Arc::new(MemoryStore::new(Arc::new(clock)))
}

taskhub_storage::conformance_tests!(make_store);
