//! Every storage backend by name, and one entry for the binaries (the `taskhub` CLI, the
//! benchmarks) and the tests to open, create or delete a hub of any of them.
//!
//! A backend is a crate that implements [`Backend`] (see `taskhub_storage::backend`); it is
//! listed in [`BACKENDS`] by one line. Nothing else names it: the runtime gets an
//! `Arc<dyn TaskHubStore>`, and each backend reads its own options (the `[<name>]` table of
//! `taskhub.toml`, `TASKHUB_<NAME>_*` variables, `--set <name>.<option>=…`). Adding one:
//! `docs/BACKENDS.md`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), taskhub_backends::BackendError> {
//! use taskhub_backends::{create_store, BackendConfig, OptionValue};
//!
//! let path = std::env::temp_dir().join(format!("doc-backends-{}.db", std::process::id()));
//! let config = BackendConfig {
//!     overrides: vec![OptionValue::new("sqlite.path", path.display().to_string(), "here")],
//!     ..BackendConfig::default()
//! };
//! let opened = create_store("sqlite", &config).await?;
//! assert_eq!(opened.store.backend_name(), "sqlite");
//! drop(opened);
//! assert!(taskhub_backends::delete_hub("sqlite", &config).await?.existed);
//! # Ok(()) }
//! ```

#[cfg(feature = "testing")]
pub mod testing;

pub use taskhub_storage::backend::{
    Backend, BackendConfig, BackendError, Deleted, HubLocation, OpenMode, OpenedStore, OptionDoc,
    OptionValue, DEFAULT_HUB_NAME,
};

/// Declares [`BACKENDS`], [`PROCESS_SUITES`] and [`for_each_backend!`] from one list of
/// `name => plug-in [suites]` lines, so the binaries' registry and the tests' matrix can never
/// disagree.
macro_rules! backends {
    ($d:tt $($name:ident => $plugin:path [$($suite:ident),*]),+ $(,)?) => {
        /// Every backend, by name: **a new backend adds its one line to the list that makes
        /// this** (`name => crate::Plugin [suites]`, in `crates/taskhub-backends/src/lib.rs`;
        /// see `docs/BACKENDS.md`). The first is the default.
        pub static BACKENDS: &[&dyn Backend] = &[$(&$plugin),+];

        /// The worker-process suites each backend's store can run, by the backend's name, as
        /// its registration line lists them (each one of [`SUITES`]).
        pub static PROCESS_SUITES: &[(&str, &[&str])] =
            &[$((stringify!($name), &[$(stringify!($suite)),*])),+];

        /// The test configuration of every backend, in the order of [`BACKENDS`] (feature
        /// `testing`: each plug-in's `testing.rs`).
        #[cfg(feature = "testing")]
        pub(crate) static TEST_HUBS: &[testing::TestHub] = &[$(
            testing::TestHub {
                name: stringify!($name),
                plugin: stringify!($plugin),
                options: <$plugin>::test_hub_options,
                corrupt: |opened, id, seq| {
                    Box::pin(<$plugin>::corrupt_history_event(opened, id, seq))
                },
                shared: <$plugin>::TEST_HUBS_SHARED,
            }
        ),+];

        /// Expands `callback! { [every backend with its suites] rest… }`: the backends of
        /// [`BACKENDS`] in its order, each as `name [suite …]` with the worker-process suites
        /// its line lists. The tests' backend matrix
        /// (`taskhub_test_support::backend_matrix!([every] …)`, `([in suite] …)`) makes one
        /// test per backend with it.
        ///
        /// ```
        /// macro_rules! names {
        ///     ([$($name:ident [$($suite:ident)*]),+]) => { [$(stringify!($name)),+] };
        /// }
        /// assert_eq!(
        ///     taskhub_backends::for_each_backend!([names]).to_vec(),
        ///     taskhub_backends::names()
        /// );
        /// ```
        #[macro_export]
        macro_rules! for_each_backend {
            ([$d($d callback:tt)+] $d($d rest:tt)*) => {
                $d($d callback)+ ! { [$($name [$($suite)*]),+] $d($d rest)* }
            };
        }
    };
}

