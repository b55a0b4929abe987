//! A Taskhub worker with Rust orchestrations and the gRPC endpoint on 127.0.0.1 (a free
//! port), over a memory or SQLite hub, and the generated tonic client connected to it.
#![allow(
    clippy::disallowed_methods,
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_grpc::GrpcConfig;
use taskhub_storage::SystemClock;

#[allow(
    unused_imports,
    reason = "not every test file runs a body on several backends"
)]
pub(crate) use backends::on_backends;
pub use taskhub_test_support::{Backend, TempDir};

/// A deadline only a stuck test reaches.
pub const STUCK: Duration = Duration::from_secs(60);

pub async fn open_hub(backend: Backend, dir: &TempDir) -> TaskHub {
    open_hub_with(backend, dir, |s| s).await
}

/// As [`open_hub`], with the hub's settings changed by `adjust`.
pub async fn open_hub_with(
    backend: Backend,
    dir: &TempDir,
    adjust: impl FnOnce(Settings) -> Settings,
) -> TaskHub {
    let store: Arc<dyn taskhub_storage::TaskHubStore> = match backend {
        Backend::Memory => Arc::new(taskhub_storage::memory::MemoryStore::new(Arc::new(
            SystemClock::new(),
        ))),
        Backend::Sqlite => {
            let opts = taskhub_sqlite::SqliteOptions::new(dir.0.join("hub.db"))
                .with_clock(Arc::new(SystemClock::new()));
            Arc::new(taskhub_sqlite::SqliteStore::open(opts).unwrap())
        }
        Backend::Azure => {
            let text = taskhub_test_support::env::azure_connection_string(
                "cargo test -p taskhub-grpc --test python_sdk_worker",
            );
            let config = taskhub_backends::BackendConfig {
                overrides: vec![taskhub_backends::OptionValue::new(
                    "azure.storage_connection_string",
                    text,
                    taskhub_test_support::env::AZURE_CONNECTION_STRING,
                )],
                hub_name: hub_basics::unique_hub_name("grpc"),
                ..taskhub_backends::BackendConfig::default()
            };
            taskhub_backends::create_store("azure", &config)
                .await
                .expect("open the Azure test hub")
                .store
        }
        other => panic!("the gRPC tests run on memory, SQLite and Azure, not {other:?}"),
    };
    let settings = Settings {
        max_queue_polling_interval: Duration::from_millis(200),
        shutdown_timeout: Duration::from_secs(5),
        ..Settings::default()
    };
    TaskHub::open(store, adjust(settings)).await.unwrap()
}

/// The orchestrations the tests (and the Python SDK script) start:
/// * [`hub_basics::register`]'s: `Hello` (three activities in sequence), `Echo`, `Fails`,
///   `Counter` and `Waiter` (custom status "waiting", then returns the data of the event `Go`);
/// * `Tree`: a `Waiter` sub-orchestration (child ID `{parent}:…`), returns what it returns;
/// * `HelloTree`: a `Hello` sub-orchestration;
/// * `Boom`, the activity `Fails` runs, fails "Kah-BOOOOM!!!";
/// * `counter`: `Counter` under the name the Python SDK gives it.
pub fn registry() -> Registry {
    let mut reg = Registry::new();
    hub_basics::register(&mut reg, "waiting")
        .orchestration(
            "Tree",
            |ctx: OrchestrationContext, _: serde_json::Value| async move {
                let v: serde_json::Value = ctx.call_sub_orchestration("Waiter", ()).await?;
                Ok::<_, OrchestrationError>(v)
            },
        )
        .orchestration(
            "HelloTree",
            |ctx: OrchestrationContext, _: serde_json::Value| async move {
                let v: Vec<String> = ctx.call_sub_orchestration("Hello", ()).await?;
                Ok::<_, OrchestrationError>(v)
            },
        )
        .activity("Boom", |_c: ActivityContext, _: ()| async move {
            Err::<(), _>(ActivityError::new("Kah-BOOOOM!!!"))
        });
    // The Python SDK lowercases entity names: `counter` is the same entity for it.
    reg.entity("counter", hub_basics::counter);
    reg
}

/// A worker and the gRPC endpoint over one hub.
pub struct Server {
    pub addr: SocketAddr,
    pub hub: TaskHub,
    worker: WorkerHandle,
    serving: serving::Serving,
    _dir: TempDir,
}

impl Server {
    /// A worker and the endpoint without a token.
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, None).await
    }

    /// [`start`](Self::start), and a client connected to it.
    pub async fn with_client(backend: Backend) -> (Self, calls::Client) {
        let server = Self::start(backend).await;
        let client = server.client().await;
        (server, client)
    }

    /// A worker and the endpoint, with `token` if given.
    pub async fn start_with(backend: Backend, token: Option<&str>) -> Self {
        Self::start_configured(backend, |c| c.with_token(token.map(str::to_owned))).await
    }

    /// A worker and the endpoint, configured by `configure`.
    pub async fn start_configured(
        backend: Backend,
        configure: impl FnOnce(GrpcConfig) -> GrpcConfig,
    ) -> Self {
        Self::start_with_hub_settings(backend, |s| s, configure).await
    }

    /// A worker and the endpoint, configured by `configure`, over a hub whose settings
    /// `adjust` changes.
    pub async fn start_with_hub_settings(
        backend: Backend,
        adjust: impl FnOnce(Settings) -> Settings,
        configure: impl FnOnce(GrpcConfig) -> GrpcConfig,
    ) -> Self {
        let dir = TempDir::new("grpc");
        let hub = open_hub_with(backend, &dir, adjust).await;
        let worker = Worker::start(&hub, registry()).await.unwrap();
        let serving = serving::Serving::start(configure(GrpcConfig::new(hub.clone()))).await;
        Self {
            addr: serving.addr,
            hub,
            worker,
            serving,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The generated client, connected.
    pub async fn client(&self) -> calls::Client {
        serving::client(self.addr).await
    }

    pub async fn stop(self) {
        self.serving.shut_down().await;
        self.worker.shutdown().await;
    }
}
pub mod backends;
pub mod calls;
pub mod hub_basics;
pub mod script;
pub mod sdk;
pub mod served;
pub mod serving;
