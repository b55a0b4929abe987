//! Serialized user data: inputs, outputs, event data and custom status.
//!
//! A payload is text, as the Durable Task protocol's `StringValue` payloads are. Rust code
//! writes JSON; an SDK of another language may send text that is not JSON (a large-payload
//! token such as `blob:v1:<container>:<blob>`), which is kept and passed on unchanged. A
//! payload may also be *absent* (an SDK sent none), which is not the same as the JSON `null`
//! a Rust `()` becomes: each is given back as it came. An absent payload is stored as the empty
//! string (which no older record holds), reads as `null` and goes back to an SDK as no value.
//!
//! [`Payload::from_json`] validates its text; [`Payload::from_text`] (storage, the gRPC
//! endpoint) does not; [`Payload::parse`] of text that is not JSON is [`CoreError::NotJson`],
//! naming the value and quoting the text's start.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// How much of a payload that is not JSON an error message quotes.
const QUOTED: usize = 60;

/// A user value as text: JSON text (what Rust code writes), text that is not JSON (an SDK's
/// opaque payload, passed through unchanged) or absent.
///
/// Payloads stay as text in history and messages; they are only deserialized into the user's
/// type at the point where the user asks for it. Cloning is cheap (shared text).
///
/// Stored form: the text as a JSON string. An absent payload is the empty string, which is
/// never JSON text, so stored data written before absent and opaque payloads existed reads the
/// same.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Payload(Arc<str>);

impl Payload {
    /// The JSON `null` payload, used for `()` inputs and outputs.
    #[must_use]
    pub fn null() -> Self {
        Self(Arc::from("null"))
    }

    /// The absent payload: none was given (an SDK sent no value). Rust code reads it as JSON
    /// `null`; it goes back to an SDK as no value.
    #[must_use]
    pub fn absent() -> Self {
        Self(Arc::from(""))
    }

    /// Serializes `value` to JSON.
    ///
    /// # Errors
    /// [`CoreError::Payload`] if serialization fails; `what` names the value in the message.
    pub fn to_payload<T: Serialize + ?Sized>(value: &T, what: &str) -> Result<Self, CoreError> {
        serde_json::to_string(value)
            .map(|s| Self(Arc::from(s)))
            .map_err(|e| CoreError::Payload {
                direction: "serialize",
                what: what.to_owned(),
                detail: e.to_string(),
            })
    }

    /// Deserializes this payload into `T`. An absent payload reads as JSON `null`.
    ///
    /// # Errors
    /// [`CoreError::NotJson`] if the payload is not JSON text (an SDK's opaque payload);
    /// [`CoreError::Payload`] if the JSON does not match `T`. `what` names the value.
    pub fn parse<T: DeserializeOwned>(&self, what: &str) -> Result<T, CoreError> {
        let text = if self.is_absent() { "null" } else { &self.0 };
        serde_json::from_str(text).map_err(|e| {
            if self.is_json() {
                CoreError::Payload {
                    direction: "deserialize",
                    what: what.to_owned(),
                    detail: e.to_string(),
                }
            } else {
                CoreError::NotJson {
                    what: what.to_owned(),
                    text: quote(&self.0),
                }
            }
        })
    }

