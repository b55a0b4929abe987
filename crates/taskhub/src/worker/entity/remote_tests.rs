//! Unit tests of a remote entity batch: the recording pass, what the executor is asked, and
//! the replaying pass over its answers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "test code"
)]

use taskhub_core::entity::{Caller, EntityAction, EntityEffect, EntityRequest, EntityResponse};
use taskhub_core::{ExecutionId, FailureDetails, InstanceId, MessageId};

use super::*;

fn json(s: &str) -> Payload {
    Payload::from_json(s).unwrap()
}

fn counter() -> EntityId {
    EntityId::new("counter", "k").unwrap()
}

fn now() -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000)
}

fn message(request: EntityRequest) -> BatchMessage {
    BatchMessage {
        message_id: MessageId::random(),
        sender: None,
        request,
        order: None,
    }
}

fn op(id: &str, name: &str, input: &str, caller: Option<Caller>) -> BatchMessage {
    message(EntityRequest::Operation {
        id: id.into(),
        op: name.into(),
        input: json(input),
        caller,
        at: None,
    })
}

/// An add, then a delete of the state.
fn add_then_delete() -> Vec<BatchMessage> {
    vec![
        op("a", "add", "1", None),
        message(EntityRequest::DeleteState),
    ]
}

fn caller() -> Caller {
    Caller {
        instance_id: InstanceId::new("orch").unwrap(),
        execution_id: ExecutionId::new("e1").unwrap(),
    }
}

/// The entity `counter()` as a batch finds it: its state and a fresh record, at `now()`.
struct Counter {
    state: Option<Payload>,
    record: EntityRecord,
}

impl Counter {
    fn at(state: &str) -> Self {
        Self {
            state: Some(json(state)),
            record: EntityRecord::default(),
        }
    }

    /// The recording pass over `messages`.
    fn record(&mut self, messages: &[BatchMessage]) -> Recorded {
        record_batch(
            &counter(),
            now(),
            &mut self.state,
            &mut self.record,
            messages,
        )
    }

    /// The recording pass, which must leave operations for the executor.
    fn plan(&mut self, messages: &[BatchMessage]) -> Plan {
        match self.record(messages) {
            Recorded::Remote(plan) => plan,
            Recorded::Local(o) => panic!("expected operations for the executor, got {o:?}"),
        }
    }

    /// The replaying pass with the executor's answers in `plan`: the outcome and how many
    /// results were missing.
    fn replay(&mut self, plan: Plan, messages: Vec<BatchMessage>) -> (BatchOutcome, usize) {
        replay(
            plan,
            &counter(),
            now(),
            &mut self.state,
            &mut self.record,
            messages,
        )
    }
}

/// The executor's answer to a stretch: every operation succeeded with `outputs`, leaving
/// `state`.
fn succeeded(outputs: &[&str], state: &str) -> EntityBatchOutcome {
    EntityBatchOutcome::new(
        outputs.iter().map(|o| Ok(json(o))).collect(),
        Some(json(state)),
    )
}

