//! How a backend plugs into the binaries (the `taskhub` CLI, the benchmarks, the tests'
//! helpers): its crate implements [`Backend`] (its options, read from the configuration, and
//! a [`HubLocation`] that opens, creates and deletes one hub), and the `taskhub-backends`
//! crate lists it by one line. The runtime never sees this: it gets an
//! `Arc<dyn TaskHubStore>`.
//!
//! A backend's options live in its own table of `taskhub.toml` (`[sqlite]`, `[azure]`) and
//! in `TASKHUB_<BACKEND>_<NAME>` variables; [`BackendConfig`] carries those sources, plus a
//! command's defaults (before the file) and explicit values such as flags (after the
//! environment), each value keyed `<backend>.<name>`. A backend's options struct implements
//! [`BackendOptions`] (its `set()`); [`crate::options`] reads every source for it.

use std::any::Any;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use crate::clock::{Clock, SystemClock};
use crate::error::StorageError;
use crate::instrumented::{Instrumented, StoreMetrics};
use crate::store::TaskHubStore;

pub use crate::options::{parse, BackendOptions, OptionError};

/// The default task hub name: what a backend that holds several hubs in one place (the
/// tables of an Azure Storage account) calls the hub when none is named.
pub const DEFAULT_HUB_NAME: &str = "TaskHub";

/// One option value: `key` is `<backend>.<name>` (`sqlite.durability`); `origin` (a file, a
/// variable, a flag) is named in errors about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionValue {
    /// `<backend>.<name>`.
    pub key: String,
    /// The value as text.
    pub value: String,
    /// Where it came from.
    pub origin: String,
}

impl OptionValue {
    /// A value for `key` from `origin`.
    #[must_use]
    pub fn new(
        key: impl Into<String>,
        value: impl Into<String>,
        origin: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            origin: origin.into(),
        }
    }
}

/// Where a backend reads its options from, in order (a later source wins per option):
/// `defaults`, the backend's table of `file`, the environment `env`, then `overrides`.
#[derive(Clone)]
pub struct BackendConfig {
    /// A command's defaults (the demo's own database file, Azurite for the demo).
    pub defaults: Vec<OptionValue>,
    /// The settings file (`taskhub.toml`); a file that does not exist adds nothing.
    pub file: Option<PathBuf>,
    /// The environment (`TASKHUB_<BACKEND>_<NAME>` variables; others are ignored).
    pub env: HashMap<String, String>,
    /// Explicit values, such as `--set sqlite.durability=full` or `--db`.
    pub overrides: Vec<OptionValue>,
    /// The hub's name (the `task_hub_name` setting), for backends that keep several hubs in
    /// one place; a backend whose options name the hub (a SQLite file) ignores it.
    pub hub_name: String,
    /// The clock of the store.
    pub clock: Arc<dyn Clock>,
    /// Count the store's calls ([`Instrumented`]; [`OpenedStore::metrics`]).
    pub instrument: bool,
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self {
            defaults: Vec::new(),
            file: None,
            env: HashMap::new(),
            overrides: Vec::new(),
            hub_name: DEFAULT_HUB_NAME.to_owned(),
            clock: Arc::new(SystemClock::new()),
            instrument: false,
        }
    }
}

impl std::fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values may be secrets (a connection string): only their keys are shown.
        let keys = |v: &[OptionValue]| v.iter().map(|o| o.key.clone()).collect::<Vec<_>>();
        f.debug_struct("BackendConfig")
            .field("defaults", &keys(&self.defaults))
            .field("file", &self.file)
            .field("env", &self.env.len())
            .field("overrides", &keys(&self.overrides))
            .field("hub_name", &self.hub_name)
            .field("instrument", &self.instrument)
            .finish_non_exhaustive()
    }
}

