//! Percentiles of samples.

use std::time::Duration;

/// Nearest-rank percentile (`q` in 0..=1) of `samples`, in milliseconds; `None` if empty.
pub fn percentile_ms(samples: &[Duration], q: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1].as_secs_f64() * 1000.0)
}

/// The differences between consecutive instants (empty for fewer than two).
pub fn gaps(instants: &[std::time::Instant]) -> Vec<Duration> {
    instants
        .windows(2)
        .map(|w| w[1].saturating_duration_since(w[0]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let ms: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile_ms(&ms, 0.5), Some(50.0));
        assert_eq!(percentile_ms(&ms, 0.99), Some(99.0));
        assert_eq!(percentile_ms(&ms, 1.0), Some(100.0));
        assert_eq!(percentile_ms(&[], 0.5), None);
    }
}
