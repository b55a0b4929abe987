//! A backend's options, layered once for every backend: a backend writes its options struct
//! and [`BackendOptions::set`] (one option from its text form); this module reads the sources
//! and calls it, in order (a later source wins per option):
//!
//! 1. a command's defaults ([`BackendConfig::defaults`]);
//! 2. the settings file (`taskhub.toml`): the older top-level `<backend>_<name>` keys if the
//!    backend still reads them ([`BackendOptions::TOP_LEVEL_KEYS`]), then its `[<backend>]`
//!    table;
//! 3. the environment: older variables ([`BackendOptions::LEGACY_ENV`]), then every
//!    `TASKHUB_<BACKEND>_<NAME>` (sorted; an unknown name is an error, other variables are
//!    ignored);
//! 4. explicit values ([`BackendConfig::overrides`]: `--set <backend>.<name>=…`, `--db`).
//!
//! Every error names `<backend>.<name>` and where its value came from ([`OptionError`]).
//! [`parse`] holds the value parsers the backends share (durations, counts, switches).

use std::collections::HashMap;
use std::path::Path;

use crate::backend::{BackendConfig, BackendError, OptionDoc, OptionValue};

/// Why an option cannot be applied: [`BackendError::File`] or [`BackendError::Invalid`], whose
/// messages name `<backend>.<name>` and where its value came from.
pub type OptionError = BackendError;

pub mod parse;

/// A backend's options struct: it names its table and options and sets one from text; the
/// provided methods read every source.
pub trait BackendOptions: Sized {
    /// The backend's table of `taskhub.toml`: the `<backend>` of `<backend>.<name>` and of
    /// `TASKHUB_<BACKEND>_<NAME>`.
    const TABLE: &'static str;

