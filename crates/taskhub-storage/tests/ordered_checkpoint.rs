//! The shared ordered-checkpoint driver on a fake backend that records each primitive call:
//! the order of the steps, where an observer stops a checkpoint, and what the driver forgives
//! (a stale receipt, a failed outbox clear).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use taskhub_core::{ExecutionId, InstanceId};
use taskhub_storage::{
    run_ordered_checkpoint, CheckpointOutcome, CheckpointPrimitives, CheckpointRequest,
    CheckpointStep, ETag, Expect, HistoryWrite, InstanceRow, LeaseFence, NewQueueMessage,
    NoObserver, OutboundMessage, QueueName, Receipt, StepObserver, StorageError, StorageResult,
};

/// Records every call; fails the ones named in `fail`.
#[derive(Default)]
struct Fake {
    log: Mutex<Vec<String>>,
    fail: Vec<(&'static str, StorageError)>,
}

impl Fake {
    fn failing(fail: Vec<(&'static str, StorageError)>) -> Self {
        Self {
            fail,
            ..Self::default()
        }
    }

    fn call(&self, name: &'static str) -> StorageResult<()> {
        self.log.lock().unwrap().push(name.to_owned());
        match self.fail.iter().find(|(n, _)| *n == name) {
            Some((_, e)) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[async_trait]
impl CheckpointPrimitives for Fake {
    type Prepared = &'static str;

    async fn validate(&self, _request: &CheckpointRequest) -> StorageResult<()> {
        self.call("validate")
    }
    async fn prepare(&self, _request: &CheckpointRequest) -> StorageResult<&'static str> {
        self.call("prepare").map(|()| "prepared")
    }
    async fn check_fence(&self, _fence: LeaseFence) -> StorageResult<()> {
        self.call("check_fence")
    }
    async fn commit(
        &self,
        _request: &CheckpointRequest,
        prepared: &'static str,
    ) -> StorageResult<ETag> {
        assert_eq!(prepared, "prepared", "commit gets what prepare made");
        self.call("commit").map(|()| ETag("committed".into()))
    }
    async fn send(
        &self,
        _message: &OutboundMessage,
    ) -> StorageResult<Option<taskhub_storage::Dequeued>> {
        self.call("send").map(|()| None)
    }
    async fn write_instance(&self, _row: &InstanceRow, _expect: &Expect) -> StorageResult<ETag> {
        self.call("write_instance").map(|()| ETag("row".into()))
    }
    async fn delete_consumed(&self, _queue: QueueName, _receipt: &Receipt) -> StorageResult<()> {
        self.call("delete_consumed")
    }
    async fn clear_outbox(&self, _instance: &InstanceId, committed: &ETag) -> StorageResult<ETag> {
        assert_eq!(committed.0, "committed", "cleared on the commit's ETag");
        self.call("clear_outbox").map(|()| ETag("cleared".into()))
    }
    async fn history_etag(&self, _request: &CheckpointRequest) -> StorageResult<Option<ETag>> {
        self.call("history_etag")
            .map(|()| Some(ETag("current".into())))
    }
}

/// Records the steps it is told about into the fake's log; stops at `stop`.
struct Recorder<'a> {
    fake: &'a Fake,
    stop: Option<CheckpointStep>,
}

impl StepObserver for Recorder<'_> {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        assert_eq!(request.instance_id.as_str(), "i", "told which checkpoint");
        self.fake.log.lock().unwrap().push(format!("{step:?}"));
        if self.stop == Some(step) {
            return Err(StorageError::Unavailable(format!("stopped after {step:?}")));
        }
        Ok(())
    }
}

fn row() -> InstanceRow {
    common::running_row("i", "N")
}

fn out(body: &str) -> OutboundMessage {
    OutboundMessage {
        claim: None,
        queue: QueueName::WorkItems,
        message: NewQueueMessage {
            body: body.to_owned(),
            delay: Duration::ZERO,
        },
    }
}

/// A full turn: fence, history, two messages, a row and one consumed message.
fn full() -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new("i").unwrap(),
        fence: Some(LeaseFence {
            partition: 0,
            epoch: 1,
        }),
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events: Vec::new(),
        }),
        instance: Some((row(), Expect::Absent)),
        outbound: vec![out("a"), out("b")],
        consumed: vec![(QueueName::Control(0), Receipt("r".into()))],
    }
}

