//! RFC 1123 dates (`Mon, 23 Nov 2026 18:14:27 GMT`), as Azure Storage writes them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use taskhub_core::Timestamp;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days since 1970-01-01 to (year, month 1-12, day 1-31).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// (year, month, day) to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Now, formatted for `x-ms-date`.
pub(crate) fn now_rfc1123() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    format_rfc1123(secs)
}

pub(crate) fn format_rfc1123(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil(days);
    let weekday = DAYS[usize::try_from(days.rem_euclid(7)).unwrap_or(0)];
    let month = MONTHS[(m - 1) as usize];
    format!(
        "{weekday}, {d:02} {month} {y} {:02}:{:02}:{:02} GMT",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Parses an RFC 1123 date; `None` if it is not one.
pub(crate) fn parse_rfc1123(text: &str) -> Option<Timestamp> {
    let mut it = text.split_whitespace().skip(1);
    let d: u32 = it.next()?.parse().ok()?;
    let month = it.next()?;
    let m = u32::try_from(MONTHS.iter().position(|x| *x == month)? + 1).ok()?;
    let y: i64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':').map(str::parse::<u64>);
    let (h, mi, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    let days = u64::try_from(days_from_civil(y, m, d)).ok()?;
    Some(Timestamp::from_millis(
        (days * 86_400 + h * 3600 + mi * 60 + s) * 1000,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(
            format_rfc1123(1_795_457_667),
            "Mon, 23 Nov 2026 18:14:27 GMT"
        );
        assert_eq!(
            parse_rfc1123("Mon, 23 Nov 2026 18:14:27 GMT"),
            Some(Timestamp::from_millis(1_795_457_667_000))
        );
        assert_eq!(format_rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(parse_rfc1123("garbage"), None);
    }
}
