//! Resolving the settings of a command from `taskhub.toml`, the environment and the flags, and
//! opening the task hub they name.
//!
//! One file, three readers, each taking its own keys:
//! - the runtime's [`Settings`]: built-in defaults < a command's profile (the demo's faster
//!   polling) < `taskhub.toml` < `TASKHUB_*` < `--set key=value` < the dedicated flags
//!   (`--partition-count`, `--extended-sessions`), validated last;
//! - the binary's own settings ([`CliSettings`]: `backend`, `http_token`, `otlp_endpoint`), in
//!   the same order, `--backend` last;
//! - the chosen backend's options (`taskhub_backends`; e.g. SQLite's): the command's defaults
//!   < its table of `taskhub.toml` (`[sqlite]`) < `TASKHUB_<BACKEND>_*` < `--set
//!   <backend>.<name>=…` < `--db` and `--durability`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use taskhub::settings::SettingsBuilder;
use taskhub::{Settings, TaskHub};
use taskhub_backends::{BackendConfig, BackendError, HubLocation, OpenMode, OptionValue};

use crate::args::GlobalArgs;
use crate::own_settings::{self, CliSettings};

/// The settings file read when `--config` is not given.
pub const DEFAULT_CONFIG: &str = "taskhub.toml";
/// The task hub file of `demo` when `--db` is not given (other commands: the SQLite
/// backend's default, `taskhub.db`).
pub const DEFAULT_DEMO_DB: &str = "taskhub-demo.db";
/// The source named for a command's own defaults.
const DEFAULTS: &str = "the command's defaults";

/// What a command runs with: the runtime's settings, the binary's own, and the hub they name.
#[derive(Debug)]
pub struct Resolved {
    /// The runtime's settings.
    pub settings: Settings,
    /// The binary's own settings.
    pub own: CliSettings,
    /// The hub, its backend's options read.
    pub hub: Box<dyn HubLocation>,
    /// The SQLite file the configuration names (`--db`, `[sqlite] path`, …): what the demo's
    /// worker processes are given as `--db`.
    pub db: PathBuf,
}

/// Resolves the settings from the file, the environment and the flags, with `profile` as
/// command-specific defaults for keys the user did not set (a runtime setting, one of the
/// binary's, or a backend option `<backend>.<name>`). Everything is validated once, at the
/// end: a flag can fix a bad value in the file, and a bad final value is an error naming the
/// setting and where that value came from.
pub fn resolve(global: &GlobalArgs, profile: &[(&str, &str)]) -> anyhow::Result<Resolved> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = config_file(global)?;
    let mut runtime = SettingsBuilder::new();
    let mut own: Vec<(String, String, String)> = Vec::new();
    let mut backend = BackendConfig {
        env: env.clone(),
        file: Some(config.clone()),
        ..BackendConfig::default()
    };
    for (key, value) in profile {
        route(
            key,
            value,
            DEFAULTS,
            &mut runtime,
            &mut own,
            &mut backend.defaults,
        )?;
    }
    runtime.ignore(own_settings::NAMES);
    runtime.ignore(
        taskhub_backends::BACKENDS
            .iter()
            .flat_map(|b| b.top_level_keys().iter().copied()),
    );
    runtime.file(&config).context("settings")?;
    own.extend(own_from_file(&config)?);
    runtime.env(&env);
    for name in own_settings::NAMES {
        let var = format!("TASKHUB_{}", name.to_uppercase());
        if let Some(value) = env.get(&var) {
            own.push((name.to_owned(), value.clone(), var));
        }
    }
    for (key, value, flag) in flag_settings(global)? {
        route(
            &key,
            &value,
            flag,
            &mut runtime,
            &mut own,
            &mut backend.overrides,
        )?;
    }
    let settings = runtime.build().context("settings")?;
    let mut cli = CliSettings::default();
    for (name, value, source) in &own {
        cli.set(name, value)
            .map_err(|why| anyhow::anyhow!("invalid setting {name}: {why} (from {source})"))
            .context("settings")?;
    }
    backend.hub_name.clone_from(&settings.task_hub_name);
    let db = taskhub_sqlite::SqliteBackend::options_from(&backend).map_or_else(
        |_| PathBuf::from(taskhub_sqlite::backend::DEFAULT_PATH),
        |o| o.path,
    );
    let hub = taskhub_backends::locate(&cli.backend, &backend).context("settings")?;
    Ok(Resolved {
        settings,
        own: cli,
        hub,
        db,
    })
}

