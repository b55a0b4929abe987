use super::*;
use std::time::Duration;

use taskhub_core::{Payload, Timestamp};

use crate::settings::Settings;

fn torn_grace(s: &Settings) -> Duration {
    s.torn_outbox_grace()
}

fn instance() -> InstanceId {
    InstanceId::new("order-1").unwrap()
}

fn execution() -> ExecutionId {
    ExecutionId::new("e1").unwrap()
}

/// A work item as a turn sends it: ID from the task's purpose, target the orchestration.
fn work_item(task_id: u64, attempt: u32) -> Message {
    let mut m = Message::from_client(
        instance(),
        EventKind::TaskScheduled {
            task_id,
            name: "Charge".into(),
            version: None,
            input: Payload::null(),
            attempt,
            tags: Default::default(),
        },
        Timestamp::from_millis(0),
    );
    m.id = MessageId::derived(
        &instance(),
        &execution(),
        &attempt_purpose("task", task_id, attempt),
    );
    m.execution_id = Some(execution());
    m
}

fn result(task_id: u64, attempt: u32) -> MessageId {
    MessageId::derived(
        &instance(),
        &execution(),
        &attempt_purpose("result", task_id, attempt),
    )
}

fn applied(id: MessageId) -> HistoryEvent {
    let mut e = HistoryEvent::new(
        Timestamp::from_millis(0),
        EventKind::TaskCompleted {
            task_id: 0,
            result: Payload::null(),
        },
    );
    e.message_id = Some(id);
    e
}

fn judge(seen: &Seen, queue: QueueName, m: &Message) -> Option<LeftOut> {
    seen.judge(&instance(), &execution(), queue, m)
}

#[test]
fn a_work_item_whose_result_was_delivered_or_applied_is_left_out() {
    let delivered = [result(1, 1)];
    let seen = Seen::new(&[applied(result(2, 1))], &delivered);
    assert_eq!(
        judge(&seen, QueueName::WorkItems, &work_item(1, 1)),
        Some(LeftOut::Answered),
        "result among the deliveries"
    );
    assert_eq!(
        judge(&seen, QueueName::WorkItems, &work_item(2, 1)),
        Some(LeftOut::Answered),
        "result in the history"
    );
    assert_eq!(
        judge(&seen, QueueName::WorkItems, &work_item(3, 1)),
        None,
        "no result seen: re-sent"
    );
}

#[test]
fn the_result_of_an_earlier_attempt_does_not_answer_a_retry() {
    // A retry under the same task ID (remote code) is a new work item: the failed first
    // attempt's result must not stop it from being sent.
    let seen = Seen::new(&[applied(result(4, 1))], &[]);
    assert_eq!(judge(&seen, QueueName::WorkItems, &work_item(4, 2)), None);
    let seen = Seen::new(&[applied(result(4, 2))], &[]);
    assert_eq!(
        judge(&seen, QueueName::WorkItems, &work_item(4, 2)),
        Some(LeftOut::Answered)
    );
}

#[test]
fn a_message_whose_original_was_delivered_or_applied_is_left_out() {
    let timer = {
        let mut m = work_item(5, 1);
        m.id = MessageId::derived(&instance(), &execution(), "timer:5");
        m.event = EventKind::TimerFired {
            task_id: 5,
            fire_at: Timestamp::from_millis(0),
        };
        m
    };
    let delivered = [timer.id.clone()];
    let seen = Seen::new(&[], &delivered);
    assert_eq!(
        judge(&seen, QueueName::Control(0), &timer),
        Some(LeftOut::Original)
    );
    let item = work_item(6, 1);
    let seen = Seen::new(&[applied(item.id.clone())], &[]);
    assert_eq!(
        judge(&seen, QueueName::WorkItems, &item),
        Some(LeftOut::Original)
    );
}

#[test]
fn only_work_items_are_answered_by_a_result() {
    // The same event on a control queue (not a work item) is not screened by its result.
    let seen = Seen::new(&[applied(result(7, 1))], &[]);
    assert_eq!(judge(&seen, QueueName::Control(0), &work_item(7, 1)), None);
    // Nor a work item of another instance.
    let mut other = work_item(7, 1);
    other.target = InstanceId::new("order-2").unwrap();
    assert_eq!(judge(&seen, QueueName::WorkItems, &other), None);
}

#[test]
fn the_grace_covers_a_lease_and_a_claimed_work_item_surfacing() {
    let s = Duration::from_secs;
    let defaults = Settings::default();
    // 5 minutes' visibility plus the 60 s work-item poll, over the 30 s lease.
    assert_eq!(torn_grace(&defaults), s(360));
    let long_lease = Settings {
        lease_interval: s(900),
        ..Settings::default()
    };
    assert_eq!(torn_grace(&long_lease), s(900));
    let quick = Settings {
        work_item_visibility_timeout: s(3),
        max_queue_polling_interval: Duration::from_millis(100),
        lease_interval: s(2),
        ..Settings::default()
    };
    assert_eq!(torn_grace(&quick), Duration::from_millis(3_400));
}
