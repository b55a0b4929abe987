//! Layered settings: values from several sources (a command's defaults, `taskhub.toml`,
//! `TASKHUB_*` variables, command-line flags), the later source winning per setting, parsed
//! and validated once at the end. So a flag can fix a bad value in the file, and an error
//! names the setting and the source its final value came from.
//!
//! `taskhub.toml` is shared: its tables (`[sqlite]`, `[azure]`) hold the backends' options and
//! are read by their crates, and a program may own top-level keys of its own (the `taskhub`
//! binary's `backend`, `http_token`, …), which it names with
//! [`SettingsBuilder::ignore`]. Every other top-level key must be a runtime setting.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::{is_known, names, Settings};
use crate::error::TaskhubError;

/// Collects setting values; [`build`](Self::build) parses and validates the final ones.
///
/// ```
/// use taskhub::settings::SettingsBuilder;
///
/// let mut b = SettingsBuilder::new();
/// b.set("partition_count", "99", "taskhub.toml")?;
/// b.set("partition_count", "8", "--partition-count")?;
/// assert_eq!(b.build()?.partition_count, 8);
/// # Ok::<(), taskhub::TaskhubError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SettingsBuilder {
    /// Setting name → (text value, where it came from).
    values: BTreeMap<String, (String, String)>,
    /// Top-level keys of the file that another reader owns.
    ignored: Vec<String>,
}

