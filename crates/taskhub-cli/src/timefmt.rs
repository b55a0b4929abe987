//! Timestamps as text in the CLI: RFC 3339 in UTC for output; RFC 3339 (any offset) or Unix
//! milliseconds for input (by `taskhub::time`), with the CLI's error message.

use taskhub::Timestamp;

/// `2024-05-01T12:34:56.789Z`.
pub fn format(ts: Timestamp) -> String {
    taskhub::time::rfc3339_millis(ts)
}

/// Parses Unix milliseconds (`1714566896789`) or RFC 3339 (`2024-05-01T12:34:56Z`,
/// `2024-05-01T14:34:56.5+02:00`, or a bare date `2024-05-01` meaning midnight UTC), as
/// [`taskhub::time::parse_time`] does, with an error naming the text.
pub fn parse(text: &str) -> Result<Timestamp, String> {
    taskhub::time::parse_time(text).ok_or_else(|| {
        format!(
            "invalid time {text:?}: expected RFC 3339 (2024-05-01T12:00:00Z) or Unix milliseconds"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parses_and_names_a_bad_time() {
        let ts = Timestamp::from_millis(1_714_566_896_789);
        assert_eq!(format(ts), "2024-05-01T12:34:56.789Z");
        assert_eq!(parse("2024-05-01T14:34:56.789+02:00"), Ok(ts));
        let err = parse("yesterday").unwrap_err();
        assert!(
            err.contains("\"yesterday\"") && err.contains("RFC 3339"),
            "{err}"
        );
    }
}
