//! The value parsers backends share in their `set()`: each returns the reason for an
//! [`invalid`](super::BackendOptions::invalid) error when the text does not fit.

use std::time::Duration;

/// Seconds as a plain number (`5`, `0.5`), else humantime's format (`500ms`, `5s`, `1m`,
/// `1m 30s`), as the runtime's settings read durations.
#[must_use]
pub fn duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten();
    }
    humantime::parse_duration(t).ok()
}

/// A whole number of at least 1 (a pool size, a batch cap).
///
/// # Errors
/// The reason: not a whole number, or 0.
pub fn count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a whole number, got {text:?}: {e}")),
    }
}

/// A switch: `true`, `on`, `1`, `yes` or `false`, `off`, `0`, `no` (any case).
///
/// # Errors
/// The reason, naming the text.
pub fn switch(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "1" | "yes" => Ok(true),
        "false" | "off" | "0" | "no" => Ok(false),
        _ => Err(format!("expected true or false, got {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_counts_and_switches() {
        assert_eq!(duration("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(duration(" 250ms "), Some(Duration::from_millis(250)));
        assert_eq!(duration("1m 30s"), Some(Duration::from_secs(90)));
        assert_eq!(duration("-1"), None);
        assert_eq!(duration("soon"), None);
        assert_eq!(count(" 4 "), Ok(4));
        assert!(count("0").unwrap_err().contains("at least 1"));
        assert!(count("x").unwrap_err().contains("whole number"));
        assert_eq!(switch("On"), Ok(true));
        assert_eq!(switch("no"), Ok(false));
        assert!(switch("maybe").unwrap_err().contains("\"maybe\""));
    }
}
