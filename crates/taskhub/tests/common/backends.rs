//! The backends the runtime suites run on, opened by name through `taskhub_backends` (as the
//! binaries do), each where its own test configuration puts a fresh hub
//! (`taskhub_backends::testing`, from the plug-in's `testing.rs`): memory, SQLite (a file in a
//! temp dir), Azure Storage (a hub of its own on the account
//! `TASKHUB_TEST_AZURE_CONNECTION_STRING` names: Azurite under `scripts/with-azurite.sh`),
//! PostgreSQL (a schema of its own on the server `TASKHUB_TEST_POSTGRES_URL` names). A backend
//! whose variable is unset fails its tests, saying how to run them.
//!
//! Included by the test files that use it as `#[path = "common/backends.rs"] mod backends;`
//! next to `mod common;`
//! (with `../common/` from a test directory's `main.rs`).
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_azure::{AzureStore, StorageAccount};
use taskhub_backends::testing::{test_hub, TestHub};
use taskhub_backends::{BackendConfig, OpenedStore};
use taskhub_postgres::PostgresStore;
use taskhub_storage::TaskHubStore;

use crate::common::{fast_settings, TempDir};

pub use taskhub_test_support::Backend;

/// The test configuration of `backend`.
pub fn test_config(backend: Backend) -> &'static TestHub {
    test_hub(backend.name())
}

/// Where `backend` puts a hub for a test: the file `dir/hub.db`, or the hub `hub_name` on the
/// test account or server.
pub fn backend_config(backend: Backend, dir: &Path, hub_name: &str) -> BackendConfig {
    test_config(backend).config(dir, hub_name)
}

/// The test account; panics with how to run the tests when the variable is unset.
pub fn azure_account() -> StorageAccount {
    StorageAccount::from_connection_string(&azure_connection_string())
        .expect("a valid test connection string")
}

/// The test account's connection string; panics with how to run the tests when it is unset.
pub fn azure_connection_string() -> String {
    taskhub_test_support::env::azure_connection_string("cargo test -p taskhub")
}

/// The test server's URL; panics with how to run the tests when it is unset.
pub fn postgres_url() -> String {
    taskhub_test_support::env::postgres_url("cargo test -p taskhub")
}

/// A hub name no other test uses.
pub fn unique_hub_name() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("t{}", &id[..20])
}

/// Opens (creating it on first use) the hub `name` of `backend` (files in `dir`).
pub async fn open_hub_store(backend: Backend, dir: &Path, name: &str) -> OpenedStore {
    test_config(backend).create(dir, name).await
}

/// Opens (creating it on first use) the PostgreSQL hub `name` on the test server.
pub async fn postgres_store(name: &str) -> Arc<PostgresStore> {
    open_hub_store(Backend::Postgres, Path::new("."), name)
        .await
        .downcast_arc::<PostgresStore>()
        .expect("a PostgresStore")
}

/// Opens (creating its objects on first use) the Azure hub `name` on the test account.
pub async fn azure_store(name: &str) -> Arc<AzureStore> {
    open_hub_store(Backend::Azure, Path::new("."), name)
        .await
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

/// The file in a child's directory that names the backend and the hub it works on
/// (`backend hub`): see [`write_hub_file`] and [`run_child`].
pub const HUB_FILE: &str = "test-hub";

/// The file in a child's directory that names the Azure hub it works on.
pub const AZURE_HUB_FILE: &str = HUB_FILE;

/// The file in a child's directory that names the PostgreSQL hub it works on.
pub const POSTGRES_HUB_FILE: &str = HUB_FILE;

/// Tells the worker processes started in `dir` to work on the hub `hub_name` of `backend`.
pub fn write_hub_file(dir: &Path, backend: Backend, hub_name: &str) {
    std::fs::write(dir.join(HUB_FILE), format!("{backend} {hub_name}")).unwrap();
}

/// The backend and hub the file in `dir` names; a file with the hub name alone is `fallback`'s.
pub fn read_hub_file(dir: &Path, fallback: Backend) -> (Backend, String) {
    let text = std::fs::read_to_string(dir.join(HUB_FILE)).unwrap();
    match text.trim().split_once(' ') {
        Some((backend, hub)) => (
            Backend::named(test_hub(backend).name),
            hub.trim().to_owned(),
        ),
        None => (fallback, text.trim().to_owned()),
    }
}

/// The child side of the multi-process tests: runs a worker with `registry` on the hub
/// [`HUB_FILE`] in `dir` names (`fallback`'s if it names a hub alone) until stdin closes, then
/// shuts it down gracefully. Prints `ready NAME` once started (what `child::spawn` waits for).
pub fn run_child(fallback: Backend, dir: &Path, settings: Settings, registry: Registry) {
    let (backend, hub_name) = read_hub_file(dir, fallback);
    runtime().block_on(async move {
        let store = open_hub_store(backend, dir, &hub_name).await.store;
        let hub = TaskHub::open(store, settings).await.unwrap();
        let worker = Worker::start(&hub, registry).await.unwrap();
        println!("ready {}", worker.name());
        until_stdin_closes().await;
        worker.shutdown().await;
    });
}

/// The runtime of a worker process: multi-thread, two workers.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits until this process's stdin closes (how a multi-process test stops its workers).
pub async fn until_stdin_closes() {
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
    })
    .await
    .unwrap();
}

/// [`run_child`] on Azure.
pub fn run_azure_child(dir: &Path, settings: Settings, registry: Registry) {
    run_child(Backend::Azure, dir, settings, registry);
}

/// [`run_child`] on PostgreSQL.
pub fn run_postgres_child(dir: &Path, settings: Settings, registry: Registry) {
    run_child(Backend::Postgres, dir, settings, registry);
}

/// A store on a fresh, empty hub, and what keeps it alive (the temp dir).
pub struct TestStore {
    /// The backend it is on.
    pub backend: Backend,
    /// The store, as the runtime sees it.
    pub store: Arc<dyn TaskHubStore>,
    opened: OpenedStore,
    _dir: TempDir,
}

impl TestStore {
    /// A fresh hub on `backend`; `tag` names the temp dir.
    pub async fn fresh(backend: Backend, tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let opened = open_hub_store(backend, &dir.0, &unique_hub_name()).await;
        Self {
            backend,
            store: opened.store.clone(),
            opened,
            _dir: dir,
        }
    }

    /// Overwrites stored event `seq` of the instance's history with text that is not an event.
    pub async fn corrupt_history_event(&self, id: &InstanceId, seq: u64) {
        test_config(self.backend)
            .corrupt_history_event(&self.opened, id, seq)
            .await
            .unwrap_or_else(|e| panic!("corrupt event {seq} of {id} on {}: {e}", self.backend));
    }
}
