//! A hub of its own on a backend that runs as a service (Azure Storage on Azurite, PostgreSQL
//! on a throwaway server), driven through the `taskhub` binary: every run checks that the
//! service's secret (the account key, the password) is never printed.

use std::process::{Command, Output};

use taskhub_backends::{BackendConfig, OpenedStore, OptionValue};
pub use taskhub_test_support::Backend;

use super::{taskhub, wait_until, TempDir, WorkerChild, STUCK};

/// Azurite's well-known account key (the tests' accounts all use it).
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// How the CLI reaches a service backend: the variable and the setting that name the service,
/// and how the CLI names the backend to the user.
#[derive(Debug, Clone, Copy)]
pub struct Service {
    /// The matrix's backend.
    pub backend: Backend,
    /// The `TASKHUB_*` variable the CLI reads the connection from.
    pub variable: &'static str,
    /// The setting that variable sets, as errors name it.
    pub setting: &'static str,
    /// The backend as the demo names it (`'hub' on …`).
    pub display: &'static str,
    /// What `hub delete` says it deleted.
    pub deleted: &'static str,
}

impl Service {
    /// The service behind `backend`; panics for a backend that is not one.
    pub fn of(backend: Backend) -> Self {
        Self::all()
            .into_iter()
            .find(|s| s.backend == backend)
            .unwrap_or_else(|| panic!("{} is not a service backend", backend.name()))
    }

    /// Every service backend the suite covers.
    pub fn all() -> [Self; 2] {
        [
            Self {
                backend: Backend::Azure,
                variable: "TASKHUB_AZURE_STORAGE_CONNECTION_STRING",
                setting: "azure.storage_connection_string",
                display: "Azure Storage",
                deleted: "its queues, tables and blob container",
            },
            Self {
                backend: Backend::Postgres,
                variable: "TASKHUB_POSTGRES_URL",
                setting: "postgres.url",
                display: "PostgreSQL",
                deleted: "schema",
            },
        ]
    }

    /// The test service's connection (Azurite's connection string, the server's URL).
    pub fn test_connection(self) -> String {
        let command = "scripts/with-azurite.sh scripts/with-postgres.sh cargo test -p taskhub-cli \
                       --test service_backends";
        match self.backend {
            Backend::Azure => taskhub_test_support::env::azure_connection_string(command),
            Backend::Postgres => taskhub_test_support::env::postgres_url(command),
            other => panic!("{} is not a service backend", other.name()),
        }
    }

    /// A connection to `127.0.0.1:port` with the secrets of the test service's kind.
    pub fn connection_to_port(self, port: u16) -> String {
        match self.backend {
            Backend::Azure => {
                let base = format!("http://127.0.0.1:{port}/devstoreaccount1");
                format!(
                    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
                     AccountKey={AZURITE_KEY};BlobEndpoint={base};QueueEndpoint={base};\
                     TableEndpoint={base}"
                )
            }
            Backend::Postgres => {
                format!("postgres://taskhub:n0t-the-password@127.0.0.1:{port}/postgres")
            }
            other => panic!("{} is not a service backend", other.name()),
        }
    }

    /// What the one error line for a service unreachable at `port` says besides the setting:
    /// how to start Azurite; the server's port.
    pub fn unreachable_hint(self, port: u16) -> String {
        match self.backend {
            Backend::Azure => "azurite".to_owned(),
            _ => port.to_string(),
        }
    }

    /// The secret of `connection` that no output may show.
    fn secret(self, connection: &str) -> String {
        match self.backend {
            Backend::Postgres => url_password(connection),
            _ => AZURITE_KEY.to_owned(),
        }
    }
}

/// The password of a URL.
fn url_password(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let userinfo = after_scheme.split_once('@').map_or("", |(u, _)| u);
    userinfo
        .split_once(':')
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

/// A hub with a name of its own on a service backend.
pub struct ServiceHub {
    pub dir: TempDir,
    pub name: String,
    pub service: Service,
    /// The connection the CLI is given.
    pub connection: String,
}

impl ServiceHub {
    /// A fresh hub on the test service of `backend`.
    pub fn new(backend: Backend, tag: &str) -> Self {
        let service = Service::of(backend);
        Self {
            dir: TempDir::new(tag),
            name: unique_hub_name(),
            service,
            connection: service.test_connection(),
        }
    }

    /// `taskhub --backend <name> args...` on this hub.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = taskhub(&self.dir.0);
        cmd.env(self.service.variable, &self.connection)
            .env("TASKHUB_TASK_HUB_NAME", &self.name)
            .args(["--backend", self.service.backend.name()])
            .args(args);
        cmd
    }

    /// Runs `args`, checking that neither stream shows the service's secret.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        let secret = self.service.secret(&self.connection);
        assert!(!secret.is_empty());
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !String::from_utf8_lossy(text).contains(&secret),
                "the secret must never be printed"
            );
        }
        out
    }

    /// Stdout of a run that must succeed.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "taskhub {args:?} failed: {stderr}\n{stdout}"
        );
        stdout
    }

    /// Stderr of a run that must fail with exit code 1, without a panic.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "taskhub {args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        stderr
    }

    /// The JSON stdout of a run that must succeed.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// The partition rows `partitions --json` shows.
    pub fn partitions(&self) -> Vec<serde_json::Value> {
        self.json(&["partitions", "--json"])["partitions"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// The status `instances show` gives `id` (empty if it has none).
    pub fn status(&self, id: &str) -> String {
        self.json(&["instances", "show", id, "--json"])["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until `id` has `status`.
    pub fn wait_status(&self, id: &str, status: &str) {
        wait_until(STUCK, || (self.status(id) == status).then_some(()));
    }

    /// `taskhub worker` on this hub with short polling and leases.
    pub fn worker(&self) -> WorkerChild {
        WorkerChild::spawn(self.cmd(&[
            "--set",
            "max_queue_polling_interval=100ms",
            "--set",
            "lease_interval=4s",
            "--set",
            "lease_renew_interval=1s",
            "--set",
            "lease_acquire_interval=1s",
            "worker",
        ]))
    }

    /// The hub's store, opened directly (it must exist).
    pub fn store(&self) -> OpenedStore {
        let config = BackendConfig {
            overrides: vec![OptionValue::new(
                self.service.setting,
                &self.connection,
                "the test",
            )],
            hub_name: self.name.clone(),
            ..BackendConfig::default()
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(taskhub_backends::open_store(
            self.service.backend.name(),
            &config,
        ))
        .unwrap()
    }
}

/// A hub name no other test run uses: the process, a counter and the time.
fn unique_hub_name() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("cli{}x{n}x{:x}", std::process::id(), nanos % (1 << 40))
}

/// Runs each named `fn name(backend: Backend)` of the calling module on the service backend
/// it is listed under, as a `#[test]` in a module named after the backend (`azure::name`):
///
/// ```ignore
/// on_services! {
///     azure: demo_runs, never_answers;
///     postgres: demo_runs;
/// }
/// ```
#[macro_export]
macro_rules! on_services {
    (@variant azure) => { $crate::common::service_hub::Backend::Azure };
    (@variant postgres) => { $crate::common::service_hub::Backend::Postgres };
    (@module $backend:ident $($name:ident),+) => {
        mod $backend {
            $(
                #[test]
                fn $name() {
                    super::$name($crate::on_services!(@variant $backend))
                }
            )+
        }
    };
    ($($backend:ident: $($name:ident),+ $(,)?;)+) => {
        $( $crate::on_services!(@module $backend $($name),+); )+
    };
}
