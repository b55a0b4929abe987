//! Timestamps as text: RFC 3339 in UTC for output; RFC 3339 (any offset) or Unix milliseconds
//! for input.

use taskhub::Timestamp;

/// `2024-05-01T12:34:56.789Z`.
pub fn format(ts: Timestamp) -> String {
    let ms = ts.as_millis();
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX);
    let (y, m, d) = civil_from_days(days);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
}

/// Parses Unix milliseconds (`1714566896789`) or RFC 3339 (`2024-05-01T12:34:56Z`,
/// `2024-05-01T14:34:56.5+02:00`, or a bare date `2024-05-01` meaning midnight UTC).
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
    let num = |s: &str| -> Option<i64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (date, rest) = match t.find(['T', 't', ' ']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let mut parts = date.splitn(3, '-');
    let year = num(parts.next()?)?;
    let month = num(parts.next()?)?;
    let day = num(parts.next()?)?;
    if !(1..=12).contains(&month) || !(1..=days_in_month(year, month)).contains(&day) {
        return None;
    }
    let mut millis_of_day = 0;
    let mut offset_secs = 0;
    if let Some(rest) = rest {
        let (clock, offset) = if let Some(c) = rest.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else {
            let i = rest.rfind(['+', '-'])?;
            let (c, o) = rest.split_at(i);
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (oh, om) = o[1..].split_once(':')?;
            let (oh, om) = (num(oh)?, num(om)?);
            if oh > 23 || om > 59 {
                return None;
            }
            (c, sign * (oh * 3600 + om * 60))
        };
        offset_secs = offset;
        let (hms, frac) = match clock.split_once('.') {
            Some((hms, frac)) => (hms, Some(frac)),
            None => (clock, None),
        };
        let mut f = hms.splitn(3, ':');
        let h = num(f.next()?)?;
        let m = num(f.next()?)?;
        let s = num(f.next()?)?;
        if h > 23 || m > 59 || s > 60 {
            return None;
        }
        let ms = match frac {
            Some(frac) => {
                num(frac)?;
                let digits: String = frac.chars().chain("000".chars()).take(3).collect();
                num(&digits)?
            }
            None => 0,
        };
        millis_of_day = ((h * 60 + m) * 60 + s) * 1000 + ms;
    }
    let days = days_from_civil(year, month, day);
    let ms = days * 86_400_000 + millis_of_day - offset_secs * 1000;
    u64::try_from(ms).ok().map(Timestamp::from_millis)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
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
