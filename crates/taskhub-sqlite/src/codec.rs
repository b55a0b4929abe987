//! Conversions between seam values and SQLite column values: those PostgreSQL shares come
//! from `taskhub_storage::sql::codec`; queue names are stored as their text here.

use std::time::Duration;

use taskhub_core::Timestamp;
use taskhub_storage::sql::codec::control_queue;
use taskhub_storage::{QueueName, StorageResult};

pub(crate) use taskhub_storage::sql::codec::{
    check_queue, etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql, u64_from_sql, u64_to_sql,
};

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
    let partition = text.strip_prefix("control-").and_then(|p| p.parse().ok());
    control_queue(partition, format!("{text:?}"))
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