    /// Wraps JSON text that is already serialized (for example a CLI argument). The text is
    /// validated as JSON.
    ///
    /// # Errors
    /// [`CoreError::Payload`] if `json` is not valid JSON.
    pub fn from_json(json: impl Into<String>) -> Result<Self, CoreError> {
        let json = json.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&json).map_err(|e| CoreError::Payload {
            direction: "deserialize",
            what: "raw JSON".to_owned(),
            detail: e.to_string(),
        })?;
        Ok(Self(Arc::from(json)))
    }

    /// Wraps text as it is, JSON or not (an SDK's payload, or one read from storage). The
    /// empty string is the absent payload.
    #[must_use]
    pub fn from_text(text: impl Into<Arc<str>>) -> Self {
        Self(text.into())
    }

    /// The text: JSON text, the opaque text as given, or `""` when absent.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, or `None` when absent.
    #[must_use]
    pub fn text(&self) -> Option<&str> {
        (!self.is_absent()).then_some(&*self.0)
    }

    /// True if no value was given.
    #[must_use]
    pub fn is_absent(&self) -> bool {
        self.0.is_empty()
    }

    /// True if the text is JSON (or the payload is absent, which reads as `null`). This parses
    /// the text: meant for display and error paths, not for every read.
    #[must_use]
    pub fn is_json(&self) -> bool {
        self.is_absent() || serde_json::from_str::<serde::de::IgnoredAny>(&self.0).is_ok()
    }

    /// Size of the text in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if the payload is absent (its text is empty).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The start of `text` for an error message.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTED) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or_default()),
        None => text.to_owned(),
    }
}

impl Default for Payload {
    fn default() -> Self {
        Self::null()
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Payload({})", &self.0)
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let p = Payload::to_payload(&vec![1, 2], "x").unwrap();
        assert_eq!(p.as_str(), "[1,2]");
        assert_eq!(p.parse::<Vec<i32>>("x").unwrap(), vec![1, 2]);
        let err = p.parse::<String>("activity 'A' output").unwrap_err();
        assert!(err.to_string().contains("activity 'A' output"), "{err}");
        assert!(Payload::from_json("{nope").is_err());
        assert_eq!(Payload::null().parse::<()>("unit").unwrap(), ());
    }

    #[test]
    fn opaque_text_is_kept_and_parsing_it_names_it() {
        let token = "blob:v1:payloads:order-1/input";
        let p = Payload::from_text(token);
        assert_eq!(p.as_str(), token);
        assert_eq!(p.text(), Some(token));
        assert!(!p.is_json() && !p.is_absent());
        let err = p.parse::<String>("orchestration input").unwrap_err();
        assert!(
            matches!(&err, CoreError::NotJson { what, text } if what == "orchestration input" && text == token),
            "{err}"
        );
        assert!(err.to_string().contains(token), "{err}");
        // A long one is quoted in part.
        let long = Payload::from_text("x".repeat(500));
        let CoreError::NotJson { text, .. } = long.parse::<()>("y").unwrap_err() else {
            panic!("not NotJson");
        };
        assert!(text.chars().count() <= QUOTED + 1, "{text}");
        // JSON that does not match the type is still a payload error.
        assert!(matches!(
            Payload::from_text("[1]").parse::<String>("z"),
            Err(CoreError::Payload { .. })
        ));
    }

    #[test]
    fn absent_is_not_null_but_reads_as_null() {
        let absent = Payload::absent();
        assert!(absent.is_absent() && absent.is_json());
        assert_eq!(absent.text(), None);
        assert_ne!(absent, Payload::null());
        assert_eq!(Payload::null().text(), Some("null"));
        assert_eq!(absent.parse::<()>("unit").unwrap(), ());
        assert_eq!(absent.parse::<Option<u32>>("opt").unwrap(), None);
        assert_eq!(Payload::from_text(""), absent);
    }

    #[test]
    fn stored_form_keeps_every_kind_and_reads_old_records() {
        for p in [
            Payload::null(),
            Payload::absent(),
            Payload::from_text("blob:v1:c:b"),
            Payload::from_json("{\"a\":1}").unwrap(),
        ] {
            let stored = serde_json::to_string(&p).unwrap();
            assert_eq!(
                serde_json::from_str::<Payload>(&stored).unwrap(),
                p,
                "{stored}"
            );
        }
        // What version 1 has always written: JSON text as a JSON string.
        let old: Payload = serde_json::from_str("\"\\\"Tokyo\\\"\"").unwrap();
        assert_eq!(old.parse::<String>("city").unwrap(), "Tokyo");
    }
}