/// The worker-process suites a backend's registration line may list: the tests that run real
/// worker processes on one hub and need a store that several machines share. Each is run on
/// exactly the backends that list it (`backend_matrix!([in suite] …)`).
///
/// - `kill_and_pause`: a store whose checkpoint is a sequence of ordered steps (no
///   transactions): one worker killed, one paused past its lease and resumed
///   (`crates/taskhub/tests/workers.rs`).
/// - `three_kills`: a store whose checkpoints are transactions: three workers killed in turn
///   over a thousand orchestrations (`workers.rs`).
/// - `paused_checkpoint`: a worker paused at each step of a checkpoint past its lease, while
///   the others go on (`crates/taskhub/tests/paused_checkpoint.rs`); a store where a paused
///   writer stops every other (SQLite) cannot list it.
/// - `torn_entities`: entity checkpoints torn between their steps
///   (`crates/taskhub/tests/entities.rs`), for a store that commits in steps.
pub const SUITES: &[&str] = &[
    "kill_and_pause",
    "three_kills",
    "paused_checkpoint",
    "torn_entities",
];

// `$` first: the macro passes it on to the `for_each_backend!` it writes.
backends! { $
    sqlite => taskhub_sqlite::SqliteBackend [],
    azure => taskhub_azure::AzureBackend [kill_and_pause, paused_checkpoint, torn_entities],
    postgres => taskhub_postgres::PostgresBackend [three_kills, paused_checkpoint],
    memory => taskhub_storage::memory::MemoryBackend [],
}

/// The default backend's name (`sqlite`).
#[must_use]
pub fn default_name() -> &'static str {
    BACKENDS.first().map_or("sqlite", |b| b.name())
}

/// The names of [`BACKENDS`], in order.
#[must_use]
pub fn names() -> Vec<&'static str> {
    BACKENDS.iter().map(|b| b.name()).collect()
}

/// The backend called `name` (any case, surrounding blanks ignored).
///
/// # Errors
/// [`BackendError::Unknown`] listing the known names.
pub fn backend(name: &str) -> Result<&'static dyn Backend, BackendError> {
    let wanted = name.trim().to_ascii_lowercase();
    BACKENDS
        .iter()
        .copied()
        .find(|b| b.name() == wanted)
        .ok_or_else(|| BackendError::Unknown {
            name: name.to_owned(),
            known: names().join(", "),
        })
}

/// The hub `config` names on the backend `name`, its options read but nothing opened.
///
/// # Errors
/// [`BackendError::Unknown`], or the backend's error naming a bad option and its source.
pub fn locate(name: &str, config: &BackendConfig) -> Result<Box<dyn HubLocation>, BackendError> {
    backend(name)?.locate(config)
}

/// Opens an existing hub; a missing one is [`BackendError::NotFound`] and nothing is
/// created. `config.instrument` aside, the store is what the runtime takes
/// (`TaskHub::open(opened.store, settings)`).
///
/// # Errors
/// As [`locate`], then [`HubLocation::open`].
pub async fn open_store(name: &str, config: &BackendConfig) -> Result<OpenedStore, BackendError> {
    locate(name, config)?
        .open(OpenMode::Existing, config.instrument)
        .await
}

/// Opens a hub, creating it empty if it does not exist.
///
/// # Errors
/// As [`locate`], then [`HubLocation::open`].
pub async fn create_store(name: &str, config: &BackendConfig) -> Result<OpenedStore, BackendError> {
    locate(name, config)?
        .open(OpenMode::CreateIfMissing, config.instrument)
        .await
}

/// Deletes every object of a hub (a missing hub is not an error). Close its stores first.
///
/// # Errors
/// As [`locate`], then [`HubLocation::delete`].
pub async fn delete_hub(name: &str, config: &BackendConfig) -> Result<Deleted, BackendError> {
    locate(name, config)?.delete().await
}

