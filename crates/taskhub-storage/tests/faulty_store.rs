//! `FaultyStore`: the fault plan around a whole store. Here it wraps a memory store that has
//! no plan of its own, so every fault seen comes from the wrapper: a checkpoint torn after
//! each step of the wrapped backend's ordered checkpoint, failures, lost responses, delays,
//! and an extra step observer.
#![cfg(feature = "testing")]
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use taskhub_storage::faults::{FaultPlan, InjectedFault, Op, TearAfter, Trigger};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, CheckpointStore, HistoryStore, InstanceStore, ManualClock,
    QueueStore, StepObserver, StorageResult,
};

fn wrapped(clock: &ManualClock, plan: FaultPlan) -> (FaultyStore<MemoryStore>, Arc<MemoryStore>) {
    let backend = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
    (
        FaultyStore::new(backend.clone(), Arc::new(clock.clone()), plan),
        backend,
    )
}

#[tokio::test]
async fn the_wrapper_tears_the_wrapped_backends_checkpoint_after_each_step() {
    for after in TearAfter::ALL {
        let c = clock();
        let (s, backend) = wrapped(&c, FaultPlan::none().tear_checkpoint(1, after));
        let turn = first_turn(&backend, "stepwise").await;
        let id = turn.instance_id.clone();
        let err = s.checkpoint(turn.clone()).await.unwrap_err();
        assert!(err.is_retryable(), "{after:?}: {err:?}");
        let step = after.step();
        let loaded = backend
            .load_history(&id)
            .await
            .unwrap()
            .expect("step 1 ran");
        assert_eq!(loaded.events, vec![started()], "{after:?}");
        assert_eq!(loaded.pending_outbox, turn.outbound, "{after:?}");
        assert_eq!(
            length(&backend, WORK).await,
            u64::from(step >= 2),
            "{after:?}"
        );
        assert_eq!(
            backend.get_instance(&id).await.unwrap().is_some(),
            step >= 3,
            "{after:?}"
        );
        assert_eq!(
            length(&backend, CONTROL).await,
            u64::from(step < 4),
            "{after:?}"
        );
        assert_eq!(
            s.faults().injected()[0].fault,
            InjectedFault::Torn(after),
            "the wrapper records the tear"
        );
        assert!(
            backend.faults().injected().is_empty(),
            "the backend's own plan did nothing"
        );
    }
}

#[tokio::test]
async fn the_wrapper_fails_loses_responses_and_delays_calls() {
    let c = clock();
    let (s, backend) = wrapped(
        &c,
        FaultPlan::none()
            .fail(Trigger::nth_of(Op::Enqueue, 1), unavailable())
            .lose_response(Trigger::nth_of(Op::Enqueue, 2), unavailable())
            .delay(Trigger::nth_of(Op::Stats, 1), Duration::from_secs(10)),
    );
    assert_eq!(s.enqueue(WORK, vec![msg("a")]).await, Err(unavailable()));
    assert_eq!(
        length(&backend, WORK).await,
        0,
        "a failed call does nothing"
    );
    assert_eq!(s.enqueue(WORK, vec![msg("b")]).await, Err(unavailable()));
    assert_eq!(
        length(&backend, WORK).await,
        1,
        "a lost response did the work"
    );
    let s = Arc::new(s);
    let slow = {
        let s = s.clone();
        tokio::spawn(async move { s.stats(WORK).await })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!slow.is_finished(), "the call waits on the wrapper's clock");
    c.advance(Duration::from_secs(10));
    tokio::time::timeout(Duration::from_secs(5), slow)
        .await
        .expect("runs once the clock advanced")
        .unwrap()
        .unwrap();
    assert_eq!(s.faults().calls(Op::Enqueue), 2);
    assert_eq!(s.faults().injected().len(), 3);
}

/// Records the steps it sees.
#[derive(Default)]
struct Steps(Mutex<Vec<CheckpointStep>>);

impl StepObserver for Steps {
    fn after(&self, step: CheckpointStep, _request: &CheckpointRequest) -> StorageResult<()> {
        self.0.lock().unwrap().push(step);
        Ok(())
    }
}

#[tokio::test]
async fn an_extra_observer_sees_every_step_of_every_checkpoint() {
    let c = clock();
    let steps = Arc::new(Steps::default());
    let (s, backend) = wrapped(&c, FaultPlan::none());
    let s = s.observe_steps(steps.clone());
    let turn = first_turn(&backend, "observed").await;
    s.checkpoint(turn).await.unwrap();
    assert_eq!(*steps.0.lock().unwrap(), CheckpointStep::ALL);
}
