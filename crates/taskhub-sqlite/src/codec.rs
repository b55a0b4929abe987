//! Conversions between seam values and SQLite column values.

use std::time::Duration;

use taskhub_core::Timestamp;
use taskhub_storage::{ETag, QueueName, StorageError, StorageResult, MAX_PARTITIONS};

use crate::errors::corrupt;

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

/// `now + d` in stored milliseconds.
pub(crate) fn after(now: Timestamp, d: Duration) -> i64 {
    ts_to_sql(now.saturating_add(d))
}

/// An ETag as the string the seam hands out.
pub(crate) fn etag_out(version: i64) -> ETag {
    ETag(version.to_string())
}

/// The stored version an ETag names, or `None` if the ETag cannot be one of ours (so it
/// matches nothing).
pub(crate) fn etag_in(etag: &ETag) -> Option<i64> {
    etag.0.parse().ok()
}

/// A queue name as stored.
pub(crate) fn queue_to_sql(queue: QueueName) -> String {
    queue.to_string()
}

/// A stored queue name.
pub(crate) fn queue_from_sql(text: &str) -> StorageResult<QueueName> {
    if text == "workitems" {
        return Ok(QueueName::WorkItems);
    }
    text.strip_prefix("control-")
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|p| *p < MAX_PARTITIONS)
        .map(QueueName::Control)
        .ok_or_else(|| corrupt("queue name", format!("unknown queue {text:?}")))
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
    use super::*;

    #[test]
    fn queue_names_round_trip() {
        for q in [
            QueueName::WorkItems,
            QueueName::Control(0),
            QueueName::Control(15),
        ] {
            assert_eq!(queue_from_sql(&queue_to_sql(q)).unwrap(), q);
        }
        assert!(queue_from_sql("control-16").is_err());
        assert!(queue_from_sql("bogus").is_err());
        assert!(check_queue(QueueName::Control(16)).is_err());
    }

    #[test]
    fn etags_and_times() {
        assert_eq!(etag_in(&etag_out(42)), Some(42));
        assert_eq!(etag_in(&ETag("x".into())), None);
        assert!(ts_from_sql("t", -1).is_err());
        assert_eq!(ts_to_sql(Timestamp::from_millis(u64::MAX)), i64::MAX);
    }
}