impl BackendConfig {
    /// The values of `list` for the backend `table`: (name without the `table.` prefix,
    /// value, origin).
    pub fn values_of<'a>(
        list: &'a [OptionValue],
        table: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str, &'a str)> + 'a {
        list.iter().filter_map(move |o| {
            o.key
                .strip_prefix(table)
                .and_then(|rest| rest.strip_prefix('.'))
                .map(|name| (name, o.value.as_str(), o.origin.as_str()))
        })
    }
}

/// One option of a backend as the documentation lists it: checked against `docs/SETTINGS.md` by
/// `crates/taskhub/tests/settings_docs.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDoc {
    /// The name under the backend's table.
    pub name: &'static str,
    /// The default in its text form; empty for none.
    pub default: String,
    /// The environment variables that set it, the first being `TASKHUB_<BACKEND>_<NAME>`.
    pub env: Vec<String>,
}

/// Whether opening a hub may create it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The hub must exist: a missing one is [`BackendError::NotFound`] and nothing is
    /// created.
    Existing,
    /// A missing hub is created, empty.
    CreateIfMissing,
}

/// A store a backend opened, as the runtime uses it, with its concrete type still reachable
/// for backend-specific counters and test hooks ([`downcast`](Self::downcast)).
pub struct OpenedStore {
    /// The store.
    pub store: Arc<dyn TaskHubStore>,
    /// Its call counters, when it was opened with `instrument`.
    pub metrics: Option<StoreMetrics>,
    concrete: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for OpenedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedStore")
            .field("backend", &self.store.backend_name())
            .field("instrumented", &self.metrics.is_some())
            .finish()
    }
}

impl OpenedStore {
    /// Wraps `store`, counted by [`Instrumented`] if `instrument`.
    #[must_use]
    pub fn new<S: TaskHubStore + 'static>(store: S, instrument: bool) -> Self {
        if instrument {
            let store = Arc::new(Instrumented::new(store));
            Self {
                metrics: Some(store.metrics()),
                store: store.clone(),
                concrete: store,
            }
        } else {
            let store = Arc::new(store);
            Self {
                metrics: None,
                store: store.clone(),
                concrete: store,
            }
        }
    }

    /// The store as its own type `S` (`SqliteStore`, `AzureStore`), instrumented or not;
    /// `None` if it is another backend's.
    #[must_use]
    pub fn downcast<S: TaskHubStore + 'static>(&self) -> Option<&S> {
        self.concrete.downcast_ref::<S>().or_else(|| {
            self.concrete
                .downcast_ref::<Instrumented<S>>()
                .map(Instrumented::inner)
        })
    }
}

impl OpenedStore {
    /// The store as an `S` (as [`downcast`](Self::downcast)), for a backend's hook that works
    /// on its own store only; `kind` names that store (`"a SQLite store"`).
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] (`not a SQLite store`) if it is not an `S`.
    pub fn require<S: TaskHubStore + 'static>(&self, kind: &str) -> Result<&S, StorageError> {
        self.downcast::<S>()
            .ok_or_else(|| StorageError::InvalidArgument(format!("not {kind}")))
    }

    /// The store as a shared `S`, if it is one and was opened without `instrument` (tests
    /// that call a backend's own hooks keep it this way).
    #[must_use]
    pub fn downcast_arc<S: TaskHubStore + 'static>(&self) -> Option<Arc<S>> {
        self.concrete.clone().downcast::<S>().ok()
    }
}

/// What [`HubLocation::delete`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// True if some object of the hub existed (and is gone now).
    pub existed: bool,
    /// What was deleted, or that there was nothing, for a message (`deleted hub.db,
    /// hub.db-wal`, `new file`).
    pub note: String,
}

