//! The epoch fence inside the checkpoint's transaction, against a real server: a checkpoint
//! stopped at any step holds its partition's fence `FOR SHARE`, so the new owner's lease write
//! (which moves the epoch) waits for it; once that write is in, every checkpoint under the old
//! epoch is refused by the database and changes nothing; and a writer stopped past the server's
//! idle-transaction timeout loses its transaction, so the new owner waits no longer than that.
//! Run with `scripts/with-postgres.sh cargo test -p taskhub-postgres --test fence`.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "test code"
)]

mod common;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_postgres::{PostgresStore, IDLE_IN_TRANSACTION_TIMEOUT};
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, CheckpointStore, HistoryStore, HistoryWrite, LeaseFence,
    NewQueueMessage, OutboundMessage, PartitionRow, PartitionStore, QueueName, QueueStore,
    StepObserver, StorageError, StorageResult,
};

/// Stops the checkpoint's task at `step`: says so on `reached`, then waits for `go`.
struct StopAt {
    step: CheckpointStep,
    reached: Mutex<Sender<()>>,
    go: Mutex<Receiver<()>>,
}

impl StepObserver for StopAt {
    fn after(&self, step: CheckpointStep, _request: &CheckpointRequest) -> StorageResult<()> {
        if step == self.step {
            self.reached.lock().unwrap().send(()).unwrap();
            // Hands this worker's queued tasks (connection tasks among them) to another
            // thread while it waits.
            tokio::task::block_in_place(|| self.go.lock().unwrap().recv().unwrap());
        }
        Ok(())
    }
}

fn iid(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

fn started() -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(1),
        EventKind::ExecutionStarted {
            name: "Fenced".into(),
            version: None,
            input: Payload::from_json("null").unwrap(),
            execution_id: ExecutionId::new("e1").unwrap(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
    )
}

/// A checkpoint of `instance` under `epoch` that writes history, sends a message and consumes
/// `consumed`.
fn request(
    instance: &str,
    epoch: u64,
    consumed: Vec<(QueueName, taskhub_storage::Receipt)>,
) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: iid(instance),
        fence: Some(LeaseFence {
            partition: 0,
            epoch,
        }),
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events: vec![started()],
        }),
        instance: None,
        outbound: vec![OutboundMessage::new(
            QueueName::WorkItems,
            NewQueueMessage {
                body: format!("from {instance}"),
                delay: Duration::ZERO,
            },
        )],
        consumed,
    }
}

async fn lease_row(store: &PostgresStore) -> PartitionRow {
    store.list_partitions().await.unwrap().remove(0)
}

/// A hub with one partition leased at epoch 1 and one held message to consume.
async fn setup() -> (
    Arc<PostgresStore>,
    Vec<(QueueName, taskhub_storage::Receipt)>,
) {
    let store = common::fresh_store(taskhub_storage::conformance::start_clock()).await;
    store
        .create_hub(1, Timestamp::from_millis(1))
        .await
        .unwrap();
    let row = lease_row(&store).await;
    let leased = PartitionRow {
        owner: Some("old".into()),
        epoch: 1,
        ..row.clone()
    };
    store
        .put_partition(&leased, row.etag.as_ref())
        .await
        .unwrap();
    let q = QueueName::Control(0);
    store
        .enqueue(q, vec![common::message("input")])
        .await
        .unwrap();
    let held = store.dequeue(q, 1, Duration::from_secs(60)).await.unwrap();
    (store, vec![(q, held[0].receipt.clone())])
}

/// The new owner's lease write: epoch 2.
async fn take_over(store: Arc<PostgresStore>) -> StorageResult<()> {
    let row = lease_row(&store).await;
    let next = PartitionRow {
        owner: Some("new".into()),
        epoch: row.epoch + 1,
        ..row.clone()
    };
    store
        .put_partition(&next, row.etag.as_ref())
        .await
        .map(drop)
}

