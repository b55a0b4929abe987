//! The `taskhub` binary's own settings, beside the runtime's: `backend` (which backend the
//! hub lives on), `http_token` (the HTTP API's and gRPC endpoint's bearer token),
//! `otlp_endpoint` (where spans go) and the `grpc_*` timeouts and limits of SDK workers
//! (`taskhub worker --grpc`). Top-level keys of `taskhub.toml`, `TASKHUB_<NAME>`
//! variables, `--set name=value`, and `--backend`; their table in `docs/SETTINGS.md` is
//! checked against [`CliSettings::default`] by the test below.

use std::fmt;
use std::time::Duration;

use taskhub::settings::parse_duration;
use taskhub_grpc::{DispatcherSettings, Limits, RequestCaps};

/// A secret value: `Debug` never shows it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for the code that uses it (never for printing).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() {
            "Secret(<empty>)"
        } else {
            "Secret(<redacted>)"
        })
    }
}

/// The binary's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliSettings {
    /// Where the task hub lives: a name of `taskhub_backends::BACKENDS` (`sqlite`, `azure`,
    /// `postgres`).
    /// Default `sqlite`.
    pub backend: String,
    /// The bearer token of the HTTP management API, the dashboard and the gRPC endpoint
    /// (`taskhub serve`, `taskhub worker --http`); never printed. Required to listen on any
    /// address but loopback. Default: none.
    pub http_token: Secret,
    /// Where the binary built with its `otlp` feature sends its spans (an OTLP/HTTP collector
    /// such as `http://127.0.0.1:4318`); empty for no export. Default: none.
    pub otlp_endpoint: String,
    /// How long an SDK worker connected to `taskhub worker --grpc` may take over one
    /// orchestration turn before it is taken back and retried. Default 5 minutes.
    pub grpc_orchestration_timeout: Duration,
    /// How long an SDK worker may take over one activity before it is taken back and
    /// retried. Default 30 minutes.
    pub grpc_activity_timeout: Duration,
    /// How long an SDK worker may take over one entity batch before it is taken back and
    /// retried. Default 2 minutes.
    pub grpc_entity_timeout: Duration,
    /// How long a work item for SDK workers waits while none is connected before the turn
    /// or activity is given back to be tried again later. Default 30 seconds.
    pub grpc_worker_wait: Duration,
    /// How many MiB of encoded history the gRPC endpoint keeps between an instance's turns,
    /// so that a turn encodes only the events new to it; 0 keeps none. Default 64.
    pub grpc_history_cache_mib: usize,
    /// The most connections the HTTP API and the gRPC endpoint each keep open at once; one
    /// more is closed as soon as it is accepted. Default 1000.
    pub http_max_connections: usize,
    /// How long a new connection to either endpoint may take to send its first request
    /// before it is closed. Default 10 seconds.
    pub http_first_request_timeout: Duration,
    /// How long a connection to either endpoint may stay open with no call in flight.
    /// Default 2 minutes.
    pub http_idle_timeout: Duration,
    /// How often the gRPC endpoint pings an HTTP/2 connection, and how long its peer has to
    /// answer. Default 30 seconds.
    pub http_keepalive_interval: Duration,
    /// The longest orchestration, event or operation name, and version, a gRPC client call
    /// may send, in bytes. Default 1024.
    pub grpc_max_name_bytes: usize,
    /// The most work items that may wait unread on one SDK worker's stream (it gets nothing
    /// more until it reads). Default 1000.
    pub grpc_stream_queue_items: usize,
    /// The most MiB of work items that may wait unread on one SDK worker's stream. Default 16.
    pub grpc_stream_queue_mib: usize,
    /// How long an SDK worker's stream may leave work items unread before it is closed and
    /// its items go to other workers. Default 60 seconds.
    pub grpc_stream_read_timeout: Duration,
    /// The most actions one orchestration turn of an SDK worker may answer with (more: the
    /// execution fails, naming the cap). Default 10000.
    pub grpc_max_actions_per_turn: usize,
    /// The most MiB of work items that may wait for an SDK worker at once (none connected,
    /// or all full); past it the runtime gives the work back to its queue. Default 64.
    pub grpc_waiting_mib: usize,
    /// How long a work item may wait while SDK workers are connected but none has room
    /// before the runtime gives it back to its queue uncounted and asks again. Default 60
    /// seconds.
    pub grpc_busy_wait: Duration,
    /// The most MiB of the parts of one chunked answer of an SDK worker (`isPartial`).
    /// Default 64.
    pub grpc_chunked_answer_mib: usize,
}