/// Why a backend could not be configured, or a hub opened or deleted. Messages name the
/// setting to check.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// No backend has this name.
    #[error("invalid setting backend: unknown backend {name:?} (known: {known})")]
    Unknown {
        /// The name given.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// The settings file could not be read or parsed.
    #[error("cannot read settings file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An option is unknown, malformed, out of range or missing.
    #[error("invalid setting {setting} (from {origin}): {reason}")]
    Invalid {
        /// The option, `<backend>.<name>` (or a top-level setting such as `task_hub_name`).
        setting: String,
        /// Where its value came from (a file, a variable, a flag, `the defaults`).
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// [`OpenMode::Existing`] and the hub does not exist; nothing was created.
    #[error("no task hub {hub} ({setting})")]
    NotFound {
        /// The hub, as the backend names it (`at taskhub.db`, `'TaskHub' on this storage
        /// account`).
        hub: String,
        /// The settings that choose it.
        setting: String,
    },
    /// Nothing answers where the options point.
    #[error("{0}")]
    Unreachable(String),
    /// Opening, creating or deleting failed otherwise.
    #[error("cannot open {hub}: {reason}")]
    Open {
        /// The hub.
        hub: String,
        /// Why.
        reason: String,
    },
    /// A storage call failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A backend: its name, its options, and how to find one hub from the configuration.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// The name the `backend` setting and `--backend` choose it by, and its table in
    /// `taskhub.toml`.
    fn name(&self) -> &'static str;

    /// One line for help texts and docs.
    fn summary(&self) -> &'static str;

    /// Its options, for the documentation check.
    fn options(&self) -> Vec<OptionDoc>;

    /// Top-level keys of `taskhub.toml` (and `--set`) it reads besides its table: older
    /// names of its options, still honoured. Default none.
    fn top_level_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// Reads its options from `config`; the result names one hub.
    ///
    /// # Errors
    /// [`BackendError::Invalid`] or [`BackendError::File`] naming the option and its source.
    fn locate(&self, config: &BackendConfig) -> Result<Box<dyn HubLocation>, BackendError>;
}

/// One hub of a backend, its options resolved: opens, creates or deletes it.
#[async_trait]
pub trait HubLocation: Send + Sync + std::fmt::Debug {
    /// The backend's name.
    fn backend(&self) -> &'static str;

    /// Where the hub is, short: `taskhub.db`, `'TaskHub' on Azure Storage`.
    fn place(&self) -> String;

    /// The hub for messages: `the task hub at taskhub.db`, `the task hub 'TaskHub' on Azure
    /// Storage`.
    fn describe(&self) -> String;

    /// What deleting it removes, for a confirmation: `the file and its -wal/-shm/-journal`.
    fn contents(&self) -> String;

    /// True if the hub is on this machine (a file, an emulator), so a demo may wipe it
    /// without asking.
    fn is_local(&self) -> bool;

    /// Opens the hub (creating it if `mode` allows); `instrument` counts its calls.
    ///
    /// # Errors
    /// [`BackendError::NotFound`] for a missing hub under [`OpenMode::Existing`]; otherwise
    /// an error naming the setting to check.
    async fn open(&self, mode: OpenMode, instrument: bool) -> Result<OpenedStore, BackendError>;

    /// Deletes every object of the hub; a hub that does not exist is not an error. Close its
    /// stores first.
    ///
    /// # Errors
    /// The first object that exists but cannot be deleted.
    async fn delete(&self) -> Result<Deleted, BackendError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;

    #[test]
    fn values_of_picks_one_table() {
        let list = vec![
            OptionValue::new("sqlite.path", "a.db", "--db"),
            OptionValue::new("azure.storage_account_name", "x", "--set"),
            OptionValue::new("sqlitex.path", "b.db", "--set"),
        ];
        let got: Vec<_> = BackendConfig::values_of(&list, "sqlite").collect();
        assert_eq!(got, vec![("path", "a.db", "--db")]);
    }

    #[test]
    fn an_opened_store_downcasts_with_or_without_instrumentation() {
        for instrument in [false, true] {
            let opened =
                OpenedStore::new(MemoryStore::new(Arc::new(SystemClock::new())), instrument);
            assert!(opened.downcast::<MemoryStore>().is_some());
            assert_eq!(opened.downcast_arc::<MemoryStore>().is_some(), !instrument);
            assert_eq!(opened.metrics.is_some(), instrument);
            assert_eq!(opened.store.backend_name(), "memory");
        }
    }
}
