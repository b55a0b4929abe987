//! Runtime settings (DESIGN §6). Names follow the Durable Functions `host.json` ones in snake
//! case. Read from `taskhub.toml`, overridden by `TASKHUB_*` environment variables (and, in
//! the CLI, by flags: see [`SettingsBuilder`]).

mod backend;
mod builder;
mod http;
mod telemetry;
mod versioning;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::error::TaskhubError;
pub use backend::{Backend, Secret, DEFAULT_TASK_HUB_NAME};
pub use builder::SettingsBuilder;
pub use versioning::{compare_versions, VersionFailure, VersionMatch};

/// Every knob of the runtime, with the defaults documented per field.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Partitions (control queues) for new instances, 1 to 16. Default 4.
    pub partition_count: u32,
    /// Messages fetched per control-queue poll, 1 to 32. Default 32.
    pub control_queue_batch_size: usize,
    /// Most control-queue messages buffered in memory per worker. Default 64.
    pub control_queue_buffer_threshold: usize,
    /// Most orchestration turns run at once per worker. Default 100.
    pub max_concurrent_orchestrations: usize,
    /// Most activities run at once per worker. Default 100.
    pub max_concurrent_activities: usize,
    /// Keep orchestrations in memory between turns. Default true.
    pub extended_sessions_enabled: bool,
    /// How long an idle extended session stays in memory. Default 30 s.
    pub extended_session_idle_timeout: Duration,
    /// The most idle extended sessions a worker keeps; beyond it the longest idle one leaves
    /// memory (its next message loads its history again). Default 10,000.
    pub max_extended_sessions: usize,
    /// How long a partition lease lasts without renewal. Default 30 s.
    pub lease_interval: Duration,
    /// How often owned leases are renewed. Default 10 s.
    pub lease_renew_interval: Duration,
    /// How often a worker looks for leases to take. Default 10 s.
    pub lease_acquire_interval: Duration,
    /// The most partitions one worker holds, 1 to 16. Default 16.
    pub max_partitions_per_worker: usize,
    /// How long a partition handover waits for in-flight work. Default 60 s.
    pub partition_drain_timeout: Duration,
    /// How long a removed partition's queue must stay empty before it is retired. Default 60 s.
    pub partition_retire_grace: Duration,
    /// The longest idle poll back-off: the worst wait of a message from another process
    /// (this process's own wake the poller at once). Default 15 s (the original's 30 s).
    pub max_queue_polling_interval: Duration,
    /// Deliveries after which a message goes to the dead-letter store. Default 5.
    pub max_dequeue_count: u32,
    /// Messages larger than this (bytes) keep their body in the large-payload store. Default 45,000.
    pub large_payload_threshold: usize,
    /// Visibility timeout of dequeued control-queue messages. Default 5 min.
    pub control_queue_visibility_timeout: Duration,
    /// Visibility timeout of dequeued work items (renewed while the activity runs). Default 5 min.
    pub work_item_visibility_timeout: Duration,
    /// How long a graceful shutdown waits for in-flight work. Default 30 s.
    pub shutdown_timeout: Duration,
    /// How long `TaskHub::open` and `Worker::start` retry a store that answers busy (or
    /// another retryable error) before failing with `TaskhubError::StoreBusy`. Default 60 s.
    pub startup_busy_timeout: Duration,
    /// This worker's name in lease rows. Default `<hostname>-<pid>`.
    pub worker_id: String,
    /// This worker's orchestration version, compared with each instance's under
    /// `version_match` (DTFx `VersioningSettings.Version`). Default: empty (none).
    pub worker_version: String,
    /// Which instance versions this worker runs: `none` (every one), `strict` (equal to
    /// `worker_version`) or `current_or_older` (`worker_version` or older; numeric dot
    /// components compare as numbers, else as strings). Default `none`.
    pub version_match: VersionMatch,
    /// What this worker does with an instance of a version it does not run: `reject` (give
    /// its messages back to the queue, uncounted, after a delay, for a worker of the right
    /// version) or `fail` (fail the instance with a `VersionMismatch` failure naming both
    /// versions). Default `reject`.
    pub version_failure: VersionFailure,
    /// The version given to instances started by this hub's client without one (DTFx
    /// `DefaultVersion`). Default: empty (they stay unversioned).
    pub default_version: String,
    /// Where the task hub lives: `sqlite` (default) or `azure`. Read by the commands that open
    /// a hub, not by the runtime.
    pub backend: Backend,
    /// The Azure Storage connection string (`UseDevelopmentStorage=true` for Azurite); never
    /// printed. Required when `backend = azure`.
    pub azure_storage_connection_string: Secret,
    /// The task hub's name on Azure Storage: 3 to 45 ASCII letters and digits, starting with a
    /// letter (the original's rule). Default `TaskHub`.
    pub task_hub_name: String,
    /// Entra ID instead of a connection string: the storage account's name (endpoints
    /// `https://<name>.<service>.<suffix>`). Used when `azure_storage_connection_string` is
    /// empty.
    pub azure_storage_account_name: String,
    /// The endpoint suffix with `azure_storage_account_name`; empty for `core.windows.net`.
    pub azure_storage_endpoint_suffix: String,
    /// The Entra ID credential with `azure_storage_account_name`: `client_secret`,
    /// `managed_identity`, or empty (client secret if `azure_client_secret` is set, else the
    /// managed identity).
    pub azure_credential: String,
    /// The directory (tenant) ID of a client-secret credential.
    pub azure_tenant_id: String,
    /// The application (client) ID of a client-secret credential, or a user-assigned managed
    /// identity's client ID (empty: the system-assigned identity).
    pub azure_client_id: String,
    /// The client secret of a client-secret credential; never printed.
    pub azure_client_secret: Secret,
    /// The Entra ID authority for client secrets; empty for `https://login.microsoftonline.com`.
    pub azure_authority_host: String,
    /// The bearer token of the HTTP management API and dashboard (`taskhub serve`, `taskhub
    /// worker --http`); never printed. Required to listen on any address but loopback; when
    /// set, every API request must carry `Authorization: Bearer <token>`. Also read from
    /// `TASKHUB_HTTP_TOKEN`. Default: none.
    pub http_token: Secret,
    /// Where the `taskhub` binary built with its `otlp` feature sends its spans (an OTLP/HTTP
    /// collector such as `http://127.0.0.1:4318`); empty for no export. Also read from
    /// `TASKHUB_OTLP_ENDPOINT`. The runtime itself does not read it. Default: empty.
    pub otlp_endpoint: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            partition_count: 4,
            control_queue_batch_size: 32,
            control_queue_buffer_threshold: 64,
            max_concurrent_orchestrations: 100,
            max_concurrent_activities: 100,
            extended_sessions_enabled: true,
            extended_session_idle_timeout: Duration::from_secs(30),
            max_extended_sessions: 10_000,
            lease_interval: Duration::from_secs(30),
            lease_renew_interval: Duration::from_secs(10),
            lease_acquire_interval: Duration::from_secs(10),
            max_partitions_per_worker: 16,
            partition_drain_timeout: Duration::from_secs(60),
            partition_retire_grace: Duration::from_secs(60),
            max_queue_polling_interval: Duration::from_secs(15),
            max_dequeue_count: 5,
            large_payload_threshold: 45_000,
            control_queue_visibility_timeout: Duration::from_secs(300),
            work_item_visibility_timeout: Duration::from_secs(300),
            shutdown_timeout: Duration::from_secs(30),
            startup_busy_timeout: Duration::from_secs(60),
            worker_id: default_worker_id(),
            worker_version: String::new(),
            version_match: VersionMatch::None,
            version_failure: VersionFailure::Reject,
            default_version: String::new(),
            backend: Backend::Sqlite,
            azure_storage_connection_string: Secret::default(),
            task_hub_name: DEFAULT_TASK_HUB_NAME.to_owned(),
            azure_storage_account_name: String::new(),
            azure_storage_endpoint_suffix: String::new(),
            azure_credential: String::new(),
            azure_tenant_id: String::new(),
            azure_client_id: String::new(),
            azure_client_secret: Secret::default(),
            azure_authority_host: String::new(),
            http_token: Secret::default(),
            otlp_endpoint: String::new(),
        }
    }
}

