//! The SQLite backend's own options from configuration: the `[sqlite]` table of
//! `taskhub.toml`, `TASKHUB_SQLITE_<NAME>` environment variables (and the older
//! `TASKHUB_DURABILITY`), and explicit overrides such as a CLI flag — later sources win. The
//! runtime's `Settings` hold only backend-independent settings and ignore the `[sqlite]` table.
//!
//! ```toml
//! # taskhub.toml
//! partition_count = 8        # runtime settings
//!
//! [sqlite]                   # read by this crate only
//! path = "hub.db"
//! durability = "full"
//! busy_timeout = "5s"
//! ```
//!
//! ```
//! # fn main() -> Result<(), taskhub_sqlite::SqliteConfigError> {
//! use taskhub_sqlite::{Durability, SqliteOptions};
//!
//! let mut options = SqliteOptions::new("hub.db");
//! options.set("durability", "full", "my flag")?;
//! assert_eq!(options.durability, Durability::Full);
//! let err = options.set("durability", "fast", "TASKHUB_SQLITE_DURABILITY").unwrap_err();
//! assert!(err.to_string().contains("sqlite.durability"));
//! assert!(err.to_string().contains("TASKHUB_SQLITE_DURABILITY"));
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::options::{Durability, SqliteOptions};

/// The table of `taskhub.toml` these options live in.
pub const TABLE: &str = "sqlite";

/// Every option name under `[sqlite]`.
pub const KNOWN: [&str; 5] = [
    "path",
    "durability",
    "busy_timeout",
    "read_connections",
    "max_batch",
];

/// The older environment variable for `sqlite.durability`, still honoured.
pub const LEGACY_DURABILITY_VAR: &str = "TASKHUB_DURABILITY";

/// A SQLite option that cannot be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteConfigError {
    /// The settings file could not be read or parsed.
    #[error("cannot read settings file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An option is unknown, malformed or out of range.
    #[error("invalid setting {TABLE}.{name} (from {origin}): {reason}")]
    Invalid {
        /// The option, without the `sqlite.` prefix.
        name: String,
        /// Where its value came from (a file, a variable, a flag).
        origin: String,
        /// What is wrong.
        reason: String,
    },
}

impl SqliteOptions {
    /// Sets one option from its text form; `origin` (a file, a variable, a flag) is named in
    /// the error. Durations take seconds (`5`, `0.5`) or a unit (`500ms`, `5s`, `1m`).
    ///
    /// # Errors
    /// [`SqliteConfigError::Invalid`] naming `sqlite.<name>` and `origin`.
    pub fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), SqliteConfigError> {
        let invalid = |reason: String| SqliteConfigError::Invalid {
            name: name.to_owned(),
            origin: origin.to_owned(),
            reason,
        };
        let count = |v: &str| match v.trim().parse::<usize>() {
            Ok(0) => Err(invalid("must be at least 1".into())),
            Ok(n) => Ok(n),
            Err(e) => Err(invalid(format!("expected a whole number, got {v:?}: {e}"))),
        };
        match name {
            "path" if value.trim().is_empty() => return Err(invalid("must not be empty".into())),
            "path" => self.path = PathBuf::from(value.trim()),
            "durability" => {
                self.durability = match value.trim().to_ascii_lowercase().as_str() {
                    "normal" => Durability::Normal,
                    "full" => Durability::Full,
                    _ => return Err(invalid(format!("expected normal or full, got {value:?}"))),
                }
            }
            "busy_timeout" => {
                self.busy_timeout = parse_duration(value).ok_or_else(|| {
                    invalid(format!(
                        "expected a duration such as 5, 5s or 500ms, got {value:?}"
                    ))
                })?;
            }
            "read_connections" => self.read_connections = count(value)?,
            "max_batch" => self.max_batch = count(value)?,
            _ => {
                return Err(invalid(format!(
                    "unknown option (known: {})",
                    KNOWN.join(", ")
                )))
            }
        }
        Ok(())
    }

    /// Applies the `[sqlite]` table of a settings file (`taskhub.toml`); a file that does not
    /// exist, or has no such table, changes nothing. Other keys of the file are not read.
    ///
    /// # Errors
    /// [`SqliteConfigError::File`] if the file cannot be read or parsed;
    /// [`SqliteConfigError::Invalid`] naming the option and the file.
    pub fn apply_file(&mut self, path: &Path) -> Result<(), SqliteConfigError> {
        if !path.exists() {
            return Ok(());
        }
        let file_error = |reason: String| SqliteConfigError::File {
            path: path.to_owned(),
            reason,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| file_error(format!("cannot read: {e}")))?;
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(e.message().to_owned()))?;
        let origin = path.display().to_string();
        let Some(section) = table.remove(TABLE) else {
            return Ok(());
        };
        let toml::Value::Table(section) = section else {
            return Err(SqliteConfigError::Invalid {
                name: String::new(),
                origin,
                reason: format!("expected a table [{TABLE}]"),
            });
        };
        for (key, value) in section {
            let text = match value {
                toml::Value::String(v) => v,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return Err(SqliteConfigError::Invalid {
                        name: key,
                        origin,
                        reason: "expected a string, number or boolean".into(),
                    })
                }
            };
            self.set(&key, &text, &origin)?;
        }
        Ok(())
    }

    /// Applies `TASKHUB_DURABILITY` (the older name), then every `TASKHUB_SQLITE_<NAME>`
    /// variable of `env`. Unknown `TASKHUB_SQLITE_*` names are errors, other variables ignored.
    ///
    /// # Errors
    /// [`SqliteConfigError::Invalid`] naming the option and the variable.
    pub fn apply_env(&mut self, env: &HashMap<String, String>) -> Result<(), SqliteConfigError> {
        if let Some(value) = env.get(LEGACY_DURABILITY_VAR) {
            self.set("durability", value, LEGACY_DURABILITY_VAR)?;
        }
        let mut vars: Vec<(&String, &String)> = env
            .iter()
            .filter(|(k, _)| k.starts_with("TASKHUB_SQLITE_"))
            .collect();
        vars.sort();
        for (key, value) in vars {
            let name = key.trim_start_matches("TASKHUB_SQLITE_").to_lowercase();
            self.set(&name, value, key)?;
        }
        Ok(())
    }

    /// Options for `default_path` with the `[sqlite]` table of `file` (if given) and the
    /// environment `env` applied, in that order. What a library user calls to honour the same
    /// configuration as the `taskhub` CLI.
    ///
    /// # Errors
    /// As [`apply_file`](Self::apply_file) and [`apply_env`](Self::apply_env).
    pub fn from_config(
        default_path: impl Into<PathBuf>,
        file: Option<&Path>,
        env: &HashMap<String, String>,
    ) -> Result<Self, SqliteConfigError> {
        let mut options = Self::new(default_path);
        if let Some(file) = file {
            options.apply_file(file)?;
        }
        options.apply_env(env)?;
        Ok(options)
    }
}

