//! The backends the runtime suites run on, opened by name through `taskhub_backends` (as the
//! binaries do): SQLite (a file in a temp dir) and Azure Storage (a fresh hub with its own name
//! on the account that `TASKHUB_TEST_AZURE_CONNECTION_STRING` names: Azurite under
//! `scripts/with-azurite.sh`).
//!
//! Included by the test files that use it as `#[path = "common/backends.rs"] mod backends;`
//! next to `mod common;`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_azure::{AzureStore, StorageAccount};
use taskhub_backends::{BackendConfig, OptionValue};
use taskhub_postgres::PostgresStore;
use taskhub_storage::TaskHubStore;

use crate::common::{fast_settings, TempDir};

/// The environment variable naming the account the Azure tests run against.
pub use taskhub_test_support::env::AZURE_CONNECTION_STRING as AZURE_ENV;
pub use taskhub_test_support::Backend;

/// The test account; panics with how to run the tests when the variable is unset.
pub fn azure_account() -> StorageAccount {
    StorageAccount::from_connection_string(&azure_connection_string())
        .expect("a valid test connection string")
}

/// The test account's connection string; panics with how to run the tests when it is unset.
pub fn azure_connection_string() -> String {
    taskhub_test_support::env::azure_connection_string("cargo test -p taskhub")
}

/// Where `backend` puts a hub for a test: the file `dir/hub.db`, or the hub `hub_name` on the
/// test account.
pub fn backend_config(backend: Backend, dir: &std::path::Path, hub_name: &str) -> BackendConfig {
    let overrides = match backend {
        Backend::Memory => Vec::new(),
        Backend::Sqlite => vec![OptionValue::new(
            "sqlite.path",
            dir.join("hub.db").display().to_string(),
            "the test",
        )],
        Backend::Azure => vec![OptionValue::new(
            "azure.storage_connection_string",
            azure_connection_string(),
            AZURE_ENV,
        )],
        Backend::Postgres => vec![
            OptionValue::new("postgres.url", postgres_url(), POSTGRES_ENV),
            OptionValue::new("postgres.pool_size", "8", "the test"),
        ],
    };
    BackendConfig {
        overrides,
        hub_name: hub_name.to_owned(),
        ..BackendConfig::default()
    }
}

/// The environment variable naming the server the PostgreSQL tests run against.
pub use taskhub_test_support::env::POSTGRES_URL as POSTGRES_ENV;

/// The test server's URL; panics with how to run the tests when it is unset.
pub fn postgres_url() -> String {
    taskhub_test_support::env::postgres_url("cargo test -p taskhub")
}

/// Opens (creating it on first use) the PostgreSQL hub `name` on the test server.
pub async fn postgres_store(name: &str) -> Arc<PostgresStore> {
    let config = backend_config(Backend::Postgres, std::path::Path::new("."), name);
    taskhub_backends::create_store("postgres", &config)
        .await
        .expect("open the hub on the test server")
        .downcast_arc::<PostgresStore>()
        .expect("a PostgresStore")
}

/// A hub name no other test uses.
pub fn unique_hub_name() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("t{}", &id[..20])
}

/// Opens (creating its objects on first use) the Azure hub `name` on the test account.
pub async fn azure_store(name: &str) -> Arc<AzureStore> {
    let config = backend_config(Backend::Azure, std::path::Path::new("."), name);
    taskhub_backends::create_store("azure", &config)
        .await
        .expect("open the hub on the test account")
        .downcast_arc::<AzureStore>()
        .expect("an AzureStore")
}

/// Settings for short test runs on `backend`. Azure keeps time itself (delays are whole
/// seconds), so nothing here relies on sub-second visibility timeouts.
pub fn settings(_backend: Backend) -> Settings {
    Settings {
        max_queue_polling_interval: Duration::from_millis(100),
        ..fast_settings()
    }
}

/// The file in a child's directory that names the Azure hub it works on.
pub const AZURE_HUB_FILE: &str = "azure-hub";

