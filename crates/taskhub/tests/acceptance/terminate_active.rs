//! `ReusePolicy::TerminateActive`: the terminate that replaces the active execution is aimed at
//! that execution only. Applied after the new execution started, it is discarded, and the new
//! execution runs on. The interleaving is driven, not hoped for: the terminate is held back in
//! the control queue until the new execution is running.

use std::time::Duration;

use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_core::format::decode_message;
use taskhub_storage::memory::{FaultPlan, Op, Trigger};
use taskhub_storage::{QueueName, StorageError};

async fn row_becomes(
    client: &TaskHubClient,
    id: &InstanceId,
    ok: impl Fn(&InstanceRow) -> bool,
) -> InstanceRow {
    wait::until_some("the row to change", || async {
        let row = find(client, id).await.unwrap().row;
        ok(&row).then_some(row)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_replacement_terminate_does_not_end_the_new_execution() {
    let (_dir, hub) = sqlite_hub("terminate-active", fast_settings()).await;
    let client = hub.client();
    let id = InstanceId::new("replaced").unwrap();
    let options = || StartOptions {
        instance_id: Some(id.clone()),
        reuse: ReusePolicy::TerminateActive,
        ..StartOptions::default()
    };

    // Execution A runs, then the worker stops.
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    client.start_with("Wait", (), options()).await.unwrap();
    let a = row_becomes(&client, &id, |r| r.status == OrchestrationStatus::Running).await;
    worker.shutdown().await;

    // The replacing start enqueues the terminate of A, then the start of B.
    client.start_with("Wait", (), options()).await.unwrap();
    let pending = find(&client, &id).await.unwrap().row;
    assert_ne!(pending.execution_id, a.execution_id);
    let queue = QueueName::Control(pending.partition);
    let store = hub.store().clone();
    let held = store
        .dequeue(queue, 32, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(held.len(), 2, "terminate and start");
    let mut terminate = None;
    for d in held {
        let m = decode_message(&d.body).unwrap();
        if matches!(m.event, EventKind::ExecutionTerminated { .. }) {
            assert_eq!(m.execution_id.as_ref(), Some(&a.execution_id));
            terminate = Some(d.receipt);
        } else {
            store
                .abandon(queue, &d.receipt, Duration::ZERO)
                .await
                .unwrap();
        }
    }
    let terminate = terminate.expect("the replacing start sent a terminate");

    // B starts while the terminate is held back; then the terminate arrives.
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    row_becomes(&client, &id, |r| {
        r.execution_id == pending.execution_id && r.status == OrchestrationStatus::Running
    })
    .await;
    let discarded_before = worker.stats().discarded;
    store
        .abandon(queue, &terminate, Duration::ZERO)
        .await
        .unwrap();
    wait::until_async(
        "the terminate consumed",
        || async { store.stats(queue).await.unwrap().length == 0 },
        || async { store.stats(queue).await.unwrap() },
    )
    .await;
    assert!(
        worker.stats().discarded > discarded_before,
        "discarded, not applied"
    );
    let row = find(&client, &id).await.unwrap().row;
    assert_eq!(
        row.status,
        OrchestrationStatus::Running,
        "B is not terminated"
    );
    assert_eq!(row.execution_id, pending.execution_id);

    client.raise_event(&id, "go", &9u32).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u32>().unwrap(), Some(9));
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacing_start_that_loses_the_row_race_decides_again() {
    let store = memory_store();
    let hub = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let client = hub.client();
    let id = InstanceId::new("raced").unwrap();
    let options = StartOptions {
        instance_id: Some(id.clone()),
        reuse: ReusePolicy::TerminateActive,
        ..StartOptions::default()
    };
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    client
        .start_with("Wait", (), options.clone())
        .await
        .unwrap();
    let a = row_becomes(&client, &id, |r| r.status == OrchestrationStatus::Running).await;
    worker.shutdown().await;

    // A turn of A (an event raised at the same time) wrote the row between the start's read
    // and its conditional write.
    store.faults().set_plan(FaultPlan::none().fail(
        Trigger::nth_of(Op::Checkpoint, 1),
        StorageError::Conflict {
            what: format!("instance '{id}'"),
        },
    ));
    client
        .start_with("Wait", (), options)
        .await
        .expect("the start decides again and replaces A");
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    let b = row_becomes(&client, &id, |r| {
        r.execution_id != a.execution_id && r.status == OrchestrationStatus::Running
    })
    .await;
    client.raise_event(&id, "go", &3u32).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(done.row.execution_id, b.execution_id);
    assert_eq!(done.output::<u32>().unwrap(), Some(3));
    worker.shutdown().await;
}
