//! The PostgreSQL backend as a plug-in (`taskhub-backends` registers it as `postgres`): its
//! options from the configuration (the `[postgres]` table, `TASKHUB_POSTGRES_*`, `--set
//! postgres.<name>=…`), and a hub that is one schema of the database the URL names, called
//! after `task_hub_name`.

use async_trait::async_trait;
use taskhub_storage::backend::{
    Backend, BackendConfig, BackendError, BackendOptions, Deleted, HubLocation, OpenMode,
    OpenedStore, OptionDoc,
};
use taskhub_storage::StorageError;

use crate::options::{redact, PostgresConfigError, PostgresOptions, TABLE};
use crate::schema::schema_name;
use crate::store::{Create, PostgresStore};

/// The PostgreSQL backend's plug-in.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresBackend;

impl PostgresBackend {
    /// The options `config` gives: the defaults, then its defaults, the `[postgres]` table of
    /// its file, the environment, and its overrides.
    ///
    /// # Errors
    /// [`PostgresConfigError`] naming the option and its source.
    pub fn options_from(config: &BackendConfig) -> Result<PostgresOptions, PostgresConfigError> {
        PostgresOptions::default().layered(config)
    }
}

impl Backend for PostgresBackend {
    fn name(&self) -> &'static str {
        TABLE
    }

    fn summary(&self) -> &'static str {
        "a PostgreSQL server many worker processes share, one schema per hub named by task_hub_name"
    }

    fn options(&self) -> Vec<OptionDoc> {
        PostgresOptions::default().docs()
    }

    fn locate(&self, config: &BackendConfig) -> Result<Box<dyn HubLocation>, BackendError> {
        let options = Self::options_from(config)?;
        let url = options.require_url()?;
        let schema = schema_name(&config.hub_name).map_err(|e| BackendError::Invalid {
            setting: "task_hub_name".to_owned(),
            origin: "the settings".to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Box::new(PostgresHub {
            place: redact(url),
            hub: config.hub_name.clone(),
            schema,
            options,
        }))
    }
}

/// A hub in one schema of a PostgreSQL database.
#[derive(Debug)]
struct PostgresHub {
    options: PostgresOptions,
    hub: String,
    schema: String,
    place: String,
}

impl PostgresHub {
    fn open_error(&self, e: StorageError) -> BackendError {
        match e {
            StorageError::Unavailable(reason) => BackendError::Unreachable(format!(
                "cannot reach PostgreSQL at {} (check postgres.url / TASKHUB_POSTGRES_URL and \
                 that the server is running): {reason}",
                self.place
            )),
            StorageError::InvalidArgument(reason) => BackendError::Invalid {
                setting: format!("{TABLE}.url"),
                origin: "the settings".to_owned(),
                reason,
            },
            other => BackendError::Open {
                hub: self.describe(),
                reason: other.to_string(),
            },
        }
    }
}

#[async_trait]
impl HubLocation for PostgresHub {
    fn backend(&self) -> &'static str {
        TABLE
    }

    fn place(&self) -> String {
        format!("'{}' on PostgreSQL {}", self.hub, self.place)
    }

    fn describe(&self) -> String {
        format!(
            "the task hub '{}' (schema {}) on PostgreSQL {}",
            self.hub, self.schema, self.place
        )
    }

    fn contents(&self) -> String {
        format!("the schema {} and every table in it", self.schema)
    }

    fn is_local(&self) -> bool {
        false
    }

    async fn open(&self, mode: OpenMode, instrument: bool) -> Result<OpenedStore, BackendError> {
        let create = match mode {
            OpenMode::Existing => Create::No,
            OpenMode::CreateIfMissing => Create::IfMissing,
        };
        match PostgresStore::open(&self.options, &self.hub, create).await {
            Ok(store) => Ok(OpenedStore::new(store, instrument)),
            Err(StorageError::NotFound { .. }) if mode == OpenMode::Existing => {
                Err(BackendError::NotFound {
                    hub: format!("'{}' (schema {}) on {}", self.hub, self.schema, self.place),
                    setting: "task_hub_name and postgres.url".to_owned(),
                })
            }
            Err(e) => Err(self.open_error(e)),
        }
    }

    async fn delete(&self) -> Result<Deleted, BackendError> {
        let existed = PostgresStore::delete_hub(&self.options, &self.hub)
            .await
            .map_err(|e| self.open_error(e))?;
        Ok(Deleted {
            existed,
            note: if existed {
                format!("dropped schema {}", self.schema)
            } else {
                format!("no schema {}", self.schema)
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use taskhub_storage::backend::OptionValue;

    use super::*;

    #[test]
    fn locate_reads_the_options_and_never_shows_the_password() {
        let config = BackendConfig {
            env: [(
                "TASKHUB_POSTGRES_URL".to_owned(),
                "postgres://app:s3cret@db.example:6543/jobs".to_owned(),
            )]
            .into(),
            overrides: vec![OptionValue::new("postgres.pool_size", "3", "--set")],
            hub_name: "Orders".to_owned(),
            ..BackendConfig::default()
        };
        assert_eq!(PostgresBackend::options_from(&config).unwrap().pool_size, 3);
        let hub = PostgresBackend.locate(&config).unwrap();
        let text = format!(
            "{} {} {} {hub:?}",
            hub.place(),
            hub.describe(),
            hub.contents()
        );
        assert!(!text.contains("s3cret"), "{text}");
        assert!(
            text.contains("taskhub_orders") && text.contains("db.example:6543/jobs"),
            "{text}"
        );

        let missing = PostgresBackend
            .locate(&BackendConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("postgres.url") && missing.contains("TASKHUB_POSTGRES_URL"),
            "{missing}"
        );
        let docs = PostgresBackend.options();
        assert_eq!(docs.len(), PostgresOptions::NAMES.len());
        assert!(docs
            .iter()
            .any(|d| d.name == "pool_size" && d.default == "8"));
    }
}
