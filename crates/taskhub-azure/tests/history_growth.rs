//! Storage stays bounded for an instance that continues as new for ever: each new execution
//! takes a new generation of history rows, and once it is committed the previous
//! generation's rows and blobs are deleted, as is each outbox blob once its outbox is cleared
//! or replaced. A clean-up cut short (a crash right after the commit) is finished by the next
//! checkpoint. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure --test history_growth`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use taskhub_azure::AzureStore;
use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, ETag, HistoryStore, HistoryWrite, ManualClock,
    NewQueueMessage, OutboundMessage, QueueName,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);
/// Continue-as-new iterations of the one instance.
const ITERATIONS: u64 = 1_000;
/// Events of one execution: two small ones and one over the inline limit (a blob).
const EVENTS: usize = 3;

fn event(i: u64, size: usize) -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(START.as_millis() + i),
        EventKind::EventRaised {
            name: format!("e{i}"),
            input: Payload::from_json(format!("\"{}\"", "x".repeat(size))).unwrap(),
        },
    )
}

/// One execution's events: the last one is over the inline property limit.
fn execution(i: u64) -> Vec<HistoryEvent> {
    vec![event(i, 10), event(i, 20), event(i, 35_000)]
}

/// The checkpoint that starts execution `i` (continue-as-new from `expected`), with an outbox
/// over the inline limit (it goes to a blob) every tenth time.
fn continue_as_new(id: &InstanceId, i: u64, expected: Option<ETag>) -> CheckpointRequest {
    let outbound = if i.is_multiple_of(10) {
        (0..2)
            .map(|k| OutboundMessage {
                claim: None,
                queue: QueueName::WorkItems,
                message: NewQueueMessage {
                    body: format!("{i}-{k}-{}", "m".repeat(20_000)),
                    delay: Duration::ZERO,
                },
            })
            .collect()
    } else {
        Vec::new()
    };
    CheckpointRequest {
        instance_id: id.clone(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new(format!("e{i}")).unwrap(),
            new_execution: true,
            expected,
            events: execution(i),
        }),
        instance: None,
        outbound,
        consumed: Vec::new(),
    }
}

async fn open() -> AzureStore {
    common::create_store(common::account(), Arc::new(ManualClock::new(START))).await
}

/// What the instance's history holds: (History rows, history blobs, outbox blobs).
async fn footprint(s: &AzureStore, id: &InstanceId) -> (usize, usize, usize) {
    let (rows, blobs) = s.history_footprint(id).await.unwrap();
    (rows, blobs, s.outbox_blobs(id).await.unwrap().len())
}

/// 1,000 continue-as-new iterations (every tenth with an outbox blob, every hundredth with
/// its outbox left pending as a lost step 5 leaves it): the History partition holds one
/// execution's rows and the sentinel, one event blob, and no outbox blob at every check;
/// the history loads back as the last execution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_continue_as_new_iterations_keep_one_execution_stored() {
    let s = open().await;
    let id = InstanceId::new("eternal").unwrap();
    let mut etag = None;
    for i in 0..ITERATIONS {
        if i % 100 == 50 {
            // Step 5 fails: this outbox stays pending, to be replaced by the next commit.
            s.fail_next_outbox_clears(1);
        }
        let outcome = s
            .checkpoint(continue_as_new(&id, i, etag.take()))
            .await
            .unwrap_or_else(|e| panic!("iteration {i}: {e}"));
        etag = outcome.history_etag;
        if i % 100 == 99 {
            let loaded = s.load_history(&id).await.unwrap().unwrap();
            assert_eq!(loaded.execution_id.as_str(), format!("e{i}"));
            assert_eq!(loaded.events, execution(i));
            assert_eq!(
                footprint(&s, &id).await,
                (EVENTS + 1, 1, 0),
                "after {} iterations: (History rows, history blobs, outbox blobs) must stay those of one execution",
                i + 1
            );
        }
    }
    s.delete_hub().await.unwrap();
}

/// A clean-up cut short right after the commit (as by a crash) leaves the previous
/// execution's rows and blob behind, never the new one's; the next checkpoint, from a
/// freshly loaded history as a new owner would make it, deletes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_generation_is_deleted_by_the_next_checkpoint() {
    let s = open().await;
    let id = InstanceId::new("crashed").unwrap();
    let first = s.checkpoint(continue_as_new(&id, 1, None)).await.unwrap();
    s.skip_next_collections(1);
    s.checkpoint(continue_as_new(&id, 2, first.history_etag))
        .await
        .unwrap();
    assert_eq!(
        footprint(&s, &id).await,
        (2 * EVENTS + 1, 2, 0),
        "the clean-up was skipped: both generations are stored"
    );
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(
        loaded.events,
        execution(2),
        "the committed generation stands"
    );

    // The next checkpoint of the same execution (a new loader's) finishes the clean-up.
    let append = CheckpointRequest {
        instance_id: id.clone(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: loaded.execution_id.clone(),
            new_execution: false,
            expected: Some(loaded.etag.clone()),
            events: vec![event(3, 5)],
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    };
    s.checkpoint(append).await.unwrap();
    assert_eq!(footprint(&s, &id).await, (EVENTS + 2, 1, 0));
    let mut expected = execution(2);
    expected.push(event(3, 5));
    assert_eq!(s.load_history(&id).await.unwrap().unwrap().events, expected);
    s.delete_hub().await.unwrap();
}
