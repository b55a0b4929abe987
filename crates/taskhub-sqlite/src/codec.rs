//! Conversions between seam values and SQLite column values: those PostgreSQL shares come
//! from `taskhub_storage::sql::codec`; queue names are stored as their text here.

use std::time::Duration;

use taskhub_core::Timestamp;
use taskhub_storage::{QueueName, StorageResult, MAX_PARTITIONS};

pub(crate) use taskhub_storage::sql::codec::{
    check_queue, etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql, u64_from_sql, u64_to_sql,
};

use crate::errors::corrupt;

/// `now + d` in stored milliseconds.
pub(crate) fn after(now: Timestamp, d: Duration) -> i64 {
    ts_to_sql(now.saturating_add(d))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_round_trip() {
        let from = |text: String| queue_from_sql(&text);
        let bad = ["control-16".to_owned(), "bogus".to_owned()];
        taskhub_storage::sql::codec::assert_queue_codec(queue_to_sql, from, &bad);
    }
}
