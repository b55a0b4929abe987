//! Resolving the runtime settings and the SQLite backend's options, and opening the task hub.
//!
//! Runtime settings: built-in defaults < a command's profile (the demo's faster polling) <
//! `taskhub.toml` < `TASKHUB_*` environment variables < `--set key=value` < the dedicated
//! flags (`--partition-count`, `--extended-sessions`), validated last.
//!
//! SQLite options (the `taskhub_sqlite::config` crate module parses them): the command's
//! default file < the `[sqlite]` table of `taskhub.toml` < `TASKHUB_DURABILITY` <
//! `TASKHUB_SQLITE_*` < `--set sqlite.NAME=VALUE` < `--db` and `--durability`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use taskhub::settings::Backend;
use taskhub::settings::SettingsBuilder;
use taskhub::{Settings, TaskHub};
use taskhub_sqlite::{SqliteOptions, SqliteStore};

use crate::args::GlobalArgs;

/// The settings file read when `--config` is not given.
pub const DEFAULT_CONFIG: &str = "taskhub.toml";
/// The task hub file of every command but `demo` when `--db` is not given.
pub const DEFAULT_DB: &str = "taskhub.db";
/// The task hub file of `demo` when `--db` is not given.
pub const DEFAULT_DEMO_DB: &str = "taskhub-demo.db";

/// Resolves the settings from the file, the environment and the flags, with `profile` as
/// command-specific defaults for keys the user did not set. Everything is validated once, at
/// the end: a flag can fix a bad value in the file, and a bad final value is an error naming
/// the setting and where that value came from.
pub fn resolve(global: &GlobalArgs, profile: &[(&str, &str)]) -> anyhow::Result<Settings> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = config_file(global)?;
    let mut builder = SettingsBuilder::new();
    for (key, value) in profile {
        builder.set(key, value, "the command's defaults")?;
    }
    builder.file(&config).context("settings")?;
    builder.env(&env);
    for (key, value, flag) in flag_settings(global)? {
        if key.starts_with(SQLITE_PREFIX) {
            continue;
        }
        builder.set(&key, &value, flag).context("settings")?;
    }
    builder.build().context("settings")
}

/// `--set sqlite.NAME=VALUE` sets a SQLite option, not a runtime setting.
const SQLITE_PREFIX: &str = "sqlite.";

/// The settings file: `--config` (which must exist), or `./taskhub.toml` if there is one.
fn config_file(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    Ok(match &global.config {
        Some(path) if !path.exists() => bail!("config file {} not found", path.display()),
        Some(path) => path.clone(),
        None => PathBuf::from(DEFAULT_CONFIG),
    })
}

/// The SQLite options: the `[sqlite]` table of the settings file, the environment, then
/// `--set sqlite.*`, `--db` and `--durability`; the file is `default_db` unless one of them
/// names another.
pub fn sqlite_options(global: &GlobalArgs, default_db: &Path) -> anyhow::Result<SqliteOptions> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = config_file(global)?;
    let mut options =
        SqliteOptions::from_config(default_db, Some(&config), &env).context("settings")?;
    for (key, value, flag) in flag_settings(global)? {
        if let Some(name) = key.strip_prefix(SQLITE_PREFIX) {
            options.set(name, &value, flag).context("settings")?;
        }
    }
    if let Some(db) = &global.db {
        options.path.clone_from(db);
    }
    if let Some(d) = global.durability {
        options
            .set("durability", d.as_setting(), "--durability")
            .context("settings")?;
    }
    Ok(options)
}
/// The `--set` pairs, then the dedicated flags, as (key, value, flag).
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
    Ok(out)
}

/// The task hub file: `--db`, else `[sqlite] path` (or `TASKHUB_SQLITE_PATH`), else the
/// command's default. A bad SQLite option is reported when the hub is opened.
pub fn db_path(global: &GlobalArgs, default: &str) -> PathBuf {
    sqlite_options(global, Path::new(default)).map_or_else(|_| PathBuf::from(default), |o| o.path)
}

/// Opens the task hub the settings name: the SQLite store at `path` with the SQLite options of
/// the configuration (see [`sqlite_options`]), or (with `backend = azure`) the hub on Azure
/// Storage. With `must_exist`, a missing file or hub is an error instead of a new, empty task hub.
pub async fn open_hub(
    global: &GlobalArgs,
    path: &Path,
    settings: Settings,
    must_exist: bool,
) -> anyhow::Result<TaskHub> {
    if settings.backend == Backend::Azure {
        return crate::azure::open_hub(settings, must_exist).await;
    }
    if must_exist && !path.exists() {
        bail!(
            "no task hub at {} (give --db, or create one with `taskhub worker` or `taskhub instances start`)",
            path.display()
        );
    }
    let mut options = sqlite_options(global, path)?;
    options.path = path.to_owned();
    let store = SqliteStore::open(options)
        .with_context(|| format!("cannot open the task hub at {}", path.display()))?;
    TaskHub::open(crate::metrics::store(store), settings)
        .await
        .with_context(|| format!("cannot open the task hub at {}", path.display()))
}
