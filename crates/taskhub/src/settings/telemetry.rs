//! The telemetry setting: `otlp_endpoint`. The runtime does not read it; the `taskhub` binary
//! built with its `otlp` feature exports its spans there.

/// Reads `otlp_endpoint`: empty (no export) or an `http://` / `https://` URL.
pub(crate) fn endpoint<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = super::text::trimmed(d)?;
    if !(v.is_empty() || v.starts_with("http://") || v.starts_with("https://")) {
        return Err(serde::de::Error::custom(format!(
            "expected an http:// or https:// URL of an OTLP/HTTP collector (such as http://127.0.0.1:4318), got {v:?}"
        )));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::collections::HashMap;

    use super::super::Settings;

    #[test]
    fn the_endpoint_is_a_url_or_nothing() {
        assert_eq!(Settings::default().otlp_endpoint, "");
        let env = HashMap::from([(
            "TASKHUB_OTLP_ENDPOINT".to_owned(),
            " http://127.0.0.1:4318 ".to_owned(),
        )]);
        let s = Settings::load(None, &env).unwrap();
        assert_eq!(s.otlp_endpoint, "http://127.0.0.1:4318");
        let env = HashMap::from([(
            "TASKHUB_OTLP_ENDPOINT".to_owned(),
            "collector:4317".to_owned(),
        )]);
        let err = Settings::load(None, &env).unwrap_err().to_string();
        assert!(
            err.contains("otlp_endpoint") && err.contains("http://"),
            "{err}"
        );
    }
}
