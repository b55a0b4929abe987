//! Runtime settings (DESIGN §6). Names follow the Durable Functions `host.json` ones in snake
//! case. Read from `taskhub.toml`, overridden by `TASKHUB_*` environment variables (and, in
//! the CLI, by flags: see [`SettingsBuilder`]).
//!
//! [`Settings`] is the one source of truth: its serde field names are the setting names (and
//! `TASKHUB_<NAME>` the variables), its [`Default`] the defaults, its field docs the docs; a
//! value is read by the field's serde helper (`text.rs`: numbers, booleans, humantime
//! durations, enums by their text form), whether it comes from the file or as text.
//!
//! The settings hold only what the runtime reads, plus `task_hub_name` (which the HTTP API
//! reports): no backend choice, credentials, `http_token` or `otlp_endpoint`. A backend's
//! options are its crate's; the CLI's own are the CLI's.

mod builder;
mod text;
mod versioning;

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::client::tags::{self, TagCaps};
use crate::error::TaskhubError;
pub use builder::SettingsBuilder;
pub use text::parse_duration;
pub use versioning::{compare_versions, VersionFailure, VersionMatch};

/// Every knob of the runtime, with the defaults documented per field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Partitions (control queues) for new instances, 1 to 16. Default 4.
    #[serde(deserialize_with = "text::number")]
    pub partition_count: u32,
    /// Messages fetched per control-queue poll, 1 to 32. Default 32.
    #[serde(deserialize_with = "text::number")]
    pub control_queue_batch_size: usize,
    /// Most control-queue messages buffered in memory per worker. Default 64. A batch whose
    /// turn waits on a remote executor's decision frees its slots for the wait.
    #[serde(deserialize_with = "text::number")]
    pub control_queue_buffer_threshold: usize,
    /// Most orchestration turns run at once per worker. Default 100. A turn waiting on a remote
    /// executor's decision lends its slot for the wait (the executor bounds those).
    #[serde(deserialize_with = "text::number")]
    pub max_concurrent_orchestrations: usize,
    /// Most activities run at once per worker. Default 100.
    #[serde(deserialize_with = "text::number")]
    pub max_concurrent_activities: usize,
    /// Keep orchestrations in memory between turns. Default true.
    #[serde(deserialize_with = "text::boolean")]
    pub extended_sessions_enabled: bool,
    /// How long an idle extended session stays in memory. Default 30 s.
    #[serde(with = "text::duration")]
    pub extended_session_idle_timeout: Duration,
    /// The most idle extended sessions a worker keeps; beyond it the longest idle one leaves
    /// memory (its next message loads its history again). Default 10,000.
    #[serde(deserialize_with = "text::number")]
    pub max_extended_sessions: usize,
    /// How long a partition lease lasts without renewal. Default 30 s.
    #[serde(with = "text::duration")]
    pub lease_interval: Duration,
    /// How often owned leases are renewed. Default 10 s.
    #[serde(with = "text::duration")]
    pub lease_renew_interval: Duration,
    /// How often a worker looks for leases to take. Default 10 s.
    #[serde(with = "text::duration")]
    pub lease_acquire_interval: Duration,
    /// How often a process renews its record in the hub's process registry (which the CLI's
    /// `workers` lists and a migration checks for processes of an older build), and looks
    /// whether a newer build migrated the hub. Greater than zero and at most a third of the
    /// registry's 60 s liveness window. Default 10 s.
    #[serde(with = "text::duration")]
    pub process_heartbeat_interval: Duration,
    /// The most partitions one worker holds, 1 to 16. Default 16.
    #[serde(deserialize_with = "text::number")]
    pub max_partitions_per_worker: usize,
    /// How long a partition handover waits for in-flight work. Default 60 s.
    #[serde(with = "text::duration")]
    pub partition_drain_timeout: Duration,
    /// How long a removed partition's queue must stay empty before it is retired. Default 60 s.
    #[serde(with = "text::duration")]
    pub partition_retire_grace: Duration,
    /// The longest idle poll back-off: the worst wait of a message from another process
    /// (this process's own wake the poller at once). Default 15 s (the original's 30 s).
    #[serde(with = "text::duration")]
    pub max_queue_polling_interval: Duration,
    /// The longest idle poll back-off of the work-item queue, which since claimed work items
    /// carries only work items a worker had no free slot for (whose sender rings the other
    /// workers' pollers through its lease row: see the worker's `doorbell` module) and
    /// orphans of crashed workers. The poller uses the lower of this and four times
    /// `max_queue_polling_interval` (see [`Settings::work_item_polling_cap`]). Default 60 s.
    #[serde(with = "text::duration")]
    pub max_work_item_polling_interval: Duration,
    /// Deliveries after which a message goes to the dead-letter store. Default 5.
    #[serde(deserialize_with = "text::number")]
    pub max_dequeue_count: u32,
    /// Messages larger than this (bytes) keep their body in the large-payload store. Default 45,000.
    #[serde(deserialize_with = "text::number")]
    pub large_payload_threshold: usize,
    /// Visibility timeout of dequeued control-queue messages. Default 5 min.
    #[serde(with = "text::duration")]
    pub control_queue_visibility_timeout: Duration,
    /// Visibility timeout of dequeued work items (renewed while the activity runs). Default 5 min.
    #[serde(with = "text::duration")]
    pub work_item_visibility_timeout: Duration,
    /// How long a graceful shutdown waits for in-flight work. Default 30 s.
    #[serde(with = "text::duration")]
    pub shutdown_timeout: Duration,
    /// How long `TaskHub::open` and `Worker::start` retry a store that answers busy (or
    /// another retryable error) before failing with `TaskhubError::StoreBusy`. Default 60 s.
    #[serde(with = "text::duration")]
    pub startup_busy_timeout: Duration,
    /// This worker's name in lease rows. Default `<hostname>-<pid>`.
    #[serde(deserialize_with = "text::trimmed")]
    pub worker_id: String,
    /// This worker's orchestration version, compared with each instance's under
    /// `version_match` (DTFx `VersioningSettings.Version`). Default: empty (none).
    #[serde(deserialize_with = "text::trimmed")]
    pub worker_version: String,
    /// Which instance versions this worker runs: `none` (every one), `strict` (equal to
    /// `worker_version`) or `current_or_older` (`worker_version` or older; numeric dot
    /// components compare as numbers, else as strings). Default `none`.
    #[serde(deserialize_with = "text::parsed", serialize_with = "text::display")]
    pub version_match: VersionMatch,
    /// What this worker does with an instance of a version it does not run: `reject` (give
    /// its messages back to the queue, uncounted, after a delay, for a worker of the right
    /// version) or `fail` (fail the instance with a `VersionMismatch` failure naming both
    /// versions). Default `reject`.
    #[serde(deserialize_with = "text::parsed", serialize_with = "text::display")]
    pub version_failure: VersionFailure,
    /// The version given to instances started by this hub's client without one (DTFx
    /// `DefaultVersion`). Default: empty (they stay unversioned).
    #[serde(deserialize_with = "text::trimmed")]
    pub default_version: String,
    /// The task hub's name: 3 to 45 ASCII letters and digits, starting with a letter (the
    /// original's rule). Backends that keep several hubs in one place (the tables of an Azure
    /// Storage account) find the hub by it; the HTTP API reports it. Default `TaskHub`.
    #[serde(deserialize_with = "text::trimmed")]
    pub task_hub_name: String,
    /// The most tags a start may give an instance (`StartOptions::tags`); one more is refused
    /// with `TaskhubError::InvalidTag` naming `max_tags`. At most 200, and with the two caps
    /// below at most 768 KiB of tags per instance row (see `client::tags`). Default 32.
    #[serde(deserialize_with = "text::number")]
    pub max_tags: usize,
    /// The longest tag key, in characters, 1 to 125 (in starts and in tag filters); a longer
    /// one is refused naming `max_tag_key_chars`. Default 64.
    #[serde(deserialize_with = "text::number")]
    pub max_tag_key_chars: usize,
    /// The longest tag value, in characters, at most 16,384 (in starts and in tag filters); a
    /// longer one is refused naming `max_tag_value_chars`. Default 256.
    #[serde(deserialize_with = "text::number")]
    pub max_tag_value_chars: usize,
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
            process_heartbeat_interval: Duration::from_secs(10),
            max_partitions_per_worker: 16,
            partition_drain_timeout: Duration::from_secs(60),
            partition_retire_grace: Duration::from_secs(60),
            max_queue_polling_interval: Duration::from_secs(15),
            max_work_item_polling_interval: Duration::from_secs(60),
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
            task_hub_name: DEFAULT_TASK_HUB_NAME.to_owned(),
            max_tags: tags::DEFAULT_MAX_TAGS,
            max_tag_key_chars: tags::DEFAULT_MAX_TAG_KEY_CHARS,
            max_tag_value_chars: tags::DEFAULT_MAX_TAG_VALUE_CHARS,
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
    /// The longest idle wait of the work-item poller: `max_work_item_polling_interval`, but no
    /// more than four times `max_queue_polling_interval` (so lowering that one for quicker
    /// pickup, as tests and demos do, lowers both).
    #[must_use]
    pub fn work_item_polling_cap(&self) -> Duration {
        self.max_work_item_polling_interval
            .min(self.max_queue_polling_interval.saturating_mul(4))
    }

    /// How long a loader watches a torn checkpoint's pending outbox itself before it sends its
    /// messages again: a lease interval (after which a live writer that held the lease when it
    /// committed has stopped working on the partition: it stops on its own when it has not
    /// renewed for that long), and at least `work_item_visibility_timeout` plus the longest
    /// work-item poll, so that a work item the writer claimed, hidden when it stopped, has
    /// surfaced and been picked up by a poller, and its result can be seen and the work item
    /// left out. Default 6 minutes.
    #[must_use]
    pub fn torn_outbox_grace(&self) -> Duration {
        let claimed_surface = self
            .work_item_visibility_timeout
            .saturating_add(self.work_item_polling_cap());
        self.lease_interval.max(claimed_surface)
    }

    /// The caps on an instance's tags: `max_tags`, `max_tag_key_chars`, `max_tag_value_chars`.
    #[must_use]
    pub fn tag_caps(&self) -> TagCaps {
        TagCaps::of(self)
    }

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
        if self.process_heartbeat_interval.is_zero()
            || self.process_heartbeat_interval > taskhub_storage::PROCESS_LIVENESS_WINDOW / 3
        {
            return bad(
                "process_heartbeat_interval",
                "must be greater than zero and at most 20s (a third of the 60s liveness window)",
            );
        }
        if self.lease_acquire_interval.is_zero() {
            return bad("lease_acquire_interval", "must be greater than zero");
        }
        if !(1..=16).contains(&self.max_partitions_per_worker) {
            return bad("max_partitions_per_worker", "must be 1 to 16");
        }
        for (name, value) in [
            (
                "work_item_visibility_timeout",
                self.work_item_visibility_timeout,
            ),
            (
                "control_queue_visibility_timeout",
                self.control_queue_visibility_timeout,
            ),
            (
                "max_queue_polling_interval",
                self.max_queue_polling_interval,
            ),
            (
                "max_work_item_polling_interval",
                self.max_work_item_polling_interval,
            ),
        ] {
            if value.is_zero() {
                return bad(name, "must be greater than zero");
            }
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
        let name = &self.task_hub_name;
        if !(3..=45).contains(&name.len())
            || !name.chars().all(|c| c.is_ascii_alphanumeric())
            || !name.starts_with(|c: char| c.is_ascii_alphabetic())
        {
            return Err(TaskhubError::InvalidSetting {
                name: "task_hub_name".to_owned(),
                reason: format!(
                    "{name:?} must be 3 to 45 ASCII letters and digits, starting with a letter"
                ),
            });
        }
        // The tag caps: within what every backend can store in an instance row.
        self.tag_caps().check_bounds()?;
        Ok(())
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
    /// CLI flag). Durations accept seconds (`30`, `0.5`) or humantime's units (`500ms`, `30s`,
    /// `5m`, `1h 30m`).
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] for an unknown name or a malformed value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), TaskhubError> {
        self.set_value(name, serde_json::Value::String(value.to_owned()))
    }

    /// Sets one setting from a value of `taskhub.toml` (a string, number or boolean), read by
    /// the field's own serde helper.
    fn set_value(&mut self, name: &str, value: serde_json::Value) -> Result<(), TaskhubError> {
        let err = |why: String| TaskhubError::InvalidSetting {
            name: name.to_owned(),
            reason: why,
        };
        if name == "durability" {
            return Err(err(format!(
                "durability is an option of the SQLite backend: set it under [{BACKEND_SQLITE}] in taskhub.toml ([{BACKEND_SQLITE}] durability = {value}), with TASKHUB_DURABILITY, or with --durability"
            )));
        }
        if !is_known(name) {
            return Err(err(format!(
                "unknown setting (known: {})",
                names().join(", ")
            )));
        }
        let mut fields = match serde_json::to_value(&*self) {
            Ok(serde_json::Value::Object(fields)) => fields,
            Ok(_) => return Err(err("settings are not a table".to_owned())),
            Err(e) => return Err(err(e.to_string())),
        };
        fields.insert(name.to_owned(), value);
        *self = serde_json::from_value(serde_json::Value::Object(fields))
            .map_err(|e| err(e.to_string()))?;
        Ok(())
    }
}

