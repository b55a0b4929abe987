//! The memory backend's test configuration (feature `testing`), listed by
//! `taskhub_backends::testing`: a test's fresh hub needs no options, and a stored event can be
//! damaged for the runtime's tests of a corrupt store.

use taskhub_core::InstanceId;

use super::{MemoryBackend, MemoryStore};
use crate::backend::{OpenedStore, OptionValue};
use crate::error::{StorageError, StorageResult};

impl MemoryBackend {
    /// Every open is a new hub: nothing is shared with another open (or process).
    pub const TEST_HUBS_SHARED: bool = false;

    /// The options of a test's fresh hub: none.
    #[must_use]
    pub fn test_hub_options(_dir: &std::path::Path, _hub_name: &str) -> Vec<OptionValue> {
        Vec::new()
    }

    /// Overwrites stored event `seq` of the instance's history, in the memory store `opened`
    /// holds, with text that is not an event.
    ///
    /// # Errors
    /// `InvalidArgument` if `opened` is not a memory store; `NotFound` if there is no such
    /// event.
    pub async fn corrupt_history_event(
        opened: &OpenedStore,
        id: &InstanceId,
        seq: u64,
    ) -> StorageResult<()> {
        let store = opened.require::<MemoryStore>("a memory store")?;
        let mut state = store.state();
        let event = state
            .history
            .get_mut(id.as_str())
            .and_then(|row| row.events.get_mut(usize::try_from(seq).ok()?))
            .ok_or_else(|| StorageError::NotFound {
                what: format!("event {seq} of instance '{id}'"),
            })?;
        "{\"v\":1,\"garbage".clone_into(event);
        Ok(())
    }
}