/// The child side of the multi-process tests on Azure: runs a worker with `registry` on the
/// hub named in `dir/azure-hub` until stdin closes, then shuts it down gracefully. Prints
/// `ready NAME` once started (what `child::spawn` waits for).
pub fn run_azure_child(dir: &std::path::Path, settings: Settings, registry: Registry) {
    let hub_name = std::fs::read_to_string(dir.join(AZURE_HUB_FILE)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = azure_store(hub_name.trim()).await;
        let hub = TaskHub::open(store, settings).await.unwrap();
        let worker = Worker::start(&hub, registry).await.unwrap();
        println!("ready {}", worker.name());
        tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        })
        .await
        .unwrap();
        worker.shutdown().await;
    });
}

/// The file in a child's directory that names the PostgreSQL hub it works on.
pub const POSTGRES_HUB_FILE: &str = "postgres-hub";

/// The child side of the multi-process tests on PostgreSQL: as [`run_azure_child`], on the
/// hub named in `dir/postgres-hub` of the test server.
pub fn run_postgres_child(dir: &std::path::Path, settings: Settings, registry: Registry) {
    let hub_name = std::fs::read_to_string(dir.join(POSTGRES_HUB_FILE)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = postgres_store(hub_name.trim()).await;
        let hub = TaskHub::open(store, settings).await.unwrap();
        let worker = Worker::start(&hub, registry).await.unwrap();
        println!("ready {}", worker.name());
        tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        })
        .await
        .unwrap();
        worker.shutdown().await;
    });
}

enum Kind {
    Memory,
    Sqlite { _dir: TempDir, path: PathBuf },
    Azure(Arc<AzureStore>),
    Postgres(Arc<PostgresStore>),
}

/// A store on a fresh, empty hub, and what keeps it alive (the temp dir).
pub struct TestStore {
    /// The backend it is on.
    pub backend: Backend,
    /// The store, as the runtime sees it.
    pub store: Arc<dyn TaskHubStore>,
    kind: Kind,
}

impl TestStore {
    /// A fresh hub on `backend`; `tag` names the temp dir.
    pub async fn fresh(backend: Backend, tag: &str) -> Self {
        match backend {
            Backend::Memory => {
                let config = backend_config(backend, std::path::Path::new("."), "unused");
                let store = taskhub_backends::create_store("memory", &config)
                    .await
                    .expect("a memory hub")
                    .store;
                Self {
                    backend,
                    store,
                    kind: Kind::Memory,
                }
            }
            Backend::Sqlite => {
                let dir = TempDir::new(tag);
                let path = dir.0.join("hub.db");
                let config = backend_config(backend, &dir.0, "unused");
                let store = taskhub_backends::create_store("sqlite", &config)
                    .await
                    .expect("a SQLite hub in the temp dir")
                    .store;
                Self {
                    backend,
                    store,
                    kind: Kind::Sqlite { _dir: dir, path },
                }
            }
            Backend::Azure => {
                let azure = azure_store(&unique_hub_name()).await;
                Self {
                    backend,
                    store: azure.clone(),
                    kind: Kind::Azure(azure),
                }
            }
            Backend::Postgres => {
                let pg = postgres_store(&unique_hub_name()).await;
                Self {
                    backend,
                    store: pg.clone(),
                    kind: Kind::Postgres(pg),
                }
            }
        }
    }

    /// Overwrites stored event `seq` of the instance's history with text that is not an event.
    pub async fn corrupt_history_event(&self, id: &InstanceId, seq: u64) {
        match &self.kind {
            Kind::Memory => panic!("corrupting a stored event is not supported on memory"),
            Kind::Sqlite { path, .. } => {
                taskhub_sqlite::testing::corrupt_history_event(path, id, seq).unwrap();
            }
            Kind::Azure(store) => store.corrupt_history_event(id, seq).await.unwrap(),
            Kind::Postgres(store) => store.corrupt_history_event(id, seq).await.unwrap(),
        }
    }
}