/// The default task hub name.
pub const DEFAULT_TASK_HUB_NAME: &str = "TaskHub";

/// Every setting name, sorted: the serde names of [`Settings`]' fields.
#[must_use]
pub fn names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| match serde_json::to_value(Settings::default()) {
        Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
        _ => Vec::new(),
    })
}

/// True if `name` is a setting.
#[must_use]
pub fn is_known(name: &str) -> bool {
    names().iter().any(|n| n == name)
}

/// The table of `taskhub.toml` that holds the SQLite backend's options, named by the hint for
/// a misplaced top-level `durability`.
const BACKEND_SQLITE: &str = "sqlite";

/// What the settings' tests share.
#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::Settings;

    /// Writes `text` as `taskhub.toml` in a directory of this process named for `tag`.
    pub(crate) fn settings_file(tag: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("taskhub-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("taskhub.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The error of loading the defaults with the one variable `var` set to `value`.
    pub(crate) fn env_error(var: &str, value: &str) -> String {
        let env = HashMap::from([(var.to_owned(), value.to_owned())]);
        Settings::load(None, &env).unwrap_err().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{env_error, settings_file};
    use super::*;

    #[test]
    fn the_work_item_polling_cap_is_the_setting_at_most_four_queue_intervals() {
        let s = Settings::default();
        assert_eq!(s.work_item_polling_cap(), Duration::from_secs(60));
        let quick = Settings {
            max_queue_polling_interval: Duration::from_millis(100),
            ..Settings::default()
        };
        assert_eq!(quick.work_item_polling_cap(), Duration::from_millis(400));
        let zero = Settings {
            max_work_item_polling_interval: Duration::ZERO,
            ..Settings::default()
        };
        match zero.validate() {
            Err(TaskhubError::InvalidSetting { name, .. }) => {
                assert_eq!(name, "max_work_item_polling_interval");
            }
            other => panic!("expected InvalidSetting, got {other:?}"),
        }
    }

    #[test]
    fn the_task_hub_name_follows_the_original_rule() {
        let mut s = Settings::default();
        assert_eq!(s.task_hub_name, DEFAULT_TASK_HUB_NAME);
        for bad in ["ab", "1hub", "my-hub", &"h".repeat(46)] {
            s.set("task_hub_name", bad).unwrap();
            let err = s.validate().unwrap_err().to_string();
            assert!(err.contains("task_hub_name"), "{bad}: {err}");
        }
        s.set("task_hub_name", " Hub1 ").unwrap();
        assert_eq!(s.task_hub_name, "Hub1");
        s.validate().unwrap();
    }

    /// The error of loading `path` after writing `text` to it.
    fn file_error(path: &Path, text: &str) -> String {
        std::fs::write(path, text).unwrap();
        Settings::load(Some(path), &HashMap::new())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn file_then_env_override_and_errors_name_the_setting() {
        let path = settings_file(
            "settings",
            "partition_count = 8\nlease_interval = \"45s\"\nextended_sessions_enabled = false\n",
        );
        let env = HashMap::from([
            ("TASKHUB_PARTITION_COUNT".to_owned(), "2".to_owned()),
            ("OTHER".to_owned(), "x".to_owned()),
        ]);
        let s = Settings::load(Some(&path), &env).unwrap();
        assert_eq!(s.partition_count, 2);
        assert_eq!(s.lease_interval, Duration::from_secs(45));
        assert!(!s.extended_sessions_enabled);

        let err = file_error(&path, "partition_count = 17\n");
        assert!(
            err.contains("partition_count") && err.contains("1 to 16"),
            "{err}"
        );
        let err = file_error(&path, "bogus = 1\n");
        assert!(
            err.contains("bogus") && err.contains("unknown setting"),
            "{err}"
        );
        let err = env_error("TASKHUB_LEASE_INTERVAL", "soon");
        assert!(err.contains("lease_interval"), "{err}");
        let err = env_error("TASKHUB_MAX_EXTENDED_SESSIONS", "0");
        assert!(
            err.contains("max_extended_sessions") && err.contains("at least 1"),
            "{err}"
        );
        let env = HashMap::from([("TASKHUB_MAX_EXTENDED_SESSIONS".to_owned(), "500".to_owned())]);
        assert_eq!(
            Settings::load(None, &env).unwrap().max_extended_sessions,
            500
        );
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }
}
