//! A JSON value shown as its text: a payload keeps the digits it was stored with (a
//! `serde_json::Value` would turn `12345678901234567890123` into `1.2345678901234568e22`).

use serde::Serialize;
use serde_json::value::RawValue;
use taskhub::Payload;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// Any JSON value, written out as the text it holds.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(crate) struct JsonText(Box<RawValue>);

impl JsonText {
    /// A payload as stored; one that is not valid JSON (an SDK's opaque payload) becomes a
    /// JSON string of its text; an absent one is `null`.
    pub fn of(payload: &Payload) -> Self {
        payload.text().map_or_else(Self::null, Self::text)
    }

    /// `payload`, or `null` without one.
    pub fn of_opt(payload: Option<&Payload>) -> Self {
        payload.map_or_else(Self::null, Self::of)
    }

    /// JSON text as it is; text that is not JSON becomes a JSON string.
    pub fn text(text: &str) -> Self {
        RawValue::from_string(text.to_owned()).map_or_else(|_| Self::string(text), Self)
    }

    /// A JSON string.
    pub fn string(text: &str) -> Self {
        serde_json::value::to_raw_value(text).map_or_else(|_| Self::null(), Self)
    }

    /// `null`.
    pub fn null() -> Self {
        Self(RawValue::NULL.to_owned())
    }
}

impl PartialSchema for JsonText {
    fn schema() -> RefOr<Schema> {
        serde_json::Value::schema()
    }
}

impl ToSchema for JsonText {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_kept_and_non_json_becomes_a_string() {
        let big = "{\"n\":12345678901234567890123}";
        assert_eq!(serde_json::to_string(&JsonText::text(big)).unwrap(), big);
        assert_eq!(
            serde_json::to_string(&JsonText::text("not json")).unwrap(),
            "\"not json\""
        );
        assert_eq!(serde_json::to_string(&JsonText::null()).unwrap(), "null");
    }

    #[test]
    fn payloads_show_as_json_or_as_text() {
        let show = |p: &Payload| serde_json::to_string(&JsonText::of(p)).unwrap();
        assert_eq!(show(&Payload::from_text("blob:v1:c:b")), "\"blob:v1:c:b\"");
        assert_eq!(show(&Payload::from_text("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(show(&Payload::null()), "null");
        assert_eq!(show(&Payload::absent()), "null");
    }
}
