//! Seam values as SQL column values and back: times as milliseconds since the epoch, ETags
//! as a stored version number, counts and epochs as `BIGINT`. A stored value that does not
//! convert back is [`StorageError::Corrupt`].

use taskhub_core::Timestamp;

use crate::{ETag, Receipt, StorageError, StorageResult};

pub use crate::queue::check_queue;

/// A [`StorageError::Corrupt`] for a stored value that does not decode.
pub fn corrupt(what: impl Into<String>, detail: impl ToString) -> StorageError {
    StorageError::Corrupt {
        what: what.into(),
        detail: detail.to_string(),
    }
}

/// The control queue of the stored partition number `partition`, if it is one (below
/// [`MAX_PARTITIONS`](crate::MAX_PARTITIONS)).
///
/// # Errors
/// [`StorageError::Corrupt`] naming the stored value `stored` otherwise.
pub fn control_queue(
    partition: Option<u32>,
    stored: impl std::fmt::Display,
) -> StorageResult<crate::QueueName> {
    partition
        .filter(|p| *p < crate::MAX_PARTITIONS)
        .map(crate::QueueName::Control)
        .ok_or_else(|| corrupt("queue name", format!("unknown queue {stored}")))
}

/// Checks a backend's queue codec, for its unit tests (feature `testing`): the work-item queue
/// and the first and last control queues MUST come back from `from(to(queue))`, and each stored
/// value of `bad` MUST be refused.
///
/// # Panics
/// When the codec fails either check.
#[cfg(feature = "testing")]
pub fn assert_queue_codec<T: std::fmt::Debug + Clone>(
    to: impl Fn(crate::QueueName) -> T,
    from: impl Fn(T) -> StorageResult<crate::QueueName>,
    bad: &[T],
) {
    use crate::QueueName;
    for q in [
        QueueName::WorkItems,
        QueueName::Control(0),
        QueueName::Control(15),
    ] {
        let stored = to(q);
        let back = from(stored.clone());
        assert!(
            matches!(back, Ok(b) if b == q),
            "{q:?} stored as {stored:?}: {back:?}"
        );
    }
    for stored in bad {
        assert!(from(stored.clone()).is_err(), "{stored:?} is refused");
    }
}

/// A timestamp as stored (milliseconds since the epoch; saturates at `i64::MAX`).
#[must_use]
pub fn ts_to_sql(t: Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// A stored timestamp.
///
/// # Errors
/// [`StorageError::Corrupt`] for a negative value.
pub fn ts_from_sql(what: &str, ms: i64) -> StorageResult<Timestamp> {
    u64::try_from(ms)
        .map(Timestamp::from_millis)
        .map_err(|_| corrupt(what, format!("negative timestamp {ms}")))
}

/// An ETag as the string the seam hands out.
#[must_use]
pub fn etag_out(version: i64) -> ETag {
    ETag(version.to_string())
}

/// The stored version an ETag names, or `None` if the ETag cannot be one of ours (so it
/// matches nothing).
#[must_use]
pub fn etag_in(etag: &ETag) -> Option<i64> {
    etag.0.parse().ok()
}

/// A receipt as handed out: `"{message id}:{token}"`, the token a fresh value written into
/// the row at each dequeue or extend.
#[must_use]
pub fn receipt_out(id: i64, token: i64) -> Receipt {
    Receipt(format!("{id}:{token}"))
}

/// The message ID and token a receipt names, or `None` if it cannot be one of ours.
#[must_use]
pub fn receipt_in(receipt: &Receipt) -> Option<(i64, i64)> {
    let (id, token) = receipt.0.split_once(':')?;
    Some((id.parse().ok()?, token.parse().ok()?))
}

/// The row ID a dead-letter ID names (the SQL stores hand out their row IDs as text).
///
/// # Errors
/// [`StorageError::InvalidArgument`] if `id` cannot be one of ours.
pub fn dead_letter_id(id: &str) -> StorageResult<i64> {
    id.parse().map_err(|_| {
        StorageError::InvalidArgument(format!("{id:?} is not a dead-letter ID of this store"))
    })
}

/// A stored non-negative integer that must fit a `u32`.
///
/// # Errors
/// [`StorageError::Corrupt`] when out of range.
pub fn u32_from_sql(what: &str, v: i64) -> StorageResult<u32> {
    u32::try_from(v).map_err(|_| corrupt(what, format!("{v} is out of range")))
}

/// A stored non-negative integer that must fit a `u64`.
///
/// # Errors
/// [`StorageError::Corrupt`] when out of range.
pub fn u64_from_sql(what: &str, v: i64) -> StorageResult<u64> {
    u64::try_from(v).map_err(|_| corrupt(what, format!("{v} is out of range")))
}

/// A `u64` as stored (the seam's epochs and counts stay far below `i64::MAX`).
///
/// # Errors
/// [`StorageError::InvalidArgument`] past `i64::MAX`.
pub fn u64_to_sql(what: &str, v: u64) -> StorageResult<i64> {
    i64::try_from(v).map_err(|_| StorageError::InvalidArgument(format!("{what} {v} is too large")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_times_and_numbers() {
        assert_eq!(etag_in(&etag_out(42)), Some(42));
        assert_eq!(etag_in(&ETag("x".into())), None);
        assert!(ts_from_sql("t", -1).is_err());
        assert_eq!(ts_to_sql(Timestamp::from_millis(u64::MAX)), i64::MAX);
        assert!(u32_from_sql("n", -1).is_err());
        assert_eq!(receipt_in(&receipt_out(3, 9)), Some((3, 9)));
        assert_eq!(receipt_in(&Receipt("x:1".into())), None);
        assert!(u64_to_sql("n", u64::MAX).is_err());
        assert!(check_queue(crate::QueueName::Control(16)).is_err());
    }
}