    /// Every option name, in the documentation's order.
    const NAMES: &'static [&'static str];

    /// Older environment variables still honoured, as (variable, option name), applied before
    /// the `TASKHUB_<BACKEND>_*` ones. Default none.
    const LEGACY_ENV: &'static [(&'static str, &'static str)] = &[];

    /// True if the file's top-level `<backend>_<name>` keys (an older spelling) are read,
    /// before the table. Default false.
    const TOP_LEVEL_KEYS: bool = false;

    /// True if the file's values must be strings; otherwise numbers and booleans are taken
    /// by their text. Default false.
    const STRINGS_ONLY: bool = false;

    /// Sets one option from its text form; `origin` (a file, a variable, a flag) is named in
    /// the error.
    ///
    /// # Errors
    /// [`BackendError::Invalid`] naming `<backend>.<name>` and `origin`
    /// ([`invalid`](Self::invalid), [`unknown`](Self::unknown)).
    fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), OptionError>;

    /// The option's current value in its text form, for the documentation of its default;
    /// empty for none or a secret. Default empty.
    fn text_of(&self, name: &str) -> String {
        let _ = name;
        String::new()
    }

    /// The error for option `name` from `origin`.
    fn invalid(name: &str, origin: &str, reason: impl Into<String>) -> OptionError {
        BackendError::Invalid {
            setting: format!("{}.{name}", Self::TABLE),
            origin: origin.to_owned(),
            reason: reason.into(),
        }
    }

    /// The error for an option `name` the backend does not have, listing the known ones.
    fn unknown(name: &str, origin: &str) -> OptionError {
        let known = Self::NAMES.join(", ");
        Self::invalid(name, origin, format!("unknown option (known: {known})"))
    }

    /// The error for option `name`, needed but not set.
    fn missing(name: &str, reason: impl Into<String>) -> OptionError {
        Self::invalid(name, "no source: it is not set", reason)
    }

    /// Each option's name, default (from `self`, [`text_of`](Self::text_of)) and variables.
    fn docs(&self) -> Vec<OptionDoc> {
        let prefix = env_prefix(Self::TABLE);
        let doc = |name: &'static str| {
            let legacy = Self::LEGACY_ENV.iter().filter(|(_, n)| *n == name);
            let mut env = vec![format!("{prefix}{}", name.to_uppercase())];
            env.extend(legacy.map(|(var, _)| (*var).to_owned()));
            OptionDoc {
                name,
                default: self.text_of(name),
                env,
            }
        };
        Self::NAMES.iter().map(|&name| doc(name)).collect()
    }

    /// Applies the values of `list` keyed `<backend>.<name>` (others are not this backend's).
    ///
    /// # Errors
    /// As [`set`](Self::set).
    fn apply_values(&mut self, list: &[OptionValue]) -> Result<(), OptionError> {
        for (name, value, origin) in BackendConfig::values_of(list, Self::TABLE) {
            self.set(name, value, origin)?;
        }
        Ok(())
    }

    /// Applies a settings file: the older top-level keys (if read), then the backend's
    /// table. A file that does not exist, or has no such table, changes nothing; other keys
    /// are not read.
    ///
    /// # Errors
    /// [`BackendError::File`] if the file cannot be read or parsed; [`BackendError::Invalid`]
    /// naming the option and the file.
    fn apply_file(&mut self, path: &Path) -> Result<(), OptionError> {
        let Some(mut table) = read_file(path)? else {
            return Ok(());
        };
        let origin = path.display().to_string();
        let section = table.remove(Self::TABLE);
        if Self::TOP_LEVEL_KEYS {
            let prefix = format!("{}_", Self::TABLE);
            for (key, value) in &table {
                if let Some(name) = key.strip_prefix(&prefix) {
                    self.set(name, &file_text::<Self>(name, value, &origin)?, &origin)?;
                }
            }
        }
        match section {
            None => Ok(()),
            Some(toml::Value::Table(section)) => {
                for (name, value) in &section {
                    self.set(name, &file_text::<Self>(name, value, &origin)?, &origin)?;
                }
                Ok(())
            }
            Some(_) => Err(BackendError::Invalid {
                setting: Self::TABLE.to_owned(),
                origin,
                reason: format!("expected a table [{}]", Self::TABLE),
            }),
        }
    }

    /// Applies the older variables, then every `TASKHUB_<BACKEND>_<NAME>` of `env` (sorted).
    /// Unknown `TASKHUB_<BACKEND>_*` names are errors, other variables are ignored.
    ///
    /// # Errors
    /// [`BackendError::Invalid`] naming the option and the variable.
    fn apply_env(&mut self, env: &HashMap<String, String>) -> Result<(), OptionError> {
        for (var, name) in Self::LEGACY_ENV {
            if let Some(value) = env.get(*var) {
                self.set(name, value, var)?;
            }
        }
        let prefix = env_prefix(Self::TABLE);
        let mut vars: Vec<(&String, &String)> =
            env.iter().filter(|(k, _)| k.starts_with(&prefix)).collect();
        vars.sort();
        for (key, value) in vars {
            let name = key.trim_start_matches(&prefix).to_lowercase();
            self.set(&name, value, key)?;
        }
        Ok(())
    }

    /// These options with `file` (if given) and then `env` applied: what a library user calls
    /// to honour the same configuration as the `taskhub` CLI.
    ///
    /// # Errors
    /// As [`apply_file`](Self::apply_file) and [`apply_env`](Self::apply_env).
    fn with_sources(
        mut self,
        file: Option<&Path>,
        env: &HashMap<String, String>,
    ) -> Result<Self, OptionError> {
        if let Some(file) = file {
            self.apply_file(file)?;
        }
        self.apply_env(env)?;
        Ok(self)
    }

    /// These options with every source of `config` applied, in order: its defaults, its
    /// file, its environment, its overrides.
    ///
    /// # Errors
    /// As [`set`](Self::set), [`apply_file`](Self::apply_file) and
    /// [`apply_env`](Self::apply_env).
    fn layered(mut self, config: &BackendConfig) -> Result<Self, OptionError> {
        self.apply_values(&config.defaults)?;
        let mut options = self.with_sources(config.file.as_deref(), &config.env)?;
        options.apply_values(&config.overrides)?;
        Ok(options)
    }
}

/// `TASKHUB_<TABLE>_`.
fn env_prefix(table: &str) -> String {
    format!("TASKHUB_{}_", table.to_uppercase())
}

/// The parsed file, or `None` if it does not exist.
fn read_file(path: &Path) -> Result<Option<toml::Table>, OptionError> {
    if !path.exists() {
        return Ok(None);
    }
    let file_error = |reason: String| BackendError::File {
        path: path.to_owned(),
        reason,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| file_error(format!("cannot read: {e}")))?;
    text.parse()
        .map(Some)
        .map_err(|e: toml::de::Error| file_error(e.message().to_owned()))
}

/// A file value as text: a string, or (unless the backend takes strings only) a number or
/// boolean.
fn file_text<O: BackendOptions>(
    name: &str,
    value: &toml::Value,
    origin: &str,
) -> Result<String, OptionError> {
    match value {
        toml::Value::String(v) => Ok(v.clone()),
        _ if O::STRINGS_ONLY => Err(O::invalid(name, origin, "expected a string")),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        _ => Err(O::invalid(
            name,
            origin,
            "expected a string, number or boolean",
        )),
    }
}

#[cfg(test)]
mod tests;
