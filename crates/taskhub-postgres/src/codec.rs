//! Conversions between seam values and column values.

use taskhub_core::Timestamp;
use taskhub_storage::{ETag, QueueName, StorageError, StorageResult, MAX_PARTITIONS};

use crate::errors::corrupt;

/// The server's time in stored milliseconds: every visibility timeout and enqueue time is
/// judged by the server's clock, never a worker's. `statement_timestamp()` (the start of the
/// current statement) is stable within a statement, so a dequeue's `visible_at <= now` is an
/// index bound; `clock_timestamp()` is volatile and turns it into a filter over every row of
/// the queue.
pub(crate) const NOW_MS: &str = "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::bigint";

/// A timestamp as stored (milliseconds since the epoch; saturates at `i64::MAX`).
pub(crate) fn ts_to_sql(t: Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// A stored timestamp.
pub(crate) fn ts_from_sql(what: &str, ms: i64) -> StorageResult<Timestamp> {
    u64::try_from(ms)
        .map(Timestamp::from_millis)
        .map_err(|_| corrupt(what, format!("negative timestamp {ms}")))
}

/// A duration as stored milliseconds (rounded up, so a delay is never shortened).
pub(crate) fn ms(d: std::time::Duration) -> i64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// An ETag as the string the seam hands out.
pub(crate) fn etag_out(version: i64) -> ETag {
    ETag(version.to_string())
}

/// The stored version an ETag names, or `None` if it cannot be one of ours (matches nothing).
pub(crate) fn etag_in(etag: &ETag) -> Option<i64> {
    etag.0.parse().ok()
}

/// A queue as stored: its partition, or -1 for the work-item queue.
pub(crate) fn queue_to_sql(queue: QueueName) -> i64 {
    match queue {
        QueueName::Control(p) => i64::from(p),
        QueueName::WorkItems => -1,
    }
}

/// A stored queue.
pub(crate) fn queue_from_sql(v: i64) -> StorageResult<QueueName> {
    if v == -1 {
        return Ok(QueueName::WorkItems);
    }
    u32::try_from(v)
        .ok()
        .filter(|p| *p < MAX_PARTITIONS)
        .map(QueueName::Control)
        .ok_or_else(|| corrupt("queue name", format!("unknown queue {v}")))
}

/// Checks that a control queue names a partition that can exist.
pub(crate) fn check_queue(queue: QueueName) -> StorageResult<()> {
    match queue {
        QueueName::Control(p) if p >= MAX_PARTITIONS => {
            Err(StorageError::InvalidArgument(format!(
                "control queue of partition {p}: a hub has at most {MAX_PARTITIONS} partitions"
            )))
        }
        _ => Ok(()),
    }
}

/// A stored non-negative integer that must fit a `u32`.
pub(crate) fn u32_from_sql(what: &str, v: i64) -> StorageResult<u32> {
    u32::try_from(v).map_err(|_| corrupt(what, format!("{v} is out of range")))
}

/// A stored non-negative integer that must fit a `u64`.
pub(crate) fn u64_from_sql(what: &str, v: i64) -> StorageResult<u64> {
    u64::try_from(v).map_err(|_| corrupt(what, format!("{v} is out of range")))
}

/// A `u64` as stored (the seam's epochs and counts stay far below `i64::MAX`).
pub(crate) fn u64_to_sql(what: &str, v: u64) -> StorageResult<i64> {
    i64::try_from(v).map_err(|_| StorageError::InvalidArgument(format!("{what} {v} is too large")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn queues_etags_and_times_round_trip() {
        for q in [
            QueueName::WorkItems,
            QueueName::Control(0),
            QueueName::Control(15),
        ] {
            assert_eq!(queue_from_sql(queue_to_sql(q)).unwrap(), q);
        }
        assert!(queue_from_sql(16).is_err());
        assert!(check_queue(QueueName::Control(16)).is_err());
        assert_eq!(etag_in(&etag_out(42)), Some(42));
        assert_eq!(etag_in(&ETag("x".into())), None);
        assert!(ts_from_sql("t", -1).is_err());
        assert_eq!(ms(std::time::Duration::from_micros(1500)), 2);
    }
}
