//! The memory backend as a plug-in (`taskhub-backends` registers it as `memory`): every open
//! that may create gives a fresh, empty store that lives as long as its handles. For the
//! benchmarks and tests; it has no options.

use std::sync::Arc;

use async_trait::async_trait;

use super::MemoryStore;
use crate::backend::{
    Backend, BackendConfig, BackendError, Deleted, HubLocation, OpenMode, OpenedStore, OptionDoc,
};
use crate::clock::Clock;

/// The memory backend's plug-in.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryBackend;

impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn summary(&self) -> &'static str {
        "in this process only, gone when it ends (benchmarks, tests)"
    }

    fn options(&self) -> Vec<OptionDoc> {
        Vec::new()
    }

    fn locate(&self, config: &BackendConfig) -> Result<Box<dyn HubLocation>, BackendError> {
        Ok(Box::new(MemoryHub {
            clock: config.clock.clone(),
        }))
    }
}

/// A hub in memory: a new one at every open.
struct MemoryHub {
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for MemoryHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryHub")
    }
}

#[async_trait]
impl HubLocation for MemoryHub {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn place(&self) -> String {
        "memory".to_owned()
    }

    fn describe(&self) -> String {
        "the task hub in memory".to_owned()
    }

    fn contents(&self) -> String {
        "nothing that outlives the process".to_owned()
    }

    fn is_local(&self) -> bool {
        true
    }

    async fn open(&self, mode: OpenMode, instrument: bool) -> Result<OpenedStore, BackendError> {
        match mode {
            OpenMode::Existing => Err(BackendError::NotFound {
                hub: "in memory".to_owned(),
                setting: "a memory hub exists only in the process that created it".to_owned(),
            }),
            OpenMode::CreateIfMissing => Ok(OpenedStore::new(
                MemoryStore::new(self.clock.clone()),
                instrument,
            )),
        }
    }

    async fn delete(&self) -> Result<Deleted, BackendError> {
        Ok(Deleted {
            existed: false,
            note: "new".to_owned(),
        })
    }
}