/// The response effects of an outcome: (request ID, response).
fn responses(outcome: &BatchOutcome) -> Vec<(String, EntityResponse)> {
    outcome
        .effects
        .iter()
        .filter_map(|e| match e {
            EntityEffect::Respond {
                request_id,
                response,
                ..
            } => Some((request_id.clone(), response.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_executor_results_become_responses_state_and_sends() {
    let mut entity = Counter::at("5");
    let messages = vec![
        op("a", "add", "1", None),
        op("b", "add", "2", Some(caller())),
        op("c", "fail", "0", Some(caller())),
    ];
    let mut plan = entity.plan(&messages);
    // Nothing applied by the recording pass.
    assert_eq!(entity.state, Some(json("5")));
    assert!(entity.record.recent.is_empty());
    assert_eq!(plan.stretches.len(), 1);
    let asked: Vec<_> = plan.stretches[0]
        .operations
        .iter()
        .map(|o| (o.request_id.as_str(), o.name.as_str(), o.input.as_str()))
        .collect();
    assert_eq!(
        asked,
        [("a", "add", "1"), ("b", "add", "2"), ("c", "fail", "0")]
    );
    assert_eq!(plan.stretches[0].state, Some(json("5")));
    let signal = EntityAction::Signal {
        target: EntityId::new("counter", "other").unwrap(),
        op: "add".into(),
        input: json("1"),
        at: None,
    };
    plan.stretches[0].take(
        EntityBatchOutcome::new(
            vec![
                Ok(json("6")),
                Ok(json("8")),
                Err(FailureDetails::new("ValueError", "no")),
            ],
            Some(json("8")),
        )
        .with_actions(vec![signal]),
    );
    let (outcome, missing) = entity.replay(plan, messages);
    assert_eq!(missing, 0);
    assert_eq!(entity.state, Some(json("8")));
    assert_eq!((outcome.operations, outcome.failed), (3, 1));
    assert_eq!(
        entity.record.recent.len(),
        3,
        "the three messages are remembered as applied"
    );
    let r = responses(&outcome);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0], ("b".into(), EntityResponse::Ok { output: json("8") }));
    assert!(
        matches!(&r[1], (id, EntityResponse::Failed { failure }) if id == "c" && failure.message == "no")
    );
    // The signal went out, taken with the last successful operation ("b").
    let sends: Vec<_> = outcome
        .effects
        .iter()
        .filter_map(|e| match e {
            EntityEffect::Send {
                target, purpose, ..
            } => Some((target.to_string(), purpose.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "{:?}", outcome.effects);
    assert_eq!(sends[0].0, "@counter@other");
    assert!(sends[0].1.ends_with(":action:0"), "{}", sends[0].1);
}

#[test]
fn a_delete_between_operations_splits_the_question_and_a_missing_result_fails_its_operation() {
    let mut entity = Counter::at("5");
    let mut messages = add_then_delete();
    messages.extend([
        op("b", "add", "2", Some(caller())),
        op("c", "add", "3", Some(caller())),
    ]);
    let mut plan = entity.plan(&messages);
    assert_eq!(plan.stretches.len(), 2);
    assert_eq!(plan.stretches[0].state, Some(json("5")));
    assert_eq!(plan.stretches[0].operations.len(), 1);
    // After the delete the executor starts from no state.
    assert_eq!(plan.stretches[1].state, None);
    assert_eq!(plan.stretches[1].operations.len(), 2);
    assert!(!plan.trailing_delete);
    plan.stretches[0].take(succeeded(&["6"], "6"));
    // One result for two operations.
    plan.stretches[1].take(succeeded(&["2"], "2"));
    let (outcome, missing) = entity.replay(plan, messages);
    assert_eq!(missing, 1);
    assert_eq!(entity.state, Some(json("2")));
    let r = responses(&outcome);
    assert_eq!(r[0], ("b".into(), EntityResponse::Ok { output: json("2") }));
    match &r[1] {
        (id, EntityResponse::Failed { failure }) => {
            assert_eq!(id, "c");
            assert_eq!(failure.error_type, "MissingOperationResult");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_trailing_delete_leaves_no_state_and_a_batch_without_operations_asks_nothing() {
    let mut entity = Counter::at("5");
    let messages = add_then_delete();
    let mut plan = entity.plan(&messages);
    assert!(plan.trailing_delete);
    plan.stretches[0].take(succeeded(&["6"], "6"));
    let (_, missing) = entity.replay(plan, messages);
    assert_eq!(missing, 0);
    assert_eq!(entity.state, None);
    // A lock request alone: applied at once, nothing for the executor.
    let mut entity = Counter::at("1");
    let lock = message(EntityRequest::Lock {
        id: "l1".into(),
        owner: caller(),
        lockset: vec![counter()],
        position: 0,
    });
    match entity.record(&[lock]) {
        Recorded::Local(outcome) => {
            assert_eq!(responses(&outcome), [("l1".into(), EntityResponse::Locked)]);
            assert!(entity.record.lock.is_some(), "the lock is taken");
        }
        Recorded::Remote(_) => panic!("a lock needs no executor"),
    }
}

#[test]
fn more_results_than_operations_fail_every_operation_and_keep_the_state() {
    let mut entity = Counter::at("5");
    let messages = vec![op("a", "add", "1", Some(caller()))];
    let mut plan = entity.plan(&messages);
    plan.stretches[0].take(succeeded(&["6", "7"], "7"));
    let (outcome, _) = entity.replay(plan, messages);
    assert_eq!(entity.state, Some(json("5")));
    assert_eq!((outcome.operations, outcome.failed), (1, 1));
    let r = responses(&outcome);
    assert!(
        matches!(&r[0], (id, EntityResponse::Failed { failure })
            if id == "a" && failure.error_type == "InvalidEntityBatchResult"
                && failure.message.contains("results: 2 for 1")),
        "{r:?}"
    );
}
