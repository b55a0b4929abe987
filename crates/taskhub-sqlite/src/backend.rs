//! The SQLite backend as a plug-in (`taskhub-backends` registers it as `sqlite`): its options
//! from the configuration ([`SqliteOptions`], layered by the seam), and a hub that is one file
//! (`sqlite.path`, `--db`): opened, created, or deleted with its `-wal`, `-shm`, `-journal`.

use std::path::PathBuf;

use async_trait::async_trait;
use taskhub_storage::backend::{
    Backend, BackendConfig, BackendError, BackendOptions, Deleted, HubLocation, OpenMode,
    OpenedStore, OptionDoc,
};

use crate::options::{SqliteConfigError, SqliteOptions, TABLE};
use crate::{delete_hub_files, SqliteStore};

/// The database file when no option names one.
pub const DEFAULT_PATH: &str = "taskhub.db";

/// The SQLite backend's plug-in.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqliteBackend;

impl SqliteBackend {
    /// The options `config` gives: [`DEFAULT_PATH`], then its defaults, the `[sqlite]` table
    /// of its file, the environment, and its overrides.
    ///
    /// # Errors
    /// [`SqliteConfigError`] naming the option and its source.
    pub fn options_from(config: &BackendConfig) -> Result<SqliteOptions, SqliteConfigError> {
        SqliteOptions::new(DEFAULT_PATH)
            .with_clock(config.clock.clone())
            .layered(config)
    }
}

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        TABLE
    }

    fn summary(&self) -> &'static str {
        "an embedded SQLite file (the default; several processes may share it)"
    }

    fn options(&self) -> Vec<OptionDoc> {
        SqliteOptions::new(DEFAULT_PATH).docs()
    }

    fn locate(&self, config: &BackendConfig) -> Result<Box<dyn HubLocation>, BackendError> {
        Ok(Box::new(SqliteHub {
            options: Self::options_from(config)?,
        }))
    }
}

/// A hub in one SQLite file.
#[derive(Debug)]
struct SqliteHub {
    options: SqliteOptions,
}

impl SqliteHub {
    fn path(&self) -> &PathBuf {
        &self.options.path
    }
}

#[async_trait]
impl HubLocation for SqliteHub {
    fn backend(&self) -> &'static str {
        TABLE
    }

    fn place(&self) -> String {
        self.path().display().to_string()
    }

    fn describe(&self) -> String {
        format!("the task hub at {}", self.path().display())
    }

    fn contents(&self) -> String {
        "the file and its -wal/-shm/-journal".to_owned()
    }

    fn is_local(&self) -> bool {
        true
    }

    async fn open(&self, mode: OpenMode, instrument: bool) -> Result<OpenedStore, BackendError> {
        if mode == OpenMode::Existing && !self.path().exists() {
            return Err(BackendError::NotFound {
                hub: format!("at {}", self.path().display()),
                setting: "sqlite.path or --db".to_owned(),
            });
        }
        let store = SqliteStore::open(self.options.clone()).map_err(|e| BackendError::Open {
            hub: self.describe(),
            reason: e.to_string(),
        })?;
        Ok(OpenedStore::new(store, instrument))
    }

    async fn delete(&self) -> Result<Deleted, BackendError> {
        let deleted = delete_hub_files(self.path())?;
        let paths: Vec<String> = deleted
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        Ok(if paths.is_empty() {
            Deleted {
                existed: false,
                note: "new file".to_owned(),
            }
        } else {
            Deleted {
                existed: true,
                note: format!("deleted {}", paths.join(", ")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use taskhub_storage::backend::OptionValue;

    use super::*;
    use crate::Durability;

    #[tokio::test]
    async fn options_layer_and_a_hub_opens_and_deletes() {
        let dir =
            std::env::temp_dir().join(format!("taskhub-sqlite-plugin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("hub.db");
        let config = BackendConfig {
            defaults: vec![OptionValue::new(
                "sqlite.path",
                "ignored.db",
                "the defaults",
            )],
            env: [("TASKHUB_SQLITE_DURABILITY".to_owned(), "full".to_owned())].into(),
            overrides: vec![OptionValue::new(
                "sqlite.path",
                db.display().to_string(),
                "--db",
            )],
            ..BackendConfig::default()
        };
        let options = SqliteBackend::options_from(&config).unwrap();
        assert_eq!(
            (options.path.clone(), options.durability),
            (db.clone(), Durability::Full)
        );
        let hub = SqliteBackend.locate(&config).unwrap();
        let missing = hub.open(OpenMode::Existing, false).await.unwrap_err();
        assert!(
            matches!(missing, BackendError::NotFound { .. }),
            "{missing}"
        );
        assert!(!db.exists(), "nothing is created");
        let opened = hub.open(OpenMode::CreateIfMissing, true).await.unwrap();
        assert!(opened.downcast::<SqliteStore>().is_some() && opened.metrics.is_some());
        drop(opened);
        let deleted = hub.delete().await.unwrap();
        assert!(
            deleted.existed && deleted.note.contains("hub.db"),
            "{deleted:?}"
        );
        assert!(!hub.delete().await.unwrap().existed);

        let bad = BackendConfig {
            overrides: vec![OptionValue::new("sqlite.max_batch", "0", "--set")],
            ..BackendConfig::default()
        };
        let err = SqliteBackend.locate(&bad).unwrap_err().to_string();
        assert!(
            err.contains("sqlite.max_batch") && err.contains("--set"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn documented_defaults_are_the_real_ones() {
        let docs = SqliteBackend.options();
        assert_eq!(docs.len(), SqliteOptions::NAMES.len());
        let busy = docs.iter().find(|d| d.name == "busy_timeout").unwrap();
        assert_eq!(busy.default, "5s");
        assert_eq!(busy.env, vec!["TASKHUB_SQLITE_BUSY_TIMEOUT".to_owned()]);
    }
}