const FULL_ORDER: [&str; 16] = [
    "validate",
    "Validated",
    "prepare",
    "check_fence",
    "FenceChecked",
    "commit",
    "HistoryCommitted",
    "send",
    "send",
    "OutboundSent",
    "write_instance",
    "InstanceWritten",
    "delete_consumed",
    "ConsumedDeleted",
    "clear_outbox",
    "OutboxCleared",
];

/// Runs `request` through the driver on a fake that fails nothing; it must succeed.
async fn run_on_a_fresh_fake(request: CheckpointRequest) -> (Fake, CheckpointOutcome) {
    let fake = Fake::default();
    let outcome = run_ordered_checkpoint(&fake, &request, &NoObserver)
        .await
        .unwrap();
    (fake, outcome)
}

#[tokio::test]
async fn steps_run_in_order_and_the_observer_is_told_after_each() {
    let fake = Fake::default();
    let outcome = run_ordered_checkpoint(
        &fake,
        &full(),
        &Recorder {
            fake: &fake,
            stop: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(fake.log(), FULL_ORDER);
    assert_eq!(outcome.history_etag, Some(ETag("cleared".into())));
    assert_eq!(outcome.instance_etag, Some(ETag("row".into())));
}

#[tokio::test]
async fn an_observer_error_stops_the_checkpoint_after_that_step() {
    for step in CheckpointStep::ALL {
        let fake = Fake::default();
        let err = run_ordered_checkpoint(
            &fake,
            &full(),
            &Recorder {
                fake: &fake,
                stop: Some(step),
            },
        )
        .await
        .unwrap_err();
        assert_eq!(
            err,
            StorageError::Unavailable(format!("stopped after {step:?}"))
        );
        let name = format!("{step:?}");
        let upto = FULL_ORDER.iter().position(|s| *s == name).unwrap();
        assert_eq!(fake.log(), FULL_ORDER[..=upto], "stopped after {step:?}");
        assert_eq!(CheckpointStep::from_index(step.index()), Some(step));
    }
}

#[tokio::test]
async fn a_failing_step_stops_the_later_ones_and_fence_or_validation_write_nothing() {
    let fenced = StorageError::Fenced {
        partition: 0,
        attempted: 1,
        current: 2,
    };
    for (fails, last) in [
        ("validate", "validate"),
        ("check_fence", "check_fence"),
        ("commit", "commit"),
        ("write_instance", "write_instance"),
    ] {
        let fake = Fake::failing(vec![(fails, fenced.clone())]);
        let err = run_ordered_checkpoint(&fake, &full(), &NoObserver)
            .await
            .unwrap_err();
        assert_eq!(err, fenced);
        assert_eq!(fake.log().last().map(String::as_str), Some(last));
        if fails == "validate" || fails == "check_fence" {
            assert!(
                !fake.log().iter().any(|c| c == "commit" || c == "send"),
                "{fails}: nothing committed or sent: {:?}",
                fake.log()
            );
        }
    }
}

#[tokio::test]
async fn a_stale_receipt_is_ignored_and_a_failed_clear_keeps_the_commits_etag() {
    let fake = Fake::failing(vec![
        (
            "delete_consumed",
            StorageError::ReceiptExpired {
                queue: "control-00".into(),
            },
        ),
        (
            "clear_outbox",
            StorageError::Conflict {
                what: "history".into(),
            },
        ),
    ]);
    let outcome = run_ordered_checkpoint(&fake, &full(), &NoObserver)
        .await
        .unwrap();
    assert_eq!(
        outcome.history_etag,
        Some(ETag("committed".into())),
        "the outbox stays for the next loader; the commit's ETag is the current one"
    );
}

#[tokio::test]
async fn without_history_nothing_is_committed_and_without_outbox_nothing_is_cleared() {
    let (fake, outcome) = run_on_a_fresh_fake(CheckpointRequest {
        history: None,
        ..full()
    })
    .await;
    assert_eq!(
        fake.log(),
        [
            "validate",
            "check_fence",
            "send",
            "send",
            "write_instance",
            "delete_consumed",
            "history_etag"
        ]
    );
    assert_eq!(outcome.history_etag, Some(ETag("current".into())));

    let (fake, outcome) = run_on_a_fresh_fake(CheckpointRequest {
        fence: None,
        outbound: Vec::new(),
        ..full()
    })
    .await;
    assert_eq!(
        fake.log(),
        [
            "validate",
            "prepare",
            "commit",
            "write_instance",
            "delete_consumed"
        ]
    );
    assert_eq!(outcome.history_etag, Some(ETag("committed".into())));
}