/// The backend option a settings key names, as `<backend>.<option>`: `sqlite.durability`
/// itself, or an older top-level spelling a backend still reads
/// (`azure_storage_connection_string` → `azure.storage_connection_string`). `None` for a key
/// that is no backend's (a runtime setting, say).
#[must_use]
pub fn option_key(key: &str) -> Option<String> {
    let key = key.trim();
    if let Some((table, _)) = key.split_once('.') {
        return BACKENDS
            .iter()
            .any(|b| b.name() == table)
            .then(|| key.to_owned());
    }
    BACKENDS.iter().find_map(|b| {
        b.top_level_keys()
            .contains(&key)
            .then(|| {
                key.strip_prefix(b.name())
                    .and_then(|rest| rest.strip_prefix('_'))
                    .map(|option| format!("{}.{option}", b.name()))
            })
            .flatten()
    })
}

/// True if `table` of `taskhub.toml` is a backend's (`[sqlite]`, `[azure]`).
#[must_use]
pub fn is_backend_table(table: &str) -> bool {
    BACKENDS.iter().any(|b| b.name() == table)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn names_are_unique_and_found_in_any_case() {
        let mut names = names();
        assert_eq!(names.first(), Some(&"sqlite"));
        assert_eq!(default_name(), "sqlite");
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BACKENDS.len());
        assert_eq!(backend(" Azure ").unwrap().name(), "azure");
        let err = backend("cosmos").unwrap_err().to_string();
        assert!(
            err.contains("sqlite, azure, postgres, memory") && err.contains("backend"),
            "{err}"
        );
    }

    #[test]
    fn option_keys_map_tables_and_older_top_level_names() {
        assert_eq!(
            option_key("sqlite.durability").as_deref(),
            Some("sqlite.durability")
        );
        assert_eq!(
            option_key("azure_storage_connection_string").as_deref(),
            Some("azure.storage_connection_string")
        );
        assert_eq!(option_key("partition_count"), None);
        assert_eq!(option_key("cosmos.key"), None);
        assert!(is_backend_table("azure") && !is_backend_table("cosmos"));
    }

    #[tokio::test]
    async fn a_sqlite_hub_is_opened_created_and_deleted_by_name() {
        let path = std::env::temp_dir().join(format!("taskhub-backends-{}.db", std::process::id()));
        let config = BackendConfig {
            overrides: vec![OptionValue::new(
                "sqlite.path",
                path.display().to_string(),
                "test",
            )],
            instrument: true,
            ..BackendConfig::default()
        };
        let missing = open_store("sqlite", &config).await.unwrap_err();
        assert!(
            matches!(missing, BackendError::NotFound { .. }),
            "{missing}"
        );
        let created = create_store("sqlite", &config).await.unwrap();
        assert!(created.metrics.is_some());
        assert!(created.downcast::<taskhub_sqlite::SqliteStore>().is_some());
        drop(created);
        let opened = open_store("SQLite", &config).await.unwrap();
        drop(opened);
        assert!(delete_hub("sqlite", &config).await.unwrap().existed);
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn every_memory_hub_is_new() {
        let config = BackendConfig::default();
        let opened = create_store("memory", &config).await.unwrap();
        assert_eq!(opened.store.backend_name(), "memory");
        assert!(open_store("memory", &config).await.is_err());
    }

    #[test]
    fn every_listed_suite_is_known_and_every_backend_has_a_line() {
        assert_eq!(PROCESS_SUITES.len(), BACKENDS.len());
        for ((name, suites), b) in PROCESS_SUITES.iter().zip(BACKENDS) {
            assert_eq!(*name, b.name());
            for suite in *suites {
                assert!(
                    SUITES.contains(suite),
                    "{name} lists an unknown suite {suite}"
                );
            }
        }
    }

    #[test]
    fn every_backend_documents_its_options_with_their_variables() {
        for b in BACKENDS {
            for o in b.options() {
                let var = format!("TASKHUB_{}_{}", b.name(), o.name).to_uppercase();
                assert_eq!(o.env.first(), Some(&var), "{}.{}", b.name(), o.name);
            }
        }
    }
}