/// Parses seconds as a plain number (`5`, `0.5`), else humantime's format (`500ms`, `5s`,
/// `1m`, `1m 30s`), as the runtime's settings do.
fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten();
    }
    humantime::parse_duration(t).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_and_errors_name_the_option_and_source() {
        let dir =
            std::env::temp_dir().join(format!("taskhub-sqlite-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("taskhub.toml");
        std::fs::write(
            &file,
            "partition_count = 8\n[sqlite]\npath = \"x.db\"\ndurability = \"full\"\nbusy_timeout = \"250ms\"\n",
        )
        .unwrap();
        let o = SqliteOptions::from_config("d.db", Some(&file), &HashMap::new()).unwrap();
        assert_eq!(o.path, PathBuf::from("x.db"));
        assert_eq!(o.durability, Durability::Full);
        assert_eq!(o.busy_timeout, Duration::from_millis(250));

        let env = HashMap::from([(LEGACY_DURABILITY_VAR.to_owned(), "normal".to_owned())]);
        let o = SqliteOptions::from_config("d.db", Some(&file), &env).unwrap();
        assert_eq!(
            o.durability,
            Durability::Normal,
            "the variable wins over the file"
        );
        let env = HashMap::from([
            (LEGACY_DURABILITY_VAR.to_owned(), "normal".to_owned()),
            ("TASKHUB_SQLITE_DURABILITY".to_owned(), "full".to_owned()),
        ]);
        let o = SqliteOptions::from_config("d.db", None, &env).unwrap();
        assert_eq!(o.durability, Durability::Full);

        let env = HashMap::from([(LEGACY_DURABILITY_VAR.to_owned(), "weird".to_owned())]);
        let err = SqliteOptions::from_config("d.db", None, &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sqlite.durability")
                && err.contains("TASKHUB_DURABILITY")
                && err.contains("weird"),
            "{err}"
        );
        std::fs::write(&file, "[sqlite]\nbusy_timeout = \"soon\"\n").unwrap();
        let err = SqliteOptions::from_config("d.db", Some(&file), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sqlite.busy_timeout") && err.contains("taskhub.toml"),
            "{err}"
        );
        std::fs::write(&file, "[sqlite]\nbogus = 1\n").unwrap();
        let err = SqliteOptions::from_config("d.db", Some(&file), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sqlite.bogus") && err.contains("unknown option"),
            "{err}"
        );
        std::fs::write(&file, "[sqlite]\nmax_batch = 0\n").unwrap();
        let err = SqliteOptions::from_config("d.db", Some(&file), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sqlite.max_batch") && err.contains("at least 1"),
            "{err}"
        );
        std::fs::write(&file, "sqlite = 3\n").unwrap();
        assert!(SqliteOptions::from_config("d.db", Some(&file), &HashMap::new()).is_err());
        std::fs::write(&file, "[sqlite\n").unwrap();
        assert!(matches!(
            SqliteOptions::from_config("d.db", Some(&file), &HashMap::new()),
            Err(SqliteConfigError::File { .. })
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}
