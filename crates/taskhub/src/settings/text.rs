//! How a setting's value is read: from `taskhub.toml` (a string, number or boolean) or from
//! text (an environment variable, a flag). Serde helpers for the fields of
//! [`Settings`](super::Settings), each with an error message that shows the bad value.

use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::Serializer;

/// A value as `taskhub.toml`, an environment variable or a flag gives it.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum Raw {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl Raw {
    fn text(&self) -> String {
        match self {
            Self::Bool(b) => b.to_string(),
            Self::Int(i) => i.to_string(),
            Self::Float(f) => f.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// A whole number (`8`, `"8"`).
pub(crate) fn number<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
    T::Error: Display,
{
    let raw = <Raw as serde::Deserialize>::deserialize(d)?;
    let text = raw.text();
    let n = text
        .trim()
        .parse::<u64>()
        .map_err(|e| de::Error::custom(format!("expected a whole number, got {text:?}: {e}")))?;
    T::try_from(n).map_err(|e| de::Error::custom(format!("{text:?}: {e}")))
}

/// A boolean (`true`, `"yes"`, `"0"`, ...).
pub(crate) fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let raw = <Raw as serde::Deserialize>::deserialize(d)?;
    if let Raw::Bool(b) = raw {
        return Ok(b);
    }
    let text = raw.text();
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(de::Error::custom(format!(
            "expected true or false, got {text:?}"
        ))),
    }
}

/// Text, trimmed.
pub(crate) fn trimmed<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let raw = <Raw as serde::Deserialize>::deserialize(d)?;
    Ok(raw.text().trim().to_owned())
}

/// A value parsed from its text form (`FromStr`, whose error says what is expected).
pub(crate) fn parsed<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    let raw = <Raw as serde::Deserialize>::deserialize(d)?;
    raw.text().parse::<T>().map_err(de::Error::custom)
}

/// Writes a value in its text form (the inverse of [`parsed`]).
pub(crate) fn display<S: Serializer, T: Display>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Parses a duration: seconds as a plain number (`30`, `0.5`), else humantime's format
/// (`500ms`, `30s`, `5m`, `1h`, `1h 30m`).
#[must_use]
pub fn parse_duration(text: &str) -> Option<Duration> {
    taskhub_storage::options::parse::duration(text)
}

/// Durations: a number of seconds, or text [`parse_duration`] reads; written in humantime's
/// format.
pub(crate) mod duration {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(*v))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration such as 30, 30s or 500ms")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).ok_or_else(|| {
                    E::custom(format!(
                        "expected a duration such as 30, 30s, 500ms or 1h 30m, got {v:?}"
                    ))
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                Ok(Duration::from_secs(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                u64::try_from(v)
                    .map(Duration::from_secs)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_seconds_or_humantime() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration(" 0.25 "), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1h 30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2min"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("NaN"), None);
    }
}