fn default_worker_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".to_owned());
    format!("{host}-{}", std::process::id())
}

impl Settings {
    /// Checks every value's range.
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] naming the setting and the allowed range.
    pub fn validate(&self) -> Result<(), TaskhubError> {
        let bad = |name: &str, why: &str| {
            Err(TaskhubError::InvalidSetting {
                name: name.to_owned(),
                reason: why.to_owned(),
            })
        };
        if !(1..=16).contains(&self.partition_count) {
            return bad("partition_count", "must be 1 to 16");
        }
        if !(1..=32).contains(&self.control_queue_batch_size) {
            return bad("control_queue_batch_size", "must be 1 to 32");
        }
        if self.control_queue_buffer_threshold < self.control_queue_batch_size {
            return bad(
                "control_queue_buffer_threshold",
                "must be at least control_queue_batch_size",
            );
        }
        if self.max_concurrent_orchestrations == 0 {
            return bad("max_concurrent_orchestrations", "must be at least 1");
        }
        if self.max_concurrent_activities == 0 {
            return bad("max_concurrent_activities", "must be at least 1");
        }
        if self.max_extended_sessions == 0 {
            return bad(
                "max_extended_sessions",
                "must be at least 1 (to keep no session, set extended_sessions_enabled = false)",
            );
        }
        if self.max_dequeue_count == 0 {
            return bad("max_dequeue_count", "must be at least 1");
        }
        if self.large_payload_threshold == 0 || self.large_payload_threshold > 60_000 {
            return bad(
                "large_payload_threshold",
                "must be 1 to 60000 bytes (queue messages are at most 64 KB)",
            );
        }
        if self.lease_renew_interval >= self.lease_interval {
            return bad(
                "lease_renew_interval",
                "must be shorter than lease_interval",
            );
        }
        if self.lease_acquire_interval.is_zero() {
            return bad("lease_acquire_interval", "must be greater than zero");
        }
        if !(1..=16).contains(&self.max_partitions_per_worker) {
            return bad("max_partitions_per_worker", "must be 1 to 16");
        }
        if self.max_queue_polling_interval.is_zero() {
            return bad("max_queue_polling_interval", "must be greater than zero");
        }
        if self.worker_id.is_empty() {
            return bad("worker_id", "must not be empty");
        }
        if self.version_match != VersionMatch::None && self.worker_version.is_empty() {
            return bad(
                "version_match",
                "needs a worker_version to compare instance versions with",
            );
        }
        backend::validate(self)
    }

    /// Defaults, then `path` if it exists, then `TASKHUB_*` variables from `env`, validated.
    /// To apply more sources (command-line flags) before validating, use [`SettingsBuilder`].
    ///
    /// # Errors
    /// A clear error for an unreadable file, an unknown key, or a value of the wrong type or
    /// out of range, naming the setting and where its value came from.
    pub fn load(path: Option<&Path>, env: &HashMap<String, String>) -> Result<Self, TaskhubError> {
        let mut builder = SettingsBuilder::new();
        if let Some(path) = path {
            builder.file(path)?;
        }
        builder.env(env).build()
    }

    /// Sets one setting from its text form (as in `taskhub.toml`, an environment variable or a
    /// CLI flag). Durations accept seconds (`30`, `0.5`) or a unit (`500ms`, `30s`, `5m`, `1h`).
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] for an unknown name or a malformed value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), TaskhubError> {
        let err = |why: String| TaskhubError::InvalidSetting {
            name: name.to_owned(),
            reason: why,
        };
        let int = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|e| err(format!("expected a whole number, got {v:?}: {e}")))
        };
        let size =
            |v: &str| int(v).and_then(|n| usize::try_from(n).map_err(|e| err(e.to_string())));
        let boolean = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(err(format!("expected true or false, got {v:?}"))),
        };
        let dur = |v: &str| {
            parse_duration(v).ok_or_else(|| {
                err(format!(
                    "expected a duration such as 30, 30s or 500ms, got {v:?}"
                ))
            })
        };
        match name {
            "partition_count" => {
                self.partition_count = u32::try_from(int(value)?).map_err(|e| err(e.to_string()))?
            }
            "control_queue_batch_size" => self.control_queue_batch_size = size(value)?,
            "control_queue_buffer_threshold" => self.control_queue_buffer_threshold = size(value)?,
            "max_concurrent_orchestrations" => self.max_concurrent_orchestrations = size(value)?,
            "max_concurrent_activities" => self.max_concurrent_activities = size(value)?,
            "extended_sessions_enabled" => self.extended_sessions_enabled = boolean(value)?,
            "extended_session_idle_timeout" => self.extended_session_idle_timeout = dur(value)?,
            "max_extended_sessions" => self.max_extended_sessions = size(value)?,
            "lease_interval" => self.lease_interval = dur(value)?,
            "lease_renew_interval" => self.lease_renew_interval = dur(value)?,
            "lease_acquire_interval" => self.lease_acquire_interval = dur(value)?,
            "max_partitions_per_worker" => self.max_partitions_per_worker = size(value)?,
            "partition_drain_timeout" => self.partition_drain_timeout = dur(value)?,
            "partition_retire_grace" => self.partition_retire_grace = dur(value)?,
            "max_queue_polling_interval" => self.max_queue_polling_interval = dur(value)?,
            "max_dequeue_count" => {
                self.max_dequeue_count =
                    u32::try_from(int(value)?).map_err(|e| err(e.to_string()))?
            }
            "large_payload_threshold" => self.large_payload_threshold = size(value)?,
            "control_queue_visibility_timeout" => {
                self.control_queue_visibility_timeout = dur(value)?
            }
            "work_item_visibility_timeout" => self.work_item_visibility_timeout = dur(value)?,
            "shutdown_timeout" => self.shutdown_timeout = dur(value)?,
            "startup_busy_timeout" => self.startup_busy_timeout = dur(value)?,
            "durability" => {
                return Err(err(format!(
                    "durability is an option of the SQLite backend: set it under [{BACKEND_SQLITE}] in taskhub.toml ([{BACKEND_SQLITE}] durability = {value:?}), with TASKHUB_DURABILITY, or with --durability"
                )))
            }
            "worker_id" => value.trim().clone_into(&mut self.worker_id),
            "worker_version" => value.trim().clone_into(&mut self.worker_version),
            "default_version" => value.trim().clone_into(&mut self.default_version),
            "version_match" => self.version_match = value.parse().map_err(err)?,
            "version_failure" => self.version_failure = value.parse().map_err(err)?,
            n if backend::KEYS.contains(&n) => backend::set(self, n, value)?,
            n if http::KEYS.contains(&n) => http::set(self, n, value),
            n if telemetry::KEYS.contains(&n) => telemetry::set(self, n, value)?,
            _ => {
                return Err(err(format!(
                    "unknown setting (known: {})",
                    KNOWN.join(", ")
                )))
            }
        }
        Ok(())
    }
}

