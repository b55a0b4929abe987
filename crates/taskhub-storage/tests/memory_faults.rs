//! The memory backend's fault injection: nth-call failures, lost responses, delays on the
//! store's clock, seeded randomness, torn checkpoints, and call counters.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub_core::{ExecutionId, InstanceId};
use taskhub_storage::memory::{FaultPlan, InjectedFault, MemoryStore, Op, TearAfter, Trigger};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, HistoryStore, HistoryWrite, InstanceStore, ManualClock,
    QueueStore, StorageError,
};

fn store(clock: &ManualClock, plan: FaultPlan) -> MemoryStore {
    MemoryStore::with_faults(Arc::new(clock.clone()), plan)
}

#[tokio::test]
async fn nth_call_over_all_operations_fails_before_doing_anything() {
    let c = clock();
    let s = store(&c, FaultPlan::none().fail(Trigger::nth(3), unavailable()));
    s.stats(WORK).await.unwrap();
    s.stats(WORK).await.unwrap();
    let err = s.enqueue(WORK, vec![msg("lost")]).await.unwrap_err();
    assert_eq!(err, unavailable());
    assert!(err.is_retryable());
    assert_eq!(length(&s, WORK).await, 0, "the failed enqueue did nothing");
    s.enqueue(WORK, vec![msg("kept")]).await.unwrap();
    assert_eq!(length(&s, WORK).await, 1);
    let injected = s.faults().injected();
    assert_eq!(injected.len(), 1);
    assert_eq!(injected[0].call, 3);
    assert_eq!(injected[0].op, Op::Enqueue);
    assert_eq!(injected[0].fault, InjectedFault::Failed(unavailable()));
}

#[tokio::test]
async fn nth_call_of_one_operation_fails() {
    let c = clock();
    let busy = StorageError::Busy {
        retry_after: Some(Duration::from_millis(50)),
    };
    let s = store(
        &c,
        FaultPlan::none().fail(Trigger::nth_of(Op::Dequeue, 2), busy.clone()),
    );
    s.enqueue(WORK, vec![msg("a"), msg("b")]).await.unwrap();
    assert_eq!(s.dequeue(WORK, 1, VISIBILITY).await.unwrap().len(), 1);
    s.stats(WORK).await.unwrap();
    assert_eq!(s.dequeue(WORK, 1, VISIBILITY).await.unwrap_err(), busy);
    assert_eq!(
        s.dequeue(WORK, 1, VISIBILITY).await.unwrap()[0].body,
        "b",
        "the failed dequeue took nothing"
    );
    assert_eq!(s.faults().calls(Op::Dequeue), 3);
}

#[tokio::test]
async fn lost_response_applies_the_call_then_reports_the_error() {
    let c = clock();
    let s = store(
        &c,
        FaultPlan::none().lose_response(Trigger::nth_of(Op::Enqueue, 1), unavailable()),
    );
    let err = s.enqueue(WORK, vec![msg("sent")]).await.unwrap_err();
    assert_eq!(err, unavailable());
    assert_eq!(length(&s, WORK).await, 1, "the enqueue happened");
    assert_eq!(
        s.faults().injected()[0].fault,
        InjectedFault::LostResponse(unavailable())
    );
}

#[tokio::test]
async fn delay_waits_on_the_store_clock() {
    let c = clock();
    let s = store(
        &c,
        FaultPlan::none().delay(Trigger::nth(1), Duration::from_secs(10)),
    );
    let slow = {
        let s = s.clone();
        tokio::spawn(async move { s.enqueue(WORK, vec![msg("slow")]).await })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!slow.is_finished(), "the call waits for the clock");
    assert_eq!(
        length(&s, WORK).await,
        0,
        "the delayed call has not run yet (and other calls are not held up)"
    );
    c.advance(Duration::from_secs(9));
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!slow.is_finished(), "9 of 10 seconds have passed");
    c.advance(Duration::from_secs(1));
    tokio::time::timeout(Duration::from_secs(5), slow)
        .await
        .expect("the call finishes once the clock has advanced 10 s")
        .unwrap()
        .unwrap();
    assert_eq!(length(&s, WORK).await, 1);
    assert_eq!(
        s.faults().injected()[0].fault,
        InjectedFault::Delayed(Duration::from_secs(10))
    );
}

