//! Which store a task hub lives in: the `backend`, `azure_storage_connection_string` (or
//! `azure_storage_account_name` with an Entra ID credential: `azure_credential`,
//! `azure_tenant_id`, `azure_client_id`, `azure_client_secret`, `azure_authority_host`,
//! `azure_storage_endpoint_suffix`) and `task_hub_name` settings. The runtime does not read them; commands that open a hub do.

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

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::text::trimmed(d).map(Self)
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sqlite" => Ok(Self::Sqlite),
            "azure" => Ok(Self::Azure),
            _ => Err(format!("expected sqlite or azure, got {s:?}")),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sqlite => "sqlite",
            Self::Azure => "azure",
        })
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

/// The default task hub name.
pub const DEFAULT_TASK_HUB_NAME: &str = "TaskHub";

/// Reads `azure_credential`: empty, `client_secret` or `managed_identity` (any case, `-` for
/// `_`).
pub(crate) fn credential<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let value = super::text::trimmed(d)?;
    let v = value.to_ascii_lowercase().replace('-', "_");
    if !["", "client_secret", "managed_identity"].contains(&v.as_str()) {
        return Err(serde::de::Error::custom(format!(
            "expected client_secret or managed_identity, got {value:?}"
        )));
    }
    Ok(v)
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
    if settings.backend == Backend::Azure
        && settings.azure_storage_connection_string.is_empty()
        && settings.azure_storage_account_name.is_empty()
    {
        return bad(
            "azure_storage_connection_string",
            "must be set when backend = azure (UseDevelopmentStorage=true for a local Azurite), \
             or azure_storage_account_name with an Entra ID credential"
                .to_owned(),
        );
    }
    if settings.backend == Backend::Azure
        && settings.azure_storage_connection_string.is_empty()
        && settings.uses_client_secret()
    {
        for (setting, value) in [
            ("azure_tenant_id", &settings.azure_tenant_id),
            ("azure_client_id", &settings.azure_client_id),
            ("azure_client_secret", &settings.azure_client_secret.0),
        ] {
            if value.is_empty() {
                return bad(
                    setting,
                    "must be set for a client_secret credential (azure_credential)".to_owned(),
                );
            }
        }
    }
    Ok(())
}

impl super::Settings {
    /// True if the Entra ID credential is a client secret (`azure_credential = client_secret`,
    /// or unset with `azure_client_secret` set); false for the managed identity.
    #[must_use]
    pub fn uses_client_secret(&self) -> bool {
        match self.azure_credential.as_str() {
            "client_secret" => true,
            "managed_identity" => false,
            _ => !self.azure_client_secret.is_empty(),
        }
    }
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

    #[test]
    fn entra_id_settings_parse_validate_and_never_print_the_secret() {
        let mut s = Settings::default();
        s.set("backend", "azure").unwrap();
        s.set("azure_storage_account_name", "prod1").unwrap();
        // No secret: the managed identity, which needs nothing more.
        assert!(!s.uses_client_secret());
        validate(&s).unwrap();
        s.set("azure_client_secret", "hunter2-secret").unwrap();
        assert!(s.uses_client_secret());
        assert!(validate(&s)
            .unwrap_err()
            .to_string()
            .contains("azure_tenant_id"));
        s.set("azure_tenant_id", "t").unwrap();
        s.set("azure_client_id", "c").unwrap();
        validate(&s).unwrap();
        s.set("azure_credential", "Managed-Identity").unwrap();
        assert!(!s.uses_client_secret());
        assert!(s.set("azure_credential", "password").is_err());
        assert!(!format!("{s:?}").contains("hunter2-secret"));
    }
}