/// The tables of `taskhub.toml` that belong to a backend (read by the backend's crate, e.g.
/// `taskhub_sqlite::SqliteOptions::apply_file`); the runtime settings skip them.
pub const BACKEND_TABLES: [&str; 2] = [BACKEND_SQLITE, "azure"];

const BACKEND_SQLITE: &str = "sqlite";

/// Every setting name.
pub const KNOWN: [&str; 38] = [
    "partition_count",
    "control_queue_batch_size",
    "control_queue_buffer_threshold",
    "max_concurrent_orchestrations",
    "max_concurrent_activities",
    "extended_sessions_enabled",
    "extended_session_idle_timeout",
    "max_extended_sessions",
    "lease_interval",
    "lease_renew_interval",
    "lease_acquire_interval",
    "max_partitions_per_worker",
    "partition_drain_timeout",
    "partition_retire_grace",
    "max_queue_polling_interval",
    "max_dequeue_count",
    "large_payload_threshold",
    "control_queue_visibility_timeout",
    "work_item_visibility_timeout",
    "shutdown_timeout",
    "startup_busy_timeout",
    "worker_id",
    "worker_version",
    "version_match",
    "version_failure",
    "default_version",
    "backend",
    "azure_storage_connection_string",
    "task_hub_name",
    "azure_storage_account_name",
    "azure_storage_endpoint_suffix",
    "azure_credential",
    "azure_tenant_id",
    "azure_client_id",
    "azure_client_secret",
    "azure_authority_host",
    "http_token",
    "otlp_endpoint",
];