/// Sessions of the server waiting for a row lock on this hub's fences table (the other test of
/// this file runs beside it on the same server: its sessions hold locks on its own hub's
/// table, which `'fences'::regclass`, resolved in this hub's schema, is not).
async fn waiting_on_the_fence(store: &PostgresStore) -> i64 {
    let client = store.raw_client().await.unwrap();
    client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity a
             WHERE a.wait_event_type = 'Lock' AND a.query LIKE '%UPDATE fences%'
               AND EXISTS (SELECT 1 FROM pg_locks l
                           WHERE l.pid = a.pid AND l.relation = 'fences'::regclass)",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// Starts a checkpoint under epoch 1 that stops at `step`; returns its task and the sender
/// that lets it go on, once it has stopped.
async fn stopped_checkpoint(
    store: &Arc<PostgresStore>,
    step: CheckpointStep,
    consumed: Vec<(QueueName, taskhub_storage::Receipt)>,
) -> (
    tokio::task::JoinHandle<StorageResult<taskhub_storage::CheckpointOutcome>>,
    Sender<()>,
) {
    let (reached_tx, reached) = channel();
    let (go, go_rx) = channel();
    let observer = Arc::new(StopAt {
        step,
        reached: Mutex::new(reached_tx),
        go: Mutex::new(go_rx),
    });
    let s = store.clone();
    let task = tokio::spawn(async move {
        s.checkpoint_observed(request("stale", 1, consumed), &*observer)
            .await
    });
    tokio::task::spawn_blocking(move || reached.recv().unwrap())
        .await
        .unwrap();
    (task, go)
}

/// Stops a checkpoint under epoch 1 at `step`, sees the new owner's lease write wait for it,
/// lets the checkpoint commit, then the lease write (epoch 2). The server ends a transaction
/// idle for [`IDLE_IN_TRANSACTION_TIMEOUT`]: on a loaded machine the lease write may start only
/// after that, and then goes through at once (the stopped session is gone, as for a SIGSTOPped
/// writer: `a_writer_stopped_past_the_idle_timeout_loses_its_transaction`). Such a run says
/// nothing about the fence and is made again (three tries); a lease write that goes through
/// without waiting while the checkpoint's transaction is still young fails the test.
async fn hold_the_fence_at(step: CheckpointStep) -> Arc<PostgresStore> {
    for _ in 0..3 {
        let (store, consumed) = setup().await;
        let (checkpoint, go) = stopped_checkpoint(&store, step, consumed).await;
        let stopped = Instant::now();
        let bump = tokio::spawn(take_over(store.clone()));
        let deadline = Instant::now() + Duration::from_secs(180);
        let seen = loop {
            if waiting_on_the_fence(&store).await == 1 {
                break true;
            }
            if bump.is_finished() {
                break false;
            }
            assert!(
                Instant::now() < deadline,
                "{step:?}: the lease write neither waited nor went through: {:?}",
                lease_row(&store).await
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if !seen {
            assert!(
                stopped.elapsed() >= IDLE_IN_TRANSACTION_TIMEOUT,
                "{step:?}: the lease write went through without waiting for the checkpoint \
                 stopped {:?} ago",
                stopped.elapsed()
            );
            go.send(()).unwrap();
            let _ = checkpoint.await;
            continue;
        }
        assert!(!bump.is_finished(), "{step:?}");
        go.send(()).unwrap();
        checkpoint.await.unwrap().unwrap();
        bump.await.unwrap().unwrap();
        assert_eq!(lease_row(&store).await.epoch, 2);
        return store;
    }
    panic!("{step:?}: three tries, each slower than the server's idle-transaction timeout");
}

/// At every step inside the transaction, the stopped checkpoint holds the fence: the new
/// owner's lease write waits for it. The checkpoint that passed its fence before the lease
/// moved commits first (the new owner then reads its writes); after the move, a checkpoint
/// under the old epoch is `Fenced` and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_checkpoint_in_flight_holds_the_fence_and_a_stale_one_is_refused() {
    for step in [
        CheckpointStep::FenceChecked,
        CheckpointStep::HistoryCommitted,
        CheckpointStep::OutboundSent,
        CheckpointStep::InstanceWritten,
        CheckpointStep::ConsumedDeleted,
    ] {
        let store = hold_the_fence_at(step).await;

        // The stale owner's next checkpoint: refused, nothing written.
        let before = store.stats(QueueName::WorkItems).await.unwrap().length;
        let err = store
            .checkpoint(request("stale-2", 1, Vec::new()))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::Fenced {
                    attempted: 1,
                    current: 2,
                    ..
                }
            ),
            "{step:?}: {err}"
        );
        assert!(store.load_history(&iid("stale-2")).await.unwrap().is_none());
        assert_eq!(
            store.stats(QueueName::WorkItems).await.unwrap().length,
            before
        );
    }
}

/// A writer stopped inside its checkpoint for longer than the server's idle-transaction
/// timeout (a SIGSTOPped process) loses its session: the new owner's lease goes through after
/// that timeout, and when the writer resumes its commit fails and nothing of it is visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_writer_stopped_past_the_idle_timeout_loses_its_transaction() {
    for step in [
        CheckpointStep::FenceChecked,
        CheckpointStep::ConsumedDeleted,
    ] {
        let (store, consumed) = setup().await;
        let (checkpoint, go) = stopped_checkpoint(&store, step, consumed.clone()).await;
        let started = Instant::now();
        take_over(store.clone()).await.unwrap();
        let waited = started.elapsed();
        assert!(
            waited < taskhub_postgres::IDLE_IN_TRANSACTION_TIMEOUT + Duration::from_secs(10),
            "{step:?}: the lease write waited {waited:?}"
        );
        go.send(()).unwrap();
        let err = checkpoint.await.unwrap().unwrap_err();
        assert!(err.is_retryable(), "{step:?}: {err}");
        assert!(store.load_history(&iid("stale")).await.unwrap().is_none());
        assert_eq!(store.stats(QueueName::WorkItems).await.unwrap().length, 0);
        assert_eq!(
            store.stats(consumed[0].0).await.unwrap().length,
            1,
            "{step:?}: the consumed message is still there"
        );
        // Retried, the checkpoint is refused by the fence.
        let err = store
            .checkpoint(request("stale", 1, consumed))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StorageError::Fenced { .. }),
            "{step:?}: {err}"
        );
    }
}
