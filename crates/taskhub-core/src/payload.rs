//! Serialized user data: inputs, outputs, event data and custom status.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// A user value serialized as JSON text.
///
/// Payloads stay as text in history and messages; they are only deserialized into the user's
/// type at the point where the user asks for it. Cloning is cheap (shared text).
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Payload(Arc<str>);

impl Payload {
    /// The JSON `null` payload, used for `()` inputs and outputs.
    #[must_use]
    pub fn null() -> Self {
        Self(Arc::from("null"))
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

    /// Deserializes this payload into `T`.
    ///
    /// # Errors
    /// [`CoreError::Payload`] if the JSON does not match `T`; `what` names the value.
    pub fn parse<T: DeserializeOwned>(&self, what: &str) -> Result<T, CoreError> {
        serde_json::from_str(&self.0).map_err(|e| CoreError::Payload {
            direction: "deserialize",
            what: what.to_owned(),
            detail: e.to_string(),
        })
    }

    /// Wraps JSON text that is already serialized (for example read from storage or a CLI
    /// argument). The text is validated as JSON.
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

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Size of the JSON text in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if the text is empty (never the case for valid JSON).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
}