impl SettingsBuilder {
    /// No values: [`build`](Self::build) gives the defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Skips the top-level `keys` of a settings file: another reader owns them (a program's
    /// own settings, the older spellings of a backend's options).
    pub fn ignore<I, K>(&mut self, keys: I) -> &mut Self
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        self.ignored.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Sets `name` to `value` (text, as in `taskhub.toml`), replacing an earlier source's
    /// value. `source` is named in errors about it.
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] for an unknown name. A bad value is reported by
    /// [`build`](Self::build), unless a later source replaces it.
    pub fn set(
        &mut self,
        name: &str,
        value: &str,
        source: &str,
    ) -> Result<&mut Self, TaskhubError> {
        if !is_known(name) && name != "durability" {
            return Err(TaskhubError::InvalidSetting {
                name: name.to_owned(),
                reason: format!(
                    "unknown setting (known: {}) (from {source})",
                    names().join(", ")
                ),
            });
        }
        self.values
            .insert(name.to_owned(), (value.to_owned(), source.to_owned()));
        Ok(self)
    }

    /// Adds the values of a `taskhub.toml` file; a file that does not exist adds nothing.
    /// Tables (a backend's options) and [ignored](Self::ignore) keys are skipped.
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] naming the file if it cannot be read or parsed, or
    /// naming the key if it is unknown or not a string, number or boolean.
    pub fn file(&mut self, path: &Path) -> Result<&mut Self, TaskhubError> {
        if !path.exists() {
            return Ok(self);
        }
        let source = path.display().to_string();
        let file_error = |reason: String| TaskhubError::InvalidSetting {
            name: source.clone(),
            reason,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| file_error(format!("cannot read: {e}")))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(e.message().to_owned()))?;
        for (key, value) in table {
            if value.is_table() || self.ignored.contains(&key) {
                // A backend's options, or a key another reader owns.
                continue;
            }
            let text = match value {
                toml::Value::String(v) => v,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return Err(TaskhubError::InvalidSetting {
                        name: key,
                        reason: format!("expected a string, number or boolean (from {source})"),
                    })
                }
            };
            self.set(&key, &text, &source)?;
        }
        Ok(self)
    }

    /// Adds the `TASKHUB_<NAME>` variables of `env` that name a setting (others are ignored).
    pub fn env(&mut self, env: &HashMap<String, String>) -> &mut Self {
        let mut vars: Vec<(&String, &String)> = env
            .iter()
            .filter(|(k, _)| k.starts_with("TASKHUB_"))
            .collect();
        vars.sort();
        for (key, value) in vars {
            let name = key.trim_start_matches("TASKHUB_").to_lowercase();
            if is_known(&name) {
                self.values.insert(name, (value.clone(), key.clone()));
            }
        }
        self
    }

    /// The defaults with every final value applied, validated.
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] naming the setting, what is wrong, and the source of
    /// its final value.
    pub fn build(&self) -> Result<Settings, TaskhubError> {
        let mut settings = Settings::default();
        for (name, (value, source)) in &self.values {
            settings
                .set(name, value)
                .map_err(|e| self.blame(e, Some(source)))?;
        }
        settings.validate().map_err(|e| {
            let source = match &e {
                TaskhubError::InvalidSetting { name, .. } => self.values.get(name).map(|(_, s)| s),
                _ => None,
            };
            self.blame(e, source)
        })?;
        Ok(settings)
    }

    /// Appends "(from SOURCE)" to a setting error.
    fn blame(&self, e: TaskhubError, source: Option<&String>) -> TaskhubError {
        match (e, source) {
            (TaskhubError::InvalidSetting { name, reason }, Some(source)) => {
                TaskhubError::InvalidSetting {
                    name,
                    reason: format!("{reason} (from {source})"),
                }
            }
            (e, _) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_support::settings_file;

    fn reason(e: TaskhubError) -> (String, String) {
        match e {
            TaskhubError::InvalidSetting { name, reason } => (name, reason),
            other => panic!("not an InvalidSetting: {other}"),
        }
    }

    #[test]
    fn a_later_source_fixes_a_bad_earlier_value() {
        let mut b = SettingsBuilder::new();
        b.set("partition_count", "17", "taskhub.toml").unwrap();
        b.set("lease_interval", "soon", "taskhub.toml").unwrap();
        b.set("partition_count", "8", "--partition-count").unwrap();
        b.set("lease_interval", "45s", "--set").unwrap();
        let s = b.build().unwrap();
        assert_eq!(s.partition_count, 8);
        assert_eq!(s.lease_interval, std::time::Duration::from_secs(45));
    }

    #[test]
    fn a_bad_final_value_names_the_setting_and_its_source() {
        let mut b = SettingsBuilder::new();
        b.set("partition_count", "8", "taskhub.toml").unwrap();
        b.set("partition_count", "17", "--partition-count").unwrap();
        let (name, why) = reason(b.build().unwrap_err());
        assert_eq!(name, "partition_count");
        assert_eq!(why, "must be 1 to 16 (from --partition-count)");

        let mut b = SettingsBuilder::new();
        let env = HashMap::from([("TASKHUB_MAX_DEQUEUE_COUNT".to_owned(), "many".to_owned())]);
        let (name, why) = reason(b.env(&env).build().unwrap_err());
        assert_eq!(name, "max_dequeue_count");
        assert!(
            why.contains("\"many\"") && why.ends_with("(from TASKHUB_MAX_DEQUEUE_COUNT)"),
            "{why}"
        );

        // A range that involves two settings blames the one validation names.
        let mut b = SettingsBuilder::new();
        b.set("lease_renew_interval", "40s", "--set").unwrap();
        let (name, why) = reason(b.build().unwrap_err());
        assert_eq!(name, "lease_renew_interval");
        assert!(why.ends_with("(from --set)"), "{why}");
    }

    #[test]
    fn unknown_names_are_refused_at_once() {
        let (name, why) = reason(
            SettingsBuilder::new()
                .set("bogus", "1", "--set")
                .unwrap_err(),
        );
        assert_eq!(name, "bogus");
        assert!(
            why.contains("unknown setting") && why.ends_with("(from --set)"),
            "{why}"
        );
        // Unrelated TASKHUB_ variables are not settings.
        let env = HashMap::from([("TASKHUB_NOT_A_SETTING".to_owned(), "x".to_owned())]);
        assert_eq!(
            SettingsBuilder::new().env(&env).build().unwrap(),
            Settings::default()
        );
    }

    #[test]
    fn durations_numbers_and_names_come_from_the_one_struct() {
        use std::time::Duration;

        // humantime durations (compound ones too), plain seconds, and numbers or booleans
        // given as text.
        let mut b = SettingsBuilder::new();
        b.set("lease_interval", "1m 30s", "taskhub.toml").unwrap();
        b.set("lease_renew_interval", "2.5", "--set").unwrap();
        b.set("shutdown_timeout", "250ms", "TASKHUB_SHUTDOWN_TIMEOUT")
            .unwrap();
        b.set("max_dequeue_count", " 7 ", "--set").unwrap();
        b.set("extended_sessions_enabled", "off", "--set").unwrap();
        b.set("version_match", "current-or-older", "--set").unwrap();
        b.set("worker_version", " 2.0 ", "--set").unwrap();
        let s = b.build().unwrap();
        assert_eq!(s.lease_interval, Duration::from_secs(90));
        assert_eq!(s.lease_renew_interval, Duration::from_millis(2500));
        assert_eq!(s.shutdown_timeout, Duration::from_millis(250));
        assert_eq!(s.max_dequeue_count, 7);
        assert!(!s.extended_sessions_enabled);
        assert_eq!(s.worker_version, "2.0");

        // A bad duration, number or choice names the setting, the value and the source.
        for (name, value, expect) in [
            ("lease_interval", "1 fortnight", "duration"),
            ("partition_count", "-1", "whole number"),
            ("partition_count", "99999999999", "\"99999999999\""),
            ("version_failure", "shrug", "reject or fail"),
        ] {
            let mut b = SettingsBuilder::new();
            b.set(name, value, "the-source").unwrap();
            let (got, why) = reason(b.build().unwrap_err());
            assert_eq!(got, name);
            assert!(
                why.contains(expect) && why.ends_with("(from the-source)"),
                "{name}: {why}"
            );
        }

        // The names are the struct's: every field, nothing else.
        let names = super::names();
        assert_eq!(names.len(), 32, "{names:?}");
        for name in ["partition_count", "task_hub_name", "startup_busy_timeout"] {
            assert!(super::is_known(name), "{name}");
        }
        // Backend options and the binary's own settings are not the runtime's.
        for name in [
            "durability",
            "backend",
            "http_token",
            "otlp_endpoint",
            "azure_tenant_id",
        ] {
            assert!(!super::is_known(name), "{name}");
        }
    }

    #[test]
    fn a_file_gives_typed_values() {
        let path = settings_file(
            "builder",
            "lease_interval = 45\nmax_queue_polling_interval = 0.5\nextended_sessions_enabled = false\nworker_version = \"3\"\nhttp_token = \"t\"\n[sqlite]\ndurability = \"full\"\n[azure]\nstorage_account_name = \"a\"\n",
        );
        let err = SettingsBuilder::new().file(&path).unwrap_err().to_string();
        assert!(
            err.contains("http_token") && err.contains("unknown setting"),
            "{err}"
        );
        let s = SettingsBuilder::new()
            .ignore(["http_token"])
            .file(&path)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(s.lease_interval, std::time::Duration::from_secs(45));
        assert_eq!(
            s.max_queue_polling_interval,
            std::time::Duration::from_millis(500)
        );
        assert!(!s.extended_sessions_enabled);
        assert_eq!(s.worker_version, "3");
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }
}
