//! Fresh stores for tests that run on a backend without a file or a service.

use std::sync::Arc;

use taskhub_storage::memory::MemoryStore;
use taskhub_storage::SystemClock;

/// A fresh memory store on the system clock.
pub fn memory_store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))
}