/// Parses `30`, `0.5`, `500ms`, `30s`, `5m`, `1h`.
#[must_use]
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(v * scale).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_override_and_errors_name_the_setting() {
        let dir = std::env::temp_dir().join(format!("taskhub-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("taskhub.toml");
        std::fs::write(
            &path,
            "partition_count = 8\nlease_interval = \"45s\"\nextended_sessions_enabled = false\n",
        )
        .unwrap();
        let env = HashMap::from([
            ("TASKHUB_PARTITION_COUNT".to_owned(), "2".to_owned()),
            ("OTHER".to_owned(), "x".to_owned()),
        ]);
        let s = Settings::load(Some(&path), &env).unwrap();
        assert_eq!(s.partition_count, 2);
        assert_eq!(s.lease_interval, Duration::from_secs(45));
        assert!(!s.extended_sessions_enabled);

        std::fs::write(&path, "partition_count = 17\n").unwrap();
        let err = Settings::load(Some(&path), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("partition_count") && err.contains("1 to 16"),
            "{err}"
        );
        std::fs::write(&path, "bogus = 1\n").unwrap();
        let err = Settings::load(Some(&path), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bogus") && err.contains("unknown setting"),
            "{err}"
        );
        let env = HashMap::from([("TASKHUB_LEASE_INTERVAL".to_owned(), "soon".to_owned())]);
        let err = Settings::load(None, &env).unwrap_err().to_string();
        assert!(err.contains("lease_interval"), "{err}");
        let env = HashMap::from([("TASKHUB_MAX_EXTENDED_SESSIONS".to_owned(), "0".to_owned())]);
        let err = Settings::load(None, &env).unwrap_err().to_string();
        assert!(
            err.contains("max_extended_sessions") && err.contains("at least 1"),
            "{err}"
        );
        let env = HashMap::from([("TASKHUB_MAX_EXTENDED_SESSIONS".to_owned(), "500".to_owned())]);
        assert_eq!(
            Settings::load(None, &env).unwrap().max_extended_sessions,
            500
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5m"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("x"), None);
    }
}
