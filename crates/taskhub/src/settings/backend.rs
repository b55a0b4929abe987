//! Which store a task hub lives in: the `backend`, `azure_storage_connection_string` and
//! `task_hub_name` settings. The runtime does not read them; commands that open a hub do.

use std::fmt;

use crate::error::TaskhubError;

/// The storage backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// An embedded SQLite file (default).
    #[default]
    Sqlite,
    /// Azure Storage queues, tables and blobs (or Azurite).
    Azure,
}

/// A secret setting value: `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the code that uses it (never for printing).
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True if no value was given.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("Secret(<empty>)")
        } else {
            f.write_str("Secret(<redacted>)")
        }
    }
}

/// The settings of this module.
pub(crate) const KEYS: [&str; 3] = [
    "backend",
    "azure_storage_connection_string",
    "task_hub_name",
];

/// The default task hub name.
pub const DEFAULT_TASK_HUB_NAME: &str = "TaskHub";

/// Parses one of [`KEYS`] into `settings`.
pub(crate) fn set(
    settings: &mut super::Settings,
    name: &str,
    value: &str,
) -> Result<(), TaskhubError> {
    match name {
        "backend" => {
            settings.backend = match value.trim().to_ascii_lowercase().as_str() {
                "sqlite" => Backend::Sqlite,
                "azure" => Backend::Azure,
                _ => {
                    return Err(TaskhubError::InvalidSetting {
                        name: name.to_owned(),
                        reason: format!("expected sqlite or azure, got {value:?}"),
                    })
                }
            }
        }
        // Never echoed in errors: it holds the account key.
        "azure_storage_connection_string" => {
            settings.azure_storage_connection_string = Secret::new(value.trim());
        }
        _ => value.trim().clone_into(&mut settings.task_hub_name),
    }
    Ok(())
}

/// Checks the task hub name as the original Azure Storage provider does (3 to 45 ASCII letters
/// and digits, starting with a letter), and that Azure has a connection string.
pub(crate) fn validate(settings: &super::Settings) -> Result<(), TaskhubError> {
    let name = &settings.task_hub_name;
    let bad = |setting: &str, why: String| {
        Err(TaskhubError::InvalidSetting {
            name: setting.to_owned(),
            reason: why,
        })
    };
    if !(3..=45).contains(&name.len())
        || !name.chars().all(|c| c.is_ascii_alphanumeric())
        || !name.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        return bad(
            "task_hub_name",
            format!("{name:?} must be 3 to 45 ASCII letters and digits, starting with a letter"),
        );
    }
    if settings.backend == Backend::Azure && settings.azure_storage_connection_string.is_empty() {
        return bad(
            "azure_storage_connection_string",
            "must be set when backend = azure (UseDevelopmentStorage=true for a local Azurite)"
                .to_owned(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Settings;
    use super::*;

    #[test]
    fn backend_settings_parse_validate_and_never_print_the_key() {
        let mut s = Settings::default();
        assert_eq!(s.backend, Backend::Sqlite);
        assert_eq!(s.task_hub_name, DEFAULT_TASK_HUB_NAME);
        s.set("backend", "Azure").unwrap();
        assert!(validate(&s)
            .unwrap_err()
            .to_string()
            .contains("azure_storage_connection_string"));
        s.set(
            "azure_storage_connection_string",
            "AccountName=a;AccountKey=c2VjcmV0",
        )
        .unwrap();
        validate(&s).unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        for bad in ["ab", "1hub", "my-hub", &"h".repeat(46)] {
            s.set("task_hub_name", bad).unwrap();
            assert!(
                validate(&s)
                    .unwrap_err()
                    .to_string()
                    .contains("task_hub_name"),
                "{bad}"
            );
        }
        assert!(s.set("backend", "cosmos").is_err());
    }
}
