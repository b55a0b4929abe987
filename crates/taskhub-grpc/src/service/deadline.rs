//! The call's deadline, from the `grpc-timeout` metadata the client sends.

use std::time::Duration;

use tonic::metadata::MetadataMap;

/// How long a call without a deadline waits before it is answered `DEADLINE_EXCEEDED` (the
/// client may give up earlier: its call is then dropped, and the wait with it).
pub(crate) const NO_DEADLINE_WAIT: Duration = Duration::from_secs(24 * 3600);

/// How long a wait may last: the call's `grpc-timeout` (`<up to 8 digits><H|M|S|m|u|n>`), if
/// it sent a valid one, less a tenth (at most 250 ms). At its deadline the client gives up on
/// the call itself; ending the wait a little earlier answers it `DEADLINE_EXCEEDED` from the
/// server, the code the SDKs turn into a timeout.
pub(crate) fn wait_budget(metadata: &MetadataMap) -> Option<Duration> {
    parse(metadata.get("grpc-timeout")?.to_str().ok()?).map(budget)
}

fn budget(deadline: Duration) -> Duration {
    deadline.saturating_sub((deadline / 10).min(Duration::from_millis(250)))
}

fn parse(value: &str) -> Option<Duration> {
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_grpc_timeout_header() {
        assert_eq!(parse("60S"), Some(Duration::from_secs(60)));
        assert_eq!(parse("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(parse("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse("99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(
            budget(Duration::from_millis(400)),
            Duration::from_millis(360)
        );
        assert_eq!(
            budget(Duration::from_secs(60)),
            Duration::from_millis(59_750)
        );
        for bad in ["", "S", "10", "10x", "123456789S", "-1S"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