/// Sends one `key=value` to its reader: a backend option, one of the binary's settings, or
/// the runtime (which refuses an unknown name).
fn route(
    key: &str,
    value: &str,
    source: &str,
    runtime: &mut SettingsBuilder,
    own: &mut Vec<(String, String, String)>,
    backend: &mut Vec<OptionValue>,
) -> anyhow::Result<()> {
    if let Some(option) = taskhub_backends::option_key(key) {
        backend.push(OptionValue::new(option, value, source));
    } else if own_settings::NAMES.contains(&key) {
        own.push((key.to_owned(), value.to_owned(), source.to_owned()));
    } else {
        runtime.set(key, value, source).context("settings")?;
    }
    Ok(())
}

/// The binary's settings in the file's top level; a table that is no backend's is an error.
fn own_from_file(path: &Path) -> anyhow::Result<Vec<(String, String, String)>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("settings: cannot read settings file {source}"))?;
    // The runtime's reader has parsed the file already: an error here is not expected.
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("settings: cannot parse settings file {source}"))?;
    let mut out = Vec::new();
    for (key, value) in table {
        if value.is_table() && !taskhub_backends::is_backend_table(&key) {
            bail!(
                "settings: invalid setting {key}: unknown table [{key}] (backend tables: {}) (from {source})",
                taskhub_backends::names().join(", ")
            );
        }
        if !own_settings::NAMES.contains(&key.as_str()) {
            continue;
        }
        let text = match value {
            toml::Value::String(v) => v,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            _ => bail!("settings: invalid setting {key}: expected a string (from {source})"),
        };
        out.push((key, text, source.clone()));
    }
    Ok(out)
}

/// The settings file: `--config` (which must exist), or `./taskhub.toml` if there is one.
fn config_file(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    Ok(match &global.config {
        Some(path) if !path.exists() => bail!("config file {} not found", path.display()),
        Some(path) => path.clone(),
        None => PathBuf::from(DEFAULT_CONFIG),
    })
}

/// The `--set` pairs, then the dedicated flags, as (key, value, flag). `--db` and
/// `--durability` are the SQLite backend's options `sqlite.path` and `sqlite.durability`.
fn flag_settings(global: &GlobalArgs) -> anyhow::Result<Vec<(String, String, &'static str)>> {
    let mut out = Vec::new();
    for pair in &global.set {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("--set expects KEY=VALUE, got {pair:?}");
        };
        out.push((key.trim().to_owned(), value.trim().to_owned(), "--set"));
    }
    if let Some(n) = &global.partition_count {
        out.push(("partition_count".to_owned(), n.clone(), "--partition-count"));
    }
    if let Some(b) = &global.extended_sessions {
        let key = "extended_sessions_enabled".to_owned();
        out.push((key, b.clone(), "--extended-sessions"));
    }
    if let Some(b) = &global.backend {
        out.push(("backend".to_owned(), b.clone(), "--backend"));
    }
    if let Some(db) = &global.db {
        out.push(("sqlite.path".to_owned(), db.display().to_string(), "--db"));
    }
    if let Some(d) = global.durability {
        let value = d.as_setting().to_owned();
        out.push(("sqlite.durability".to_owned(), value, "--durability"));
    }
    Ok(out)
}

/// The demo's default SQLite file, as a profile entry.
pub const DEMO_DB_PROFILE: (&str, &str) = ("sqlite.path", DEFAULT_DEMO_DB);

impl Resolved {
    /// Opens the task hub; with `must_exist`, a missing hub is an error instead of a new,
    /// empty one (and nothing is created). Its calls are counted when a metrics recorder is
    /// installed.
    pub async fn open_hub(&self, must_exist: bool) -> anyhow::Result<TaskHub> {
        let mode = if must_exist {
            OpenMode::Existing
        } else {
            OpenMode::CreateIfMissing
        };
        let opened = self
            .hub
            .open(mode, crate::metrics::installed())
            .await
            .map_err(|e| self.open_error(e))?;
        TaskHub::open(opened.store, self.settings.clone())
            .await
            .with_context(|| format!("cannot open {}", self.hub.describe()))
    }

    /// A missing hub says how to create one.
    pub fn open_error(&self, e: BackendError) -> anyhow::Error {
        match e {
            e @ BackendError::NotFound { .. } => anyhow::anyhow!(
                "{e}; create it with `taskhub worker --backend {}` or `taskhub instances start`",
                self.hub.backend()
            ),
            e => e.into(),
        }
    }
}