/// The names of the binary's settings.
pub const NAMES: [&str; 20] = [
    "backend",
    "http_token",
    "otlp_endpoint",
    "grpc_orchestration_timeout",
    "grpc_activity_timeout",
    "grpc_entity_timeout",
    "grpc_worker_wait",
    "grpc_history_cache_mib",
    "http_max_connections",
    "http_first_request_timeout",
    "http_idle_timeout",
    "http_keepalive_interval",
    "grpc_max_name_bytes",
    "grpc_stream_queue_items",
    "grpc_stream_queue_mib",
    "grpc_stream_read_timeout",
    "grpc_max_actions_per_turn",
    "grpc_waiting_mib",
    "grpc_busy_wait",
    "grpc_chunked_answer_mib",
];

impl Default for CliSettings {
    fn default() -> Self {
        Self {
            backend: taskhub_backends::default_name().to_owned(),
            http_token: Secret::default(),
            otlp_endpoint: String::new(),
            grpc_orchestration_timeout: DispatcherSettings::default().orchestration_timeout,
            grpc_activity_timeout: DispatcherSettings::default().activity_timeout,
            grpc_entity_timeout: DispatcherSettings::default().entity_timeout,
            grpc_worker_wait: DispatcherSettings::default().no_worker_wait,
            grpc_history_cache_mib: DispatcherSettings::default().history_cache_bytes / MIB,
            http_max_connections: Limits::default().max_connections,
            http_first_request_timeout: Limits::default().first_request_timeout,
            http_idle_timeout: Limits::default().idle_timeout,
            http_keepalive_interval: Limits::default().keepalive_interval,
            grpc_max_name_bytes: RequestCaps::default().max_name_bytes,
            grpc_stream_queue_items: DispatcherSettings::default().stream_queue_items,
            grpc_stream_queue_mib: DispatcherSettings::default().stream_queue_bytes / MIB,
            grpc_stream_read_timeout: DispatcherSettings::default().stream_read_timeout,
            grpc_max_actions_per_turn: DispatcherSettings::default().max_actions_per_turn,
            grpc_waiting_mib: DispatcherSettings::default().waiting_bytes / MIB,
            grpc_busy_wait: DispatcherSettings::default().busy_wait,
            grpc_chunked_answer_mib: DispatcherSettings::default().chunked_answer_bytes / MIB,
        }
    }
}

/// Bytes in a MiB.
const MIB: usize = 1024 * 1024;

/// A whole number of at least 1.
fn positive_count(value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("expected a whole number of at least 1, got {value:?}"))
}

/// A positive whole number of MiB whose bytes fit a `usize`.
fn positive_mib(value: &str) -> Result<usize, String> {
    positive_count(value)
        .ok()
        .filter(|m| m.checked_mul(MIB).is_some())
        .ok_or_else(|| format!("expected a whole number of MiB of at least 1, got {value:?}"))
}

/// A positive duration (`30`, `30s`, `5m`, `1h 30m`).
fn positive_duration(value: &str) -> Result<Duration, String> {
    match parse_duration(value) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(format!(
            "expected a positive duration such as 30s, 5m or 1h, got {value:?}"
        )),
    }
}