/// Runs a fixed sequence of 300 calls; returns which failed.
async fn run_fixed_sequence(s: &MemoryStore) -> Vec<bool> {
    let mut failed = Vec::new();
    for i in 0..100 {
        failed.push(s.enqueue(WORK, vec![msg(&i.to_string())]).await.is_err());
        failed.push(s.stats(WORK).await.is_err());
        let got = s.dequeue(WORK, 1, VISIBILITY).await;
        failed.push(got.is_err());
    }
    failed
}

#[tokio::test]
async fn random_faults_are_reproducible_from_the_seed() {
    let plan = |seed| FaultPlan::none().random(seed, 0.3, unavailable());
    let c = clock();
    let (a, b, other) = (store(&c, plan(7)), store(&c, plan(7)), store(&c, plan(8)));
    let run_a = run_fixed_sequence(&a).await;
    let run_b = run_fixed_sequence(&b).await;
    let run_other = run_fixed_sequence(&other).await;
    assert_eq!(run_a, run_b, "the same seed fails the same calls");
    assert_eq!(a.faults().injected(), b.faults().injected());
    assert_ne!(run_a, run_other, "another seed fails other calls");
    let failures = run_a.iter().filter(|f| **f).count();
    assert!(
        (50..=130).contains(&failures),
        "p = 0.3 over 300 calls failed {failures}"
    );

    // Installing the plan again restarts the generator.
    a.faults().set_plan(plan(7));
    assert_eq!(run_fixed_sequence(&a).await, run_a);
}

#[tokio::test]
async fn set_plan_restarts_call_numbering() {
    let c = clock();
    let s = store(&c, FaultPlan::none());
    for _ in 0..5 {
        s.stats(WORK).await.unwrap();
    }
    s.faults()
        .set_plan(FaultPlan::none().fail(Trigger::nth(2), unavailable()));
    s.stats(WORK).await.unwrap();
    assert!(s.stats(WORK).await.is_err(), "the 2nd call since set_plan");
    s.stats(WORK).await.unwrap();
    assert_eq!(s.faults().calls(Op::Stats), 8, "counters go on");
}

#[tokio::test]
async fn counters_count_every_call_per_operation() {
    let c = clock();
    let s = store(
        &c,
        FaultPlan::none().fail(Trigger::nth_of(Op::Stats, 1), unavailable()),
    );
    let turn = first_turn(&s, "counted").await;
    s.checkpoint(turn).await.unwrap();
    let _ = s.stats(WORK).await;
    s.load_history(&InstanceId::new("counted").unwrap())
        .await
        .unwrap();
    let counts = s.faults().counts();
    assert_eq!(counts.get(&Op::Enqueue), Some(&1));
    assert_eq!(counts.get(&Op::Dequeue), Some(&1));
    assert_eq!(
        counts.get(&Op::Checkpoint),
        Some(&1),
        "a checkpoint is one call"
    );
    assert_eq!(counts.get(&Op::Stats), Some(&1), "failed calls count");
    assert_eq!(counts.get(&Op::LoadHistory), Some(&1));
    assert_eq!(counts.get(&Op::Delete), None, "never called");
    assert_eq!(s.faults().total_calls(), 5);
    s.faults().reset_counts();
    assert_eq!(s.faults().total_calls(), 0);
}

