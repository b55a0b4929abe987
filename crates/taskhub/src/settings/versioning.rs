//! Orchestration versioning on the worker side (DTFx `VersioningSettings`): `worker_version`,
//! `version_match`, `version_failure` and `default_version`.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Which instance versions a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionMatch {
    /// Every version (default): no check.
    #[default]
    None,
    /// Only instances whose version equals `worker_version`.
    Strict,
    /// Only instances whose version is `worker_version` or older (see [`compare_versions`]).
    CurrentOrOlder,
}

/// What a worker does with an instance whose version it does not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionFailure {
    /// Give its messages back to the queue, uncounted, after a short delay, so that a worker
    /// of the right version takes them (default). Never dead-letters them.
    #[default]
    Reject,
    /// Fail the instance with a `VersionMismatch` failure naming both versions.
    Fail,
}

impl VersionMatch {
    /// The setting's text form.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Strict => "strict",
            Self::CurrentOrOlder => "current_or_older",
        }
    }

    /// True if a worker of `worker` version runs an instance of `instance` version under this
    /// strategy (`None`: an unversioned instance, older than any version).
    #[must_use]
    pub fn accepts(self, worker: &str, instance: Option<&str>) -> bool {
        let instance = instance.unwrap_or("");
        match self {
            Self::None => true,
            Self::Strict => compare_versions(instance, worker) == Ordering::Equal,
            Self::CurrentOrOlder => compare_versions(instance, worker) != Ordering::Greater,
        }
    }
}

impl VersionFailure {
    /// The setting's text form.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Fail => "fail",
        }
    }
}

/// `Display` (its `as_str`) and `FromStr` of a setting's enum: the text, trimmed and
/// lower-cased, is one of the `(text, variant)` choices, or the error names what is expected.
macro_rules! setting_text {
    ($setting:ty, $expected:literal, [$(($text:literal, $variant:ident)),+ $(,)?]) => {
        impl fmt::Display for $setting {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $setting {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                parse_choice(s, &[$(($text, Self::$variant)),+], $expected)
            }
        }
    };
}

setting_text!(
    VersionMatch,
    "none, strict or current_or_older",
    [
        ("none", None),
        ("", None),
        ("strict", Strict),
        ("current_or_older", CurrentOrOlder),
        ("current-or-older", CurrentOrOlder),
    ]
);
setting_text!(
    VersionFailure,
    "reject or fail",
    [("reject", Reject), ("", Reject), ("fail", Fail)]
);

/// The value `choices` gives the trimmed, lower-cased `s`, or an error naming what was
/// `expected`.
fn parse_choice<T: Copy>(s: &str, choices: &[(&str, T)], expected: &str) -> Result<T, String> {
    let s = s.trim().to_ascii_lowercase();
    choices
        .iter()
        .find(|(name, _)| *name == s)
        .map(|(_, value)| *value)
        .ok_or_else(|| format!("expected {expected}, got {s:?}"))
}

/// Orders two versions: component-wise by number when both are dot-separated whole numbers
/// (`1.10` after `1.9`; missing components count as 0, so `2` equals `2.0`), else by string
/// order. The empty version (an unversioned instance) is older than every other.
#[must_use]
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let numeric = |v: &str| -> Option<Vec<u64>> {
        if v.is_empty() {
            return None;
        }
        v.split('.').map(|c| c.trim().parse::<u64>().ok()).collect()
    };
    match (numeric(a), numeric(b)) {
        (Some(x), Some(y)) => {
            let len = x.len().max(y.len());
            let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
            (0..len)
                .map(|i| at(&x, i).cmp(&at(&y, i)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number_else_as_strings() {
        assert_eq!(compare_versions("1.10", "1.9"), Ordering::Greater);
        assert_eq!(compare_versions("2", "2.0"), Ordering::Equal);
        assert_eq!(compare_versions("1.2.3", "1.3"), Ordering::Less);
        assert_eq!(compare_versions("", "1"), Ordering::Less);
        assert_eq!(compare_versions("beta", "alpha"), Ordering::Greater);
        assert_eq!(compare_versions("1.x", "1.10"), "1.x".cmp("1.10"));
    }

    #[test]
    fn strategies_accept_what_they_name() {
        use VersionMatch::*;
        assert!(None.accepts("2", Some("3")));
        assert!(Strict.accepts("2", Some("2.0")));
        assert!(!Strict.accepts("2", Some("1")));
        assert!(!Strict.accepts("2", Option::None));
        assert!(CurrentOrOlder.accepts("2", Some("1.9")));
        assert!(CurrentOrOlder.accepts("2", Option::None));
        assert!(!CurrentOrOlder.accepts("2", Some("2.1")));
        assert_eq!("current-or-older".parse(), Ok(CurrentOrOlder));
        assert!("sometimes".parse::<VersionMatch>().is_err());
        assert_eq!("FAIL".parse(), Ok(VersionFailure::Fail));
    }

    #[test]
    fn settings_parse_validate_and_name_the_setting() {
        use std::collections::HashMap;

        use crate::settings::test_support::env_error;
        use crate::settings::Settings;
        let env: HashMap<String, String> = [
            ("TASKHUB_WORKER_VERSION", "2.1"),
            ("TASKHUB_VERSION_MATCH", "current_or_older"),
            ("TASKHUB_VERSION_FAILURE", "fail"),
            ("TASKHUB_DEFAULT_VERSION", "2.1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let s = Settings::load(None, &env).unwrap();
        assert_eq!(s.worker_version, "2.1");
        assert_eq!(s.version_match, VersionMatch::CurrentOrOlder);
        assert_eq!(s.version_failure, VersionFailure::Fail);
        assert_eq!(s.default_version, "2.1");

        let err = env_error("TASKHUB_VERSION_MATCH", "strict");
        assert!(
            err.contains("version_match") && err.contains("worker_version"),
            "{err}"
        );
        let err = env_error("TASKHUB_VERSION_FAILURE", "shrug");
        assert!(
            err.contains("version_failure") && err.contains("TASKHUB_VERSION_FAILURE"),
            "{err}"
        );
    }
}