impl CliSettings {
    /// Sets one setting from its text form (trimmed).
    ///
    /// # Errors
    /// The reason the value is refused (the caller names the setting and its source).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match name {
            "backend" => {
                let backend = taskhub_backends::backend(value).map_err(|_| {
                    format!(
                        "expected {}, got {value:?}",
                        taskhub_backends::names().join(" or ")
                    )
                })?;
                backend.name().clone_into(&mut self.backend);
            }
            "http_token" => self.http_token = Secret(value.to_owned()),
            "otlp_endpoint" => {
                if !(value.is_empty()
                    || value.starts_with("http://")
                    || value.starts_with("https://"))
                {
                    return Err(format!(
                        "expected an http:// or https:// URL of an OTLP/HTTP collector (such as http://127.0.0.1:4318), got {value:?}"
                    ));
                }
                value.clone_into(&mut self.otlp_endpoint);
            }
            "grpc_orchestration_timeout" => {
                self.grpc_orchestration_timeout = positive_duration(value)?;
            }
            "grpc_activity_timeout" => self.grpc_activity_timeout = positive_duration(value)?,
            "grpc_entity_timeout" => self.grpc_entity_timeout = positive_duration(value)?,
            "grpc_worker_wait" => self.grpc_worker_wait = positive_duration(value)?,
            "grpc_history_cache_mib" => {
                self.grpc_history_cache_mib = value
                    .parse::<usize>()
                    .ok()
                    .filter(|m| m.checked_mul(MIB).is_some())
                    .ok_or_else(|| {
                        format!(
                            "expected a whole number of MiB such as 64 (0: none), got {value:?}"
                        )
                    })?;
            }
            "http_max_connections" => self.http_max_connections = positive_count(value)?,
            "http_first_request_timeout" => {
                self.http_first_request_timeout = positive_duration(value)?;
            }
            "http_idle_timeout" => self.http_idle_timeout = positive_duration(value)?,
            "http_keepalive_interval" => {
                self.http_keepalive_interval = positive_duration(value)?;
            }
            "grpc_max_name_bytes" => self.grpc_max_name_bytes = positive_count(value)?,
            "grpc_stream_queue_items" => self.grpc_stream_queue_items = positive_count(value)?,
            "grpc_stream_queue_mib" => self.grpc_stream_queue_mib = positive_mib(value)?,
            "grpc_waiting_mib" => self.grpc_waiting_mib = positive_mib(value)?,
            "grpc_stream_read_timeout" => {
                self.grpc_stream_read_timeout = positive_duration(value)?;
            }
            "grpc_max_actions_per_turn" => {
                self.grpc_max_actions_per_turn = positive_count(value)?;
            }
            "grpc_busy_wait" => self.grpc_busy_wait = positive_duration(value)?,
            "grpc_chunked_answer_mib" => self.grpc_chunked_answer_mib = positive_mib(value)?,
            _ => return Err(format!("unknown setting (known: {})", NAMES.join(", "))),
        }
        Ok(())
    }

    /// The dispatcher's settings for SDK workers (`taskhub worker --grpc`).
    pub fn dispatcher(&self) -> DispatcherSettings {
        let mut d = DispatcherSettings::default();
        d.orchestration_timeout = self.grpc_orchestration_timeout;
        d.activity_timeout = self.grpc_activity_timeout;
        d.entity_timeout = self.grpc_entity_timeout;
        d.no_worker_wait = self.grpc_worker_wait;
        d.history_cache_bytes = self.grpc_history_cache_mib.saturating_mul(MIB);
        d.stream_queue_items = self.grpc_stream_queue_items;
        d.stream_queue_bytes = self.grpc_stream_queue_mib.saturating_mul(MIB);
        d.stream_read_timeout = self.grpc_stream_read_timeout;
        d.max_actions_per_turn = self.grpc_max_actions_per_turn;
        d.waiting_bytes = self.grpc_waiting_mib.saturating_mul(MIB);
        d.busy_wait = self.grpc_busy_wait;
        d.chunked_answer_bytes = self.grpc_chunked_answer_mib.saturating_mul(MIB);
        d
    }

    /// The connection limits of the HTTP API and the gRPC endpoint.
    pub fn limits(&self) -> Limits {
        Limits {
            max_connections: self.http_max_connections,
            first_request_timeout: self.http_first_request_timeout,
            idle_timeout: self.http_idle_timeout,
            keepalive_interval: self.http_keepalive_interval,
        }
    }

    /// The caps of the gRPC endpoint's client calls.
    pub fn request_caps(&self) -> RequestCaps {
        RequestCaps {
            max_name_bytes: self.grpc_max_name_bytes,
        }
    }

    /// The current value of a setting as text (a secret as `<redacted>` when set).
    #[cfg(test)]
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "backend" => self.backend.clone(),
            "http_token" if self.http_token.0.is_empty() => String::new(),
            "http_token" => "<redacted>".to_owned(),
            "otlp_endpoint" => self.otlp_endpoint.clone(),
            "grpc_orchestration_timeout" => humantime_text(self.grpc_orchestration_timeout),
            "grpc_activity_timeout" => humantime_text(self.grpc_activity_timeout),
            "grpc_entity_timeout" => humantime_text(self.grpc_entity_timeout),
            "grpc_worker_wait" => humantime_text(self.grpc_worker_wait),
            "grpc_history_cache_mib" => self.grpc_history_cache_mib.to_string(),
            "http_max_connections" => self.http_max_connections.to_string(),
            "http_first_request_timeout" => humantime_text(self.http_first_request_timeout),
            "http_idle_timeout" => humantime_text(self.http_idle_timeout),
            "http_keepalive_interval" => humantime_text(self.http_keepalive_interval),
            "grpc_max_name_bytes" => self.grpc_max_name_bytes.to_string(),
            "grpc_stream_queue_items" => self.grpc_stream_queue_items.to_string(),
            "grpc_stream_queue_mib" => self.grpc_stream_queue_mib.to_string(),
            "grpc_stream_read_timeout" => humantime_text(self.grpc_stream_read_timeout),
            "grpc_max_actions_per_turn" => self.grpc_max_actions_per_turn.to_string(),
            "grpc_waiting_mib" => self.grpc_waiting_mib.to_string(),
            "grpc_busy_wait" => humantime_text(self.grpc_busy_wait),
            "grpc_chunked_answer_mib" => self.grpc_chunked_answer_mib.to_string(),
            _ => return None,
        })
    }
}

