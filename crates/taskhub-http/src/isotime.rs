//! ISO 8601 / RFC 3339 timestamps in UTC, as the Durable Functions API writes and reads them
//! (formatted and parsed by `jiff`).

use taskhub::Timestamp;

fn jiff_of(t: Timestamp) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_millisecond(i64::try_from(t.as_millis()).ok()?).ok()
}

/// `2024-05-01T12:30:00Z`: whole seconds, as Durable Functions writes `createdTime`.
#[must_use]
pub fn seconds(t: Timestamp) -> String {
    jiff_of(t).map_or_else(|| t.as_millis().to_string(), |j| format!("{j:.0}"))
}

/// `2024-05-01T12:30:00.123Z`: with milliseconds.
#[must_use]
pub fn millis(t: Timestamp) -> String {
    jiff_of(t).map_or_else(|| t.as_millis().to_string(), |j| format!("{j:.3}"))
}

/// Parses an RFC 3339 time (`2024-05-01T12:30:00Z`, fractions and `+02:00` offsets allowed; a
/// time without offset is UTC; a date alone is its midnight UTC) or Unix milliseconds.
/// `None` if malformed.
#[must_use]
pub fn parse(text: &str) -> Option<Timestamp> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().ok().map(Timestamp::from_millis);
    }
    let utc = |dt: jiff::civil::DateTime| {
        dt.to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp())
    };
    let ts = t
        .parse::<jiff::Timestamp>()
        .ok()
        .or_else(|| t.parse::<jiff::civil::DateTime>().ok().and_then(utc))
        .or_else(|| {
            t.parse::<jiff::civil::Date>()
                .ok()
                .and_then(|d| utc(d.to_datetime(jiff::civil::Time::midnight())))
        })?;
    u64::try_from(ts.as_millisecond())
        .ok()
        .map(Timestamp::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_round_trip() {
        let t = Timestamp::from_millis(1_700_000_000_123);
        assert_eq!(seconds(t), "2023-11-14T22:13:20Z");
        assert_eq!(millis(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(parse(&millis(t)), Some(t));
        assert_eq!(parse("2023-11-14T23:13:20.123+01:00"), Some(t));
        assert_eq!(parse("1700000000123"), Some(t));
        assert_eq!(parse("1970-01-01"), Some(Timestamp::EPOCH));
        assert_eq!(parse("2023-11-14T22:13:20.123"), Some(t), "no offset: UTC");
        assert_eq!(
            seconds(Timestamp::from_millis(951_782_400_000)),
            "2000-02-29T00:00:00Z"
        );
        for bad in [
            "",
            "yesterday",
            "2023-13-01T00:00:00Z",
            "2023-01-01T25:00:00Z",
            "1960-01-01",
            "12:00",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
