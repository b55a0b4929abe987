//! Payloads: Taskhub's [`Payload`] ↔ `google.protobuf.StringValue`.
//!
//! The protocol's payloads are strings, and they pass through unchanged both ways: JSON text,
//! a JSON `null` sent as the text `"null"` (given back as `"null"`), and text that is not JSON
//! at all (the SDKs' large-payload tokens such as `blob:v1:<container>:<blob>`). No value is an
//! absent payload and goes back as no value; the empty string is taken as no value too.

use taskhub::Payload;

use super::ConvertError;

/// A payload going out: its text as stored; absent is no value.
#[must_use]
pub fn payload_to_proto(p: &Payload) -> Option<String> {
    p.text().map(str::to_owned)
}

/// A payload coming in: the text as sent (JSON or not); no value or the empty string is
/// absent.
///
/// # Errors
/// None today (any text is a payload); the `Result` and `field` let a future limit refuse a
/// payload by the name of its field.
pub fn payload_from_proto(
    value: Option<&str>,
    _field: &'static str,
) -> Result<Payload, ConvertError> {
    Ok(value.map_or_else(Payload::absent, Payload::from_text))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn round_trip(value: Option<&str>) -> Option<String> {
        payload_to_proto(&payload_from_proto(value, "input").unwrap())
    }

    #[test]
    fn absent_stays_absent_and_null_stays_null() {
        assert_eq!(
            payload_from_proto(None, "input").unwrap(),
            Payload::absent()
        );
        assert_eq!(
            payload_from_proto(Some(""), "input").unwrap(),
            Payload::absent()
        );
        assert_eq!(round_trip(None), None);
        assert_eq!(round_trip(Some("")), None);
        assert_eq!(
            payload_from_proto(Some("null"), "input").unwrap(),
            Payload::null()
        );
        assert_eq!(round_trip(Some("null")).as_deref(), Some("null"));
        // A Rust `()` goes out as the JSON null it is.
        assert_eq!(payload_to_proto(&Payload::null()).as_deref(), Some("null"));
    }

    #[test]
    fn text_is_kept_as_sent_json_or_not() {
        // Digits beyond 64 bits and key order survive both ways.
        let json = r#"{"b":123456789012345678901234567890,"a":1.50}"#;
        assert_eq!(round_trip(Some(json)).as_deref(), Some(json));
        for opaque in ["blob:v1:payloads:order-1-input", "{nope", "plain text", " "] {
            let p = payload_from_proto(Some(opaque), "input").unwrap();
            assert_eq!(p.as_str(), opaque);
            assert_eq!(round_trip(Some(opaque)).as_deref(), Some(opaque));
        }
    }
}