/// A duration as `docs/SETTINGS.md` writes it (`5m`, `30s`).
#[cfg(test)]
fn humantime_text(d: Duration) -> String {
    let secs = d.as_secs();
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    const SETTINGS_DOC: &str = include_str!("../../../docs/SETTINGS.md");

    #[test]
    fn values_are_checked_and_the_token_is_never_printed() {
        let mut s = CliSettings::default();
        s.set("backend", " Azure ").unwrap();
        assert_eq!(s.backend, "azure");
        assert!(s
            .set("backend", "cosmos")
            .unwrap_err()
            .contains("sqlite or azure"));
        s.set("http_token", "s3cret-token").unwrap();
        assert_eq!(s.http_token.expose(), "s3cret-token");
        assert!(!format!("{s:?}").contains("s3cret-token"));
        s.set("otlp_endpoint", " http://127.0.0.1:4318 ").unwrap();
        assert_eq!(s.otlp_endpoint, "http://127.0.0.1:4318");
        assert!(s
            .set("otlp_endpoint", "collector:4317")
            .unwrap_err()
            .contains("http://"));
        assert!(s.set("bogus", "1").is_err());
        s.set("grpc_activity_timeout", "2h").unwrap();
        s.set("grpc_worker_wait", "5").unwrap();
        assert_eq!(s.dispatcher().activity_timeout, Duration::from_secs(7200));
        assert_eq!(s.dispatcher().no_worker_wait, Duration::from_secs(5));
        s.set("grpc_entity_timeout", "45s").unwrap();
        assert_eq!(s.dispatcher().entity_timeout, Duration::from_secs(45));
        assert!(s
            .set("grpc_orchestration_timeout", "0s")
            .unwrap_err()
            .contains("positive duration"));
        assert!(s.set("grpc_worker_wait", "soon").is_err());
        assert_eq!(s.dispatcher().history_cache_bytes, 64 * MIB);
        s.set("grpc_history_cache_mib", "0").unwrap();
        assert_eq!(s.dispatcher().history_cache_bytes, 0);
        s.set("grpc_history_cache_mib", " 256 ").unwrap();
        assert_eq!(s.dispatcher().history_cache_bytes, 256 * MIB);
        for bad in ["-1", "64MiB", "1.5", ""] {
            assert!(s
                .set("grpc_history_cache_mib", bad)
                .unwrap_err()
                .contains("whole number of MiB"));
        }
        s.set("grpc_stream_queue_items", "50").unwrap();
        s.set("grpc_stream_queue_mib", "4").unwrap();
        s.set("grpc_stream_read_timeout", "2m").unwrap();
        s.set("grpc_max_actions_per_turn", "20000").unwrap();
        s.set("grpc_busy_wait", "90s").unwrap();
        assert_eq!(s.dispatcher().busy_wait, Duration::from_secs(90));
        s.set("grpc_chunked_answer_mib", "8").unwrap();
        assert_eq!(s.dispatcher().chunked_answer_bytes, 8 * MIB);
        let d = s.dispatcher();
        assert_eq!(
            (
                d.stream_queue_items,
                d.stream_queue_bytes,
                d.stream_read_timeout,
                d.max_actions_per_turn
            ),
            (50, 4 * MIB, Duration::from_secs(120), 20_000)
        );
        for name in [
            "grpc_stream_queue_items",
            "grpc_stream_queue_mib",
            "grpc_max_actions_per_turn",
            "grpc_waiting_mib",
        ] {
            assert!(
                s.set(name, "0").unwrap_err().contains("at least 1"),
                "{name}"
            );
        }
    }

    /// The rows of the table of the binary's settings in `docs/SETTINGS.md`: name → (default,
    /// variable).
    fn documented_rows() -> Vec<(String, String, String)> {
        let section = SETTINGS_DOC
            .split("\n## Settings of the `taskhub` binary\n")
            .nth(1)
            .expect("docs/SETTINGS.md has the binary's settings table");
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|line| {
                let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
                let name = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
                Some((
                    name.to_owned(),
                    cells.get(1)?.to_string(),
                    cells.get(2)?.trim_matches('`').to_owned(),
                ))
            })
            .collect()
    }

    fn check(name: &str, documented: &str) -> Result<(), String> {
        let real = CliSettings::default().get(name).ok_or("no such setting")?;
        let documented = documented.trim_matches('`');
        let documented = if documented == "none" { "" } else { documented };
        if documented == real {
            Ok(())
        } else {
            Err(format!(
                "{name}: documented default {documented:?}, real {real:?}"
            ))
        }
    }

    #[test]
    fn the_settings_doc_lists_every_setting_with_its_real_default_and_variable() {
        let rows = documented_rows();
        let names: Vec<&str> = rows.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(
            names, NAMES,
            "the table in docs/SETTINGS.md must list exactly these settings"
        );
        for (name, default, env) in &rows {
            check(name, default).unwrap();
            assert_eq!(env, &format!("TASKHUB_{}", name.to_uppercase()));
        }
        // The check can fail.
        assert!(check("backend", "azure").is_err());
        assert!(check("otlp_endpoint", "http://x").is_err());
    }
}
