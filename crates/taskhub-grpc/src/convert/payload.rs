//! Payloads: JSON text ↔ `google.protobuf.StringValue`.

use taskhub::Payload;

use super::ConvertError;

/// A payload going out: JSON `null` is absent, anything else its text as stored.
#[must_use]
pub fn payload_to_proto(p: &Payload) -> Option<String> {
    (p.as_str() != "null").then(|| p.as_str().to_owned())
}

/// A payload coming in: absent or empty is `null`; other text must be JSON (named `field`).
///
/// # Errors
/// [`ConvertError::Field`] if the text is not JSON.
pub fn payload_from_proto(
    value: Option<&str>,
    field: &'static str,
) -> Result<Payload, ConvertError> {
    match value {
        None | Some("") => Ok(Payload::null()),
        Some(text) => Payload::from_json(text)
            .map_err(|e| ConvertError::field(field, format!("not JSON text: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn null_is_absent_and_text_is_kept_as_sent() {
        assert_eq!(payload_to_proto(&Payload::null()), None);
        assert_eq!(payload_from_proto(None, "input").unwrap(), Payload::null());
        assert_eq!(
            payload_from_proto(Some(""), "input").unwrap(),
            Payload::null()
        );
        // Digits beyond 64 bits and key order survive both ways.
        let text = r#"{"b":123456789012345678901234567890,"a":1.50}"#;
        let p = payload_from_proto(Some(text), "input").unwrap();
        assert_eq!(p.as_str(), text);
        assert_eq!(payload_to_proto(&p).as_deref(), Some(text));
    }

    #[test]
    fn text_that_is_not_json_names_the_field() {
        let e = payload_from_proto(Some("{nope"), "input").unwrap_err();
        assert_eq!(e.field_name(), Some("input"));
        assert!(e.to_string().starts_with("input: not JSON"), "{e}");
    }
}
