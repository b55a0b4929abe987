//! Every backend's test configuration (feature `testing`), supplied by its plug-in's
//! `testing.rs` and listed here by the same line that puts it in [`BACKENDS`](crate::BACKENDS):
//! where a test puts a fresh hub of its own, and the test hooks the runtime's tests use on any
//! backend. A backend whose service a test needs (Azurite, a PostgreSQL server) reads its
//! address from the variable a `scripts/with-*.sh` exports, and its options panic, saying how to
//! run the test, when it is unset.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use taskhub_core::InstanceId;
use taskhub_storage::StorageResult;

use crate::{BackendConfig, OpenedStore, OptionValue};

/// What a test hook returns.
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = StorageResult<()>> + Send + 'a>>;

/// One backend's test configuration, from its plug-in's `testing.rs` (`test_hub_options`,
/// `corrupt_history_event`, `TEST_HUBS_SHARED`).
#[derive(Clone, Copy)]
pub struct TestHub {
    /// The backend's name in [`BACKENDS`](crate::BACKENDS).
    pub name: &'static str,
    /// The plug-in's path as the registration line spells it (`taskhub_sqlite::SqliteBackend`):
    /// where the docs check finds the backend's crate.
    pub plugin: &'static str,
    /// The options of a fresh hub named `hub_name` (a backend that keeps a hub in files puts
    /// them in the directory `dir`).
    pub options: fn(dir: &Path, hub_name: &str) -> Vec<OptionValue>,
    /// Overwrites stored event `seq` of the instance's current execution with text that is
    /// not an event, in the hub the opened store is on.
    pub corrupt: for<'a> fn(&'a OpenedStore, &'a InstanceId, u64) -> HookFuture<'a>,
    /// True if a hub opened again by its options (by another process, say) is the same hub;
    /// false for a backend whose every open is a new hub (memory).
    pub shared: bool,
}

impl std::fmt::Debug for TestHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestHub")
            .field("name", &self.name)
            .field("plugin", &self.plugin)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

/// The test configuration of every backend, in the order of [`BACKENDS`](crate::BACKENDS).
#[must_use]
pub fn test_hubs() -> &'static [TestHub] {
    crate::TEST_HUBS
}

/// The test configuration of the backend `name`.
///
/// # Panics
/// If no backend is called `name`, listing the known names.
#[must_use]
pub fn test_hub(name: &str) -> &'static TestHub {
    crate::TEST_HUBS
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no backend '{name}' (known: {})", crate::names().join(", ")))
}

impl TestHub {
    /// Where a fresh hub named `hub_name` of this backend goes (files in `dir`).
    #[must_use]
    pub fn config(&self, dir: &Path, hub_name: &str) -> BackendConfig {
        BackendConfig {
            overrides: (self.options)(dir, hub_name),
            hub_name: hub_name.to_owned(),
            ..BackendConfig::default()
        }
    }

    /// Opens the hub named `hub_name` (files in `dir`), creating it if it is missing.
    ///
    /// # Panics
    /// If it cannot be opened, naming the backend and the hub.
    pub async fn create(&self, dir: &Path, hub_name: &str) -> OpenedStore {
        crate::create_store(self.name, &self.config(dir, hub_name))
            .await
            .unwrap_or_else(|e| panic!("open the test hub {hub_name} on {}: {e}", self.name))
    }

    /// Overwrites stored event `seq` of the instance's current execution, in the hub
    /// `opened` is on, with text that is not an event.
    ///
    /// # Errors
    /// `NotFound` if there is no such event; as the backend's statements.
    pub async fn corrupt_history_event(
        &self,
        opened: &OpenedStore,
        id: &InstanceId,
        seq: u64,
    ) -> StorageResult<()> {
        (self.corrupt)(opened, id, seq).await
    }
}
