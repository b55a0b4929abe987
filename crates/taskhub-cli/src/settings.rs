//! Resolving the runtime settings and opening the SQLite task hub.
//!
//! Order: built-in defaults < a command's profile (the demo's faster polling) < `taskhub.toml`
//! < `TASKHUB_*` environment variables < `--set key=value` < the dedicated flags
//! (`--partition-count`, `--durability`, `--extended-sessions`), validated last.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context as _};
use taskhub::settings::Backend;
use taskhub::settings::SettingsBuilder;
use taskhub::{Durability, Settings, TaskHub};
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
    let config = match &global.config {
        Some(path) if !path.exists() => bail!("config file {} not found", path.display()),
        Some(path) => path.clone(),
        None => PathBuf::from(DEFAULT_CONFIG),
    };
    let mut builder = SettingsBuilder::new();
    for (key, value) in profile {
        builder.set(key, value, "the command's defaults")?;
    }
    builder.file(&config).context("settings")?;
    builder.env(&env);
    for (key, value, flag) in flag_settings(global)? {
        builder.set(&key, &value, flag).context("settings")?;
    }
    builder.build().context("settings")
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
    if let Some(d) = global.durability {
        let value = d.as_setting().to_owned();
        out.push(("durability".to_owned(), value, "--durability"));
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

/// The task hub file: `--db`, or the command's default.
pub fn db_path(global: &GlobalArgs, default: &str) -> PathBuf {
    global.db.clone().unwrap_or_else(|| PathBuf::from(default))
}

/// Opens the task hub the settings name: the SQLite store at `path` with the settings'
/// durability, or (with `backend = azure`) the hub on Azure Storage. With `must_exist`, a
/// missing file or hub is an error instead of a new, empty task hub.
pub async fn open_hub(
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
    let durability = match settings.durability {
        Durability::Normal => taskhub_sqlite::Durability::Normal,
        Durability::Full => taskhub_sqlite::Durability::Full,
    };
    let options = SqliteOptions::new(path).with_durability(durability);
    let store = SqliteStore::open(options)
        .with_context(|| format!("cannot open the task hub at {}", path.display()))?;
    TaskHub::open(Arc::new(store), settings)
        .await
        .with_context(|| format!("cannot open the task hub at {}", path.display()))
}
