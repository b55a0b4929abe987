//! Timestamps as text, for every front end (the CLI, the HTTP API): RFC 3339 in UTC out, and
//! RFC 3339 or Unix milliseconds in, formatted and parsed by `jiff`.

use taskhub_core::Timestamp;

fn jiff_of(t: Timestamp) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_millisecond(i64::try_from(t.as_millis()).ok()?).ok()
}

/// `2024-05-01T12:30:00Z`: whole seconds, as Durable Functions writes `createdTime` (the raw
/// milliseconds beyond year 9999).
#[must_use]
pub fn rfc3339_seconds(t: Timestamp) -> String {
    jiff_of(t).map_or_else(|| t.as_millis().to_string(), |j| format!("{j:.0}"))
}

/// `2024-05-01T12:30:00.123Z`: with milliseconds (the raw milliseconds beyond year 9999).
#[must_use]
pub fn rfc3339_millis(t: Timestamp) -> String {
    jiff_of(t).map_or_else(|| t.as_millis().to_string(), |j| format!("{j:.3}"))
}

/// Parses Unix milliseconds (`1714566896789`) or an RFC 3339 time (`2024-05-01T12:30:00Z`;
/// fractions and offsets such as `+02:00` allowed; a time without offset is UTC; a date alone
/// is its midnight UTC). `None` if malformed or before 1970.
#[must_use]
pub fn parse_time(text: &str) -> Option<Timestamp> {
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
        assert_eq!(rfc3339_seconds(t), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_millis(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339_millis(Timestamp::EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(parse_time(&rfc3339_millis(t)), Some(t));
        assert_eq!(parse_time("2023-11-14T23:13:20.123+01:00"), Some(t));
        assert_eq!(parse_time("1700000000123"), Some(t));
        assert_eq!(parse_time("1970-01-01"), Some(Timestamp::EPOCH));
        assert_eq!(
            parse_time("2024-02-29"),
            Some(Timestamp::from_millis(1_709_164_800_000))
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.123"),
            Some(t),
            "no offset: UTC"
        );
        assert_eq!(
            rfc3339_seconds(Timestamp::from_millis(951_782_400_000)),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "",
            "yesterday",
            "2023-13-01T00:00:00Z",
            "2023-02-29",
            "2023-01-01T25:00:00Z",
            "1960-01-01",
            "12:00",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
