//! ISO 8601 / RFC 3339 timestamps in UTC, as the Durable Functions API writes and reads them.

use taskhub::Timestamp;

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn parts(t: Timestamp) -> (i64, u32, u32, u64, u64, u64, u64) {
    let ms = t.as_millis();
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

/// `2024-05-01T12:30:00Z`: whole seconds, as Durable Functions writes `createdTime`.
#[must_use]
pub fn seconds(t: Timestamp) -> String {
    let (y, mo, d, h, mi, s, _) = parts(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `2024-05-01T12:30:00.123Z`: with milliseconds.
#[must_use]
pub fn millis(t: Timestamp) -> String {
    let (y, mo, d, h, mi, s, ms) = parts(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
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
    let num = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (date, time) = match t.find(['T', 't', ' ']) {
        Some(i) => (&t[..i], &t[i + 1..]),
        None => (t, "00:00:00Z"),
    };
    let mut dp = date.split('-');
    let y = i64::from(num(dp.next()?)?);
    let mo = num(dp.next()?)?;
    let d = num(dp.next()?)?;
    if dp.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let (clock, offset_secs) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0i64)
    } else if let Some(i) = time.rfind(['+', '-']) {
        let (c, off) = time.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let mut op = off[1..].split(':');
        let oh = i64::from(num(op.next()?)?);
        let om = i64::from(op.next().map_or(Some(0), num)?);
        (c, sign * (oh * 3600 + om * 60))
    } else {
        (time, 0)
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((a, f)) => (a, f),
        None => (clock, ""),
    };
    let mut tp = hms.split(':');
    let h = num(tp.next()?)?;
    let mi = num(tp.next()?)?;
    let s = tp.next().map_or(Some(0), num)?;
    if tp.next().is_some() || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let ms = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().chain("000".chars()).take(3).collect();
        i64::from(num(&digits)?)
    };
    let secs = days_from_civil(y, mo, d) * 86_400
        + i64::from(h) * 3600
        + i64::from(mi) * 60
        + i64::from(s)
        - offset_secs;
    let total = secs.checked_mul(1000)?.checked_add(ms)?;
    u64::try_from(total).ok().map(Timestamp::from_millis)
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
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
