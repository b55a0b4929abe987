#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use taskhub_core::{
    CoreError, EventKind, ExecutionId, InstanceId, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_storage::{ETag, Expect, InstanceRow};

use super::{plan_start, StartPlan, StartRequest, StartWrite};
use crate::client::{ReusePolicy, StartOptions, StatusSet};
use crate::error::TaskhubError;
use OrchestrationStatus::{Completed, Failed, Pending, Running, Suspended};

const MAX_DELAY: Duration = Duration::from_secs(7 * 24 * 3600);

fn now() -> Timestamp {
    Timestamp::from_millis(1_000_000)
}

fn id(text: &str) -> InstanceId {
    InstanceId::new(text).unwrap()
}

fn input() -> Payload {
    Payload::to_payload(&"order 42", "input").unwrap()
}

/// The stored row of instance `i` in `status`, on partition 3.
fn row(status: OrchestrationStatus) -> InstanceRow {
    InstanceRow {
        instance_id: id("i"),
        name: "Old".into(),
        version: None,
        execution_id: ExecutionId::new("old-execution").unwrap(),
        status,
        input: input(),
        output: None,
        failure: None,
        custom_status: None,
        created_at: Timestamp::from_millis(5),
        updated_at: Timestamp::from_millis(5),
        completed_at: None,
        scheduled_start: None,
        partition: 3,
        tags: Default::default(),
        executions: Vec::new(),
        etag: Some(ETag("etag-1".into())),
    }
}

/// Plans a start of `Approval` on instance `i` (a new one on partition 9).
fn plan(
    existing: Option<&InstanceRow>,
    options: &StartOptions,
    at: Timestamp,
) -> Result<StartPlan, TaskhubError> {
    let instance_id = options.instance_id.clone().unwrap_or_else(|| id("i"));
    let input = input();
    let execution_id = ExecutionId::new("new-execution").unwrap();
    let request = StartRequest {
        instance_id: &instance_id,
        name: "Approval",
        input: &input,
        options,
        execution_id: &execution_id,
        new_partition: 9,
        max_delay: MAX_DELAY,
    };
    plan_start(existing, &request, at)
}

fn with(reuse: ReusePolicy) -> StartOptions {
    StartOptions {
        reuse,
        ..StartOptions::default()
    }
}

fn write(plan: Result<StartPlan, TaskhubError>) -> StartWrite {
    match plan {
        Ok(StartPlan::Write(w)) => *w,
        other => panic!("expected a write, got {other:?}"),
    }
}

/// What a plan does, in short: `W` write, `T` terminate and write, `K` keep, `R` refuse.
fn outcome(plan: Result<StartPlan, TaskhubError>) -> char {
    match plan {
        Ok(StartPlan::Write(w)) if w.terminate.is_some() => 'T',
        Ok(StartPlan::Write(_)) => 'W',
        Ok(StartPlan::Keep) => 'K',
        Err(TaskhubError::AlreadyExists { .. }) => 'R',
        Err(e) => panic!("unexpected error {e}"),
    }
}

#[test]
fn every_policy_on_every_status() {
    let listed = StatusSet::from([Running, Failed]);
    // Columns: Pending, Running, Suspended, Completed, Failed, Terminated, ContinuedAsNew.
    let table = [
        (ReusePolicy::RejectActive, "RRRWWWW"),
        (ReusePolicy::RejectExisting, "RRRRRRR"),
        (ReusePolicy::TerminateActive, "TTTWWWW"),
        (ReusePolicy::ReplaceIn(StatusSet::all()), "TTTWWWW"),
        (ReusePolicy::ReplaceIn(StatusSet::finished()), "RRRWWWR"),
        (ReusePolicy::ReplaceIn(StatusSet::EMPTY), "RRRRRRR"),
        (ReusePolicy::ReplaceIn(listed), "RTRRWRR"),
        (ReusePolicy::KeepIn(listed), "RKRRKRR"),
        (ReusePolicy::KeepIn(StatusSet::EMPTY), "RRRRRRR"),
    ];
    for (policy, expected) in table {
        let got: String = OrchestrationStatus::ALL
            .into_iter()
            .map(|s| outcome(plan(Some(&row(s)), &with(policy), now())))
            .collect();
        assert_eq!(got, expected, "{policy:?}");
        // No instance: every policy starts, conditional on there being none still.
        let new = write(plan(None, &with(policy), now()));
        assert_eq!(new.expect, Expect::Absent, "{policy:?}");
        assert_eq!(new.row.partition, 9);
        assert!(new.terminate.is_none());
    }
}

