//! Conversions between seam values and column values: those SQLite shares come from
//! `taskhub_storage::sql::codec`; here the server's clock, delays in milliseconds, and queues
//! stored as a partition number.

use taskhub_storage::sql::codec::control_queue;
use taskhub_storage::{QueueName, StorageResult};

pub(crate) use taskhub_storage::sql::codec::{
    check_queue, etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql, u64_from_sql, u64_to_sql,
};

/// The server's time in stored milliseconds: every visibility timeout and enqueue time is
/// judged by the server's clock, never a worker's. `statement_timestamp()` (the start of the
/// current statement) is stable within a statement, so a dequeue's `visible_at <= now` is an
/// index bound; `clock_timestamp()` is volatile and turns it into a filter over every row of
/// the queue.
pub(crate) const NOW_MS: &str = "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::bigint";

/// A duration as stored milliseconds (rounded up, so a delay is never shortened).
pub(crate) fn ms(d: std::time::Duration) -> i64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    i64::try_from(ms).unwrap_or(i64::MAX)
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
    control_queue(u32::try_from(v).ok(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_and_times_round_trip() {
        taskhub_storage::sql::codec::assert_queue_codec(queue_to_sql, queue_from_sql, &[16]);
        assert_eq!(ms(std::time::Duration::from_micros(1500)), 2);
    }
}