#[tokio::test]
async fn torn_checkpoint_leaves_pending_outbox_visible_and_instance_row_unwritten() {
    let c = clock();
    let s = store(
        &c,
        FaultPlan::none().tear_checkpoint(1, TearAfter::HistoryCommitted),
    );
    let turn = first_turn(&s, "torn").await;
    let id = turn.instance_id.clone();
    let err = s.checkpoint(turn.clone()).await.unwrap_err();
    assert!(
        matches!(err, StorageError::Unavailable(_)),
        "a torn checkpoint reports Unavailable: {err:?}"
    );
    assert!(err.is_retryable());

    let loaded = s
        .load_history(&id)
        .await
        .unwrap()
        .expect("step 1 committed");
    assert_eq!(loaded.events, vec![started()]);
    assert_eq!(
        loaded.pending_outbox, turn.outbound,
        "the outbox waits to be re-sent"
    );
    assert_eq!(
        s.get_instance(&id).await.unwrap(),
        None,
        "step 3 did not run"
    );
    assert_eq!(length(&s, WORK).await, 0, "step 2 did not run");
    assert_eq!(length(&s, CONTROL).await, 1, "step 4 did not run");
    assert_eq!(
        s.faults().injected()[0].fault,
        InjectedFault::Torn(TearAfter::HistoryCommitted)
    );

    // Recovery: the next turn names the committed ETag, re-sends the pending outbox, and
    // clears it by completing.
    let recovery = CheckpointRequest {
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: Some(loaded.etag.clone()),
            new_execution: false,
            events: Vec::new(),
        }),
        outbound: loaded.pending_outbox.clone(),
        ..turn
    };
    s.checkpoint(recovery).await.unwrap();
    let after = s.load_history(&id).await.unwrap().unwrap();
    assert!(after.pending_outbox.is_empty());
    assert_eq!(length(&s, WORK).await, 1);
    assert!(s.get_instance(&id).await.unwrap().is_some());
    assert_eq!(length(&s, CONTROL).await, 0);
}

#[tokio::test]
async fn tearing_after_each_step_leaves_exactly_the_earlier_steps_applied() {
    for after in TearAfter::ALL {
        let c = clock();
        let s = store(&c, FaultPlan::none().tear_checkpoint(1, after));
        let turn = first_turn(&s, "stepwise").await;
        let id = turn.instance_id.clone();
        let err = s.checkpoint(turn.clone()).await.unwrap_err();
        assert!(err.is_retryable(), "{after:?}: {err:?}");
        let step = after.step();
        let loaded = s.load_history(&id).await.unwrap().expect("step 1 ran");
        assert_eq!(loaded.events, vec![started()], "{after:?}");
        assert_eq!(
            loaded.pending_outbox, turn.outbound,
            "{after:?}: step 5 never ran"
        );
        assert_eq!(
            length(&s, WORK).await,
            u64::from(step >= 2),
            "{after:?}: outbound sent iff step 2 ran"
        );
        assert_eq!(
            s.get_instance(&id).await.unwrap().is_some(),
            step >= 3,
            "{after:?}: row written iff step 3 ran"
        );
        assert_eq!(
            length(&s, CONTROL).await,
            u64::from(step < 4),
            "{after:?}: consumed deleted iff step 4 ran"
        );
        assert_eq!(TearAfter::from_step(step), Some(after));
    }
    assert_eq!(TearAfter::from_step(0), None);
    assert_eq!(TearAfter::from_step(5), None);
}

#[tokio::test]
async fn tear_applies_to_the_nth_checkpoint_only_and_not_to_a_rejected_one() {
    let c = clock();
    let s = store(
        &c,
        FaultPlan::none().tear_checkpoint(2, TearAfter::OutboundSent),
    );
    let turn = first_turn(&s, "nth").await;
    s.checkpoint(turn.clone()).await.unwrap();
    // The 2nd checkpoint conflicts at step 1, so it is never torn.
    let err = s.checkpoint(turn.clone()).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    assert!(s.faults().injected().is_empty());
    // The 3rd is not the 2nd: it completes.
    let other = first_turn(&s, "nth-other").await;
    s.checkpoint(other).await.unwrap();
}

#[tokio::test]
async fn random_tears_are_seeded_and_stop_at_some_step() {
    let plan = FaultPlan::none()
        .random(3, 0.0, unavailable())
        .random_tears(1.0);
    let mut logs = Vec::new();
    for _ in 0..2 {
        let c = clock();
        let s = store(&c, plan.clone());
        for i in 0..8 {
            let turn = first_turn(&s, &format!("random-{i}")).await;
            let err = s.checkpoint(turn).await.unwrap_err();
            assert!(err.is_retryable());
        }
        let log = s.faults().injected();
        assert_eq!(log.len(), 8, "every checkpoint was torn: {log:?}");
        assert!(log
            .iter()
            .all(|i| i.op == Op::Checkpoint && matches!(i.fault, InjectedFault::Torn(_))));
        logs.push(log);
    }
    assert_eq!(logs[0], logs[1], "the same seed tears at the same steps");
}
