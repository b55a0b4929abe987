//! The history sentinel's `Spans` (which sequence ranges were written ahead of a commit,
//! under which token) grows by two entries with every checkpoint of over 99 events; past
//! the table's property limit (32 Ki characters) it goes to a blob like every other large
//! property, so checkpoints keep committing. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure --test sentinel_spans`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::sync::Arc;

use taskhub_core::{HistoryEvent, InstanceId, Timestamp};
use taskhub_storage::{CheckpointRequest, CheckpointStore, ETag, HistoryStore, ManualClock};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);
/// Events per checkpoint: more than one batch holds beside the sentinel, so each checkpoint
/// writes rows ahead under a token and adds two spans.
const PER_CHECKPOINT: u64 = 120;
/// The table service's limit on a string property, in characters.
const PROPERTY_LIMIT: usize = 32 * 1024;

fn event(i: u64) -> HistoryEvent {
    common::raised_event(START, i)
}

fn write(id: &InstanceId, expected: Option<ETag>, from: u64) -> CheckpointRequest {
    let events = (from..from + PER_CHECKPOINT).map(event).collect();
    common::history_checkpoint(id, expected, events)
}

/// A sentinel whose spans are just under the property limit (as about a thousand large
/// checkpoints leave it) takes twenty more large checkpoints, which carry it well past the
/// limit: each commits, the history loads back whole, and only the latest spans blob is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_past_the_property_limit_go_to_a_blob() {
    let s = common::create_store(common::account(), Arc::new(ManualClock::new(START))).await;
    let id = InstanceId::new("many-spans").unwrap();
    s.checkpoint(write(&id, None, 0)).await.unwrap();
    s.pad_history_spans(&id, PROPERTY_LIMIT - 200)
        .await
        .unwrap();
    let mut etag = Some(s.load_history(&id).await.unwrap().unwrap().etag);
    let mut written = PER_CHECKPOINT;
    for n in 0..20 {
        let outcome = s
            .checkpoint(write(&id, etag.take(), written))
            .await
            .unwrap_or_else(|e| panic!("checkpoint {n} past the padded spans: {e}"));
        etag = outcome.history_etag;
        written += PER_CHECKPOINT;
    }
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(loaded.events, (0..written).map(event).collect::<Vec<_>>());
    let (_, blobs) = s.history_footprint(&id).await.unwrap();
    assert_eq!(blobs, 1, "one spans blob, the current one");
    s.delete_hub().await.unwrap();
}
