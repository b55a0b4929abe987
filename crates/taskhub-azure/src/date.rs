//! RFC 1123 dates (`Mon, 23 Nov 2026 18:14:27 GMT`), as Azure Storage writes them (through
//! `httpdate`, already in the tree under hyper).

use std::time::SystemTime;

use taskhub_core::Timestamp;

/// Now, formatted for `x-ms-date`.
pub(crate) fn now_rfc1123() -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "x-ms-date must be the real wall-clock time (the service refuses a request \
                  more than 15 minutes off), whatever clock the runtime was given"
    )]
    let now = SystemTime::now();
    httpdate::fmt_http_date(now)
}

/// Parses an RFC 1123 date; `None` if it is not one.
pub(crate) fn parse_rfc1123(text: &str) -> Option<Timestamp> {
    httpdate::parse_http_date(text)
        .ok()
        .map(Timestamp::from_system_time)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn format_rfc1123(secs: u64) -> String {
        httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
    }

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