#[test]
fn a_refusal_names_the_status() {
    let got = plan(Some(&row(Running)), &with(ReusePolicy::RejectActive), now());
    assert!(matches!(
        got,
        Err(TaskhubError::AlreadyExists {
            status: Running,
            ..
        })
    ));
}

#[test]
fn a_replacement_is_conditional_on_the_row_read_and_keeps_its_partition() {
    let w = write(plan(
        Some(&row(Completed)),
        &with(ReusePolicy::RejectActive),
        now(),
    ));
    assert_eq!(w.expect, Expect::ETag(ETag("etag-1".into())));
    assert_eq!(w.row.partition, 3);
    assert_eq!(w.row.status, Pending);
    assert_eq!(w.row.execution_id.as_str(), "new-execution");
    assert_eq!(w.row.name, "Approval");
    assert_eq!(w.row.created_at, now());
    assert_eq!(w.start.target_partition, Some(3));
    assert_eq!(
        w.start.execution_id.as_ref().map(ExecutionId::as_str),
        Some("new-execution")
    );
}

#[test]
fn replacing_an_active_execution_terminates_that_execution_only() {
    let w = write(plan(
        Some(&row(Suspended)),
        &with(ReusePolicy::TerminateActive),
        now(),
    ));
    let terminate = w.terminate.unwrap();
    assert_eq!(
        terminate.execution_id.as_ref().map(ExecutionId::as_str),
        Some("old-execution")
    );
    assert_eq!(terminate.target_partition, Some(3));
    assert!(matches!(
        terminate.event,
        EventKind::ExecutionTerminated { .. }
    ));
}

#[test]
fn a_row_without_an_etag_is_a_storage_error() {
    let mut stored = row(Completed);
    stored.etag = None;
    let got = plan(Some(&stored), &with(ReusePolicy::RejectActive), now());
    assert!(matches!(got, Err(TaskhubError::Storage(_))));
}

#[test]
fn an_id_reserved_for_entities_is_refused_whatever_the_row() {
    let options = StartOptions {
        instance_id: Some(id("@counter@a")),
        reuse: ReusePolicy::TerminateActive,
        ..StartOptions::default()
    };
    for existing in [None, Some(row(Completed))] {
        let got = plan(existing.as_ref(), &options, now());
        assert!(matches!(
            got,
            Err(TaskhubError::Invalid(CoreError::InvalidInstanceId { .. }))
        ));
    }
}

#[test]
fn a_scheduled_start_waits_until_its_time_at_most_the_longest_delay() {
    let at = |ms: u64| StartOptions {
        start_at: Some(Timestamp::from_millis(ms).to_system_time()),
        ..StartOptions::default()
    };
    let soon = write(plan(None, &at(1_060_000), now()));
    assert_eq!(soon.delay, Duration::from_secs(60));
    assert_eq!(
        soon.row.scheduled_start,
        Some(Timestamp::from_millis(1_060_000))
    );
    assert!(matches!(
        soon.start.event,
        EventKind::ExecutionStarted {
            scheduled_start: Some(_),
            ..
        }
    ));
    // Decided later, the same start waits less.
    let later = write(plan(
        None,
        &at(1_060_000),
        Timestamp::from_millis(1_050_000),
    ));
    assert_eq!(later.delay, Duration::from_secs(10));
    // A time passed already: at once, the time still recorded.
    let past = write(plan(None, &at(500_000), now()));
    assert_eq!(past.delay, Duration::ZERO);
    assert_eq!(
        past.row.scheduled_start,
        Some(Timestamp::from_millis(500_000))
    );
    // Beyond the backend's longest delay: it comes early and goes round again.
    let far = write(plan(None, &at(1_000_000 + 30 * 24 * 3600 * 1000), now()));
    assert_eq!(far.delay, MAX_DELAY);
    // None: at once.
    let none = write(plan(None, &StartOptions::default(), now()));
    assert_eq!(none.delay, Duration::ZERO);
    assert_eq!(none.row.scheduled_start, None);
}

#[test]
fn the_options_reach_the_row_and_the_message() {
    let options = StartOptions {
        version: Some("2".into()),
        tags: [("team".to_owned(), "billing".to_owned())]
            .into_iter()
            .collect(),
        ..StartOptions::default()
    };
    let w = write(plan(None, &options, now()));
    assert_eq!(w.row.version.as_deref(), Some("2"));
    assert_eq!(w.row.tags, options.tags);
    match w.start.event {
        EventKind::ExecutionStarted { name, version, .. } => {
            assert_eq!(name, "Approval");
            assert_eq!(version.as_deref(), Some("2"));
        }
        other => panic!("{other:?}"),
    }
}
