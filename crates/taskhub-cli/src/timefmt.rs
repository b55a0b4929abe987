//! Timestamps as text: RFC 3339 in UTC for output; RFC 3339 (any offset) or Unix milliseconds
//! for input.

use taskhub::Timestamp;

/// `2024-05-01T12:34:56.789Z`.
pub fn format(ts: Timestamp) -> String {
    let ms = i64::try_from(ts.as_millis()).unwrap_or(i64::MAX);
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => format!("{t:.3}"),
        // Beyond jiff's range (year 9999): the raw milliseconds.
        Err(_) => ms.to_string(),
    }
}

/// Parses Unix milliseconds (`1714566896789`) or RFC 3339 (`2024-05-01T12:34:56Z`,
/// `2024-05-01T14:34:56.5+02:00`, or a bare date `2024-05-01` meaning midnight UTC), with
/// `jiff`.
pub fn parse(text: &str) -> Result<Timestamp, String> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map(Timestamp::from_millis)
            .map_err(|e| format!("invalid time {text:?}: {e}"));
    }
    parse_rfc3339(t).ok_or_else(|| {
        format!(
            "invalid time {text:?}: expected RFC 3339 (2024-05-01T12:00:00Z) or Unix milliseconds"
        )
    })
}

fn parse_rfc3339(t: &str) -> Option<Timestamp> {
    let ts = match t.parse::<jiff::Timestamp>() {
        Ok(ts) => ts,
        // A bare date: midnight UTC.
        Err(_) if !t.contains(['T', 't', ' ', ':']) => t
            .parse::<jiff::civil::Date>()
            .ok()?
            .to_zoned(jiff::tz::TimeZone::UTC)
            .ok()?
            .timestamp(),
        Err(_) => return None,
    };
    u64::try_from(ts.as_millisecond())
        .ok()
        .map(Timestamp::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_round_trip() {
        let ts = Timestamp::from_millis(1_714_566_896_789);
        assert_eq!(format(ts), "2024-05-01T12:34:56.789Z");
        assert_eq!(parse("2024-05-01T12:34:56.789Z"), Ok(ts));
        assert_eq!(parse("2024-05-01T14:34:56.789+02:00"), Ok(ts));
        assert_eq!(parse("1714566896789"), Ok(ts));
        assert_eq!(format(Timestamp::EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            parse("2024-02-29"),
            Ok(Timestamp::from_millis(1_709_164_800_000))
        );
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2023-02-29",
            "2024-05-01T25:00:00Z",
            "12:00",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
