//! Fresh stores for tests that run on a backend without a file or a service.

use std::sync::Arc;

use taskhub_storage::memory::MemoryStore;
use taskhub_storage::SystemClock;

/// A fresh memory store on the system clock.
pub fn memory_store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))
}

/// A hub on a fresh memory store whose clock is manual, starting at 1 700 000 000 000 ms.
pub struct ManualMemoryHub {
    pub clock: Arc<taskhub_storage::ManualClock>,
    pub store: Arc<MemoryStore>,
    pub hub: taskhub::TaskHub,
}

/// Opens a [`ManualMemoryHub`] with `settings`.
pub async fn manual_memory_hub(settings: taskhub::Settings) -> ManualMemoryHub {
    let clock = Arc::new(taskhub_storage::ManualClock::new(
        taskhub_core::Timestamp::from_millis(1_700_000_000_000),
    ));
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let hub = taskhub::TaskHub::open_with_clock(store.clone(), settings, clock.clone())
        .await
        .unwrap();
    ManualMemoryHub { clock, store, hub }
}
