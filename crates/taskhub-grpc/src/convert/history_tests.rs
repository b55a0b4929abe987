#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;
use taskhub::{CarriedEvent, Timestamp};

fn p(json: &str) -> Payload {
    Payload::from_json(json).unwrap()
}

fn id(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

/// An event as an SDK sends it (no timestamp).
fn sent(event_id: i32, event_type: Option<E>) -> proto::HistoryEvent {
    proto::HistoryEvent {
        event_id,
        timestamp: None,
        event_type,
    }
}

fn failure() -> FailureDetails {
    FailureDetails {
        error_type: "TaskFailedError".into(),
        message: "boom".into(),
        details: Some("trace".into()),
        non_retryable: false,
    }
}

/// Every kind Taskhub writes, with the fields the protocol carries.
fn every_kind() -> Vec<EventKind> {
    vec![
        EventKind::ExecutionStarted {
            name: "Orch".into(),
            version: Some("2".into()),
            input: p(r#"{"n":12345678901234567890123}"#),
            execution_id: ExecutionId::new("exec-1").unwrap(),
            parent: Some(ParentInstance {
                instance_id: id("parent"),
                execution_id: ExecutionId::new("exec-p").unwrap(),
                task_id: 3,
                name: Some("Parent".into()),
            }),
            scheduled_start: Some(Timestamp::from_millis(1_700_000_000_500)),
            applied_event_ids: Vec::new(),
            // A parent's tags for its child: sent in `executionStarted.tags`.
            tags: Box::new([("team".to_owned(), "ops".to_owned())].into()),
        },
        EventKind::ExecutionCompleted { result: p("[1,2]") },
        EventKind::ExecutionFailed { failure: failure() },
        EventKind::ExecutionTerminated {
            reason: "stop it".into(),
            output: None,
        },
        EventKind::ContinuedAsNew {
            input: p("4"),
            version: None,
            carried_events: Vec::new(),
            dropped_events: Vec::new(),
        },
        EventKind::OrchestratorStarted,
        EventKind::OrchestratorCompleted,
        EventKind::TaskScheduled {
            task_id: 1,
            name: "Act".into(),
            version: None,
            input: p("\"x\""),
            attempt: 1,
            // An SDK's `ScheduleTaskAction.tags`: replayed to it in `taskScheduled.tags`.
            tags: [("team".to_owned(), "ops".to_owned())].into(),
        },
        EventKind::TaskCompleted {
            task_id: 1,
            result: p("\"y\""),
        },
        EventKind::TaskFailed {
            task_id: 2,
            failure: failure(),
        },
        EventKind::SubOrchestrationCreated {
            task_id: 4,
            name: "Child".into(),
            version: Some("1".into()),
            instance_id: id("child-1"),
            input: Payload::absent(),
            tags: Box::new([("team".to_owned(), "billing".to_owned())].into()),
        },
        EventKind::SubOrchestrationCompleted {
            task_id: 4,
            result: p("true"),
        },
        EventKind::SubOrchestrationFailed {
            task_id: 5,
            failure: failure(),
        },
        EventKind::TimerCreated {
            task_id: 6,
            fire_at: Timestamp::from_millis(1_700_000_003_000),
        },
        EventKind::TimerFired {
            task_id: 6,
            fire_at: Timestamp::from_millis(1_700_000_003_000),
        },
        EventKind::EventRaised {
            name: "Approval".into(),
            input: p("{\"ok\":true}"),
        },
        EventKind::EventSent {
            task_id: 7,
            instance_id: id("other"),
            name: "Ping".into(),
            input: p("1"),
        },
        EventKind::ExecutionSuspended {
            reason: Some("maintenance".into()),
        },
        EventKind::ExecutionResumed { reason: None },
        EventKind::ExecutionRewound {
            reason: Some("the payment service is back".into()),
            rewound_tasks: Vec::new(),
        },
        EventKind::ExecutionRewound {
            reason: None,
            rewound_tasks: Vec::new(),
        },
    ]
}

#[test]
fn every_kind_round_trips() {
    let instance = id("inst-1");
    for (i, kind) in every_kind().into_iter().enumerate() {
        let ours = HistoryEvent::new(Timestamp::from_millis(1_700_000_000_000 + i as u64), kind);
        let wire = event_to_proto(&ours, &instance);
        let back = event_from_proto(&wire).unwrap();
        assert_eq!(back, ours, "{}", ours.event.type_name());
    }
}

#[test]
fn a_task_s_tags_go_out_in_task_scheduled_and_come_back() {
    let instance = id("inst-1");
    let tags: taskhub::Tags = [
        ("team".to_owned(), "ops".to_owned()),
        ("tier".to_owned(), "gold".to_owned()),
    ]
    .into();
    let ours = HistoryEvent::new(
        Timestamp::EPOCH,
        EventKind::TaskScheduled {
            task_id: 3,
            name: "Act".into(),
            version: None,
            input: p("1"),
            attempt: 1,
            tags: tags.clone(),
        },
    );
    let wire = event_to_proto(&ours, &instance);
    let Some(proto::history_event::EventType::TaskScheduled(t)) = &wire.event_type else {
        panic!("{wire:?}");
    };
    let sent: taskhub::Tags = t.tags.clone().into_iter().collect();
    assert_eq!(sent, tags);
    assert_eq!(event_from_proto(&wire).unwrap(), ours);
}

#[test]
fn ids_and_shapes_on_the_wire_are_the_sdks() {
    let instance = id("inst-1");
    let wire = |k: EventKind| event_to_proto(&HistoryEvent::new(Timestamp::EPOCH, k), &instance);
    let kinds = every_kind();
    // ExecutionStarted names the instance and its execution.
    let E::ExecutionStarted(s) = wire(kinds[0].clone()).event_type.unwrap() else {
        panic!("not executionStarted")
    };
    let o = s.orchestration_instance.unwrap();
    assert_eq!(
        (o.instance_id.as_str(), o.execution_id.as_deref()),
        ("inst-1", Some("exec-1"))
    );
    let parent = s.parent_instance.unwrap();
    assert_eq!(parent.task_scheduled_id, 3);
    // The parent's orchestration name, as the SDKs read it (`ParentInstanceInfo.name`).
    assert_eq!(parent.name.as_deref(), Some("Parent"));
    // A failure ends with executionCompleted FAILED and its details.
    let E::ExecutionCompleted(c) = wire(kinds[2].clone()).event_type.unwrap() else {
        panic!("not executionCompleted")
    };
    assert_eq!(c.orchestration_status, S::Failed as i32);
    assert_eq!(c.failure_details.unwrap().error_message, "boom");
    // A terminate's reason is JSON text, as the SDKs send it.
    let E::ExecutionTerminated(t) = wire(kinds[3].clone()).event_type.unwrap() else {
        panic!("not executionTerminated")
    };
    assert_eq!(t.input.as_deref(), Some("\"stop it\""));
    // Scheduling events carry the task ID as eventId; results name it; others are -1.
    assert_eq!(wire(kinds[7].clone()).event_id, 1);
    let done = wire(kinds[8].clone());
    assert_eq!(done.event_id, -1);
    let E::TaskCompleted(c) = done.event_type.unwrap() else {
        panic!("not taskCompleted")
    };
    assert_eq!(c.task_scheduled_id, 1);
    assert_eq!(wire(kinds[13].clone()).event_id, 6);
    // An absent input goes out as no value (a JSON null goes out as "null").
    let E::SubOrchestrationInstanceCreated(c) = wire(kinds[10].clone()).event_type.unwrap() else {
        panic!("not subOrchestrationInstanceCreated")
    };
    assert_eq!(c.input, None);
}

#[test]
fn a_continue_as_new_sends_its_input_only() {
    let ours = HistoryEvent::new(
        Timestamp::EPOCH,
        EventKind::ContinuedAsNew {
            input: p("4"),
            version: Some("3".into()),
            carried_events: vec![CarriedEvent {
                name: "e".into(),
                input: p("1"),
            }],
            dropped_events: Vec::new(),
        },
    );
    let wire = event_to_proto(&ours, &id("i"));
    assert_eq!(
        wire.event_type,
        Some(E::ContinueAsNew(proto::ContinueAsNewEvent {
            input: Some("4".into())
        }))
    );
}

#[test]
fn bad_events_are_refused_naming_the_field_or_kind() {
    for (event, field) in [
        (sent(-1, None), "eventType"),
        (
            sent(
                -1,
                Some(E::TaskScheduled(proto::TaskScheduledEvent::default())),
            ),
            "eventId",
        ),
        (
            sent(
                -1,
                Some(E::ExecutionStarted(proto::ExecutionStartedEvent::default())),
            ),
            "executionStarted.orchestrationInstance.executionId",
        ),
    ] {
        assert_eq!(
            event_from_proto(&event).unwrap_err().field_name(),
            Some(field),
            "{event:?}"
        );
    }
    // Text that is not JSON is a payload as it is (an SDK's large-payload token).
    let opaque = sent(
        -1,
        Some(E::EventRaised(proto::EventRaisedEvent {
            name: "x".into(),
            input: Some("blob:v1:c:b".into()),
        })),
    );
    assert!(matches!(
        event_from_proto(&opaque).unwrap().event,
        EventKind::EventRaised { input, .. } if input.as_str() == "blob:v1:c:b"
    ));
    let entity = sent(
        1,
        Some(E::EntityLockGranted(
            proto::EntityLockGrantedEvent::default(),
        )),
    );
    assert_eq!(
        event_from_proto(&entity).unwrap_err(),
        ConvertError::Unsupported("entityLockGranted")
    );
}

#[test]
fn a_terminate_reason_sent_as_json_or_as_plain_text_is_kept_as_text() {
    let term = |input: &str| {
        sent(
            -1,
            Some(E::ExecutionTerminated(proto::ExecutionTerminatedEvent {
                input: Some(input.into()),
                recurse: true,
            })),
        )
    };
    let reason = |e: HistoryEvent| match e.event {
        EventKind::ExecutionTerminated { reason, .. } => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason(event_from_proto(&term("\"done\"")).unwrap()), "done");
    assert_eq!(
        reason(event_from_proto(&term("{\"a\":1}")).unwrap()),
        "{\"a\":1}"
    );
}

#[test]
fn a_terminate_output_goes_out_as_given_and_a_reason_alone_as_a_json_string() {
    let out = |output: Option<Payload>| {
        let e = HistoryEvent::new(
            Timestamp::EPOCH,
            EventKind::ExecutionTerminated {
                reason: "{\"a\":1}".into(),
                output,
            },
        );
        match event_to_proto(&e, &id("i")).event_type.unwrap() {
            E::ExecutionTerminated(t) => t.input,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(out(Some(p("{\"a\":1}"))).as_deref(), Some("{\"a\":1}"));
    assert_eq!(out(None).as_deref(), Some("\"{\\\"a\\\":1}\""));
    // And back: the output as sent is kept beside the reason's text.
    let wire = sent(
        -1,
        Some(E::ExecutionTerminated(proto::ExecutionTerminatedEvent {
            input: Some("blob:v1:c:b".into()),
            recurse: false,
        })),
    );
    match event_from_proto(&wire).unwrap().event {
        EventKind::ExecutionTerminated { reason, output } => {
            assert_eq!(reason, "blob:v1:c:b");
            assert_eq!(output.unwrap().as_str(), "blob:v1:c:b");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn payloads_pass_through_the_history_both_ways() {
    for text in [Some("null"), Some("blob:v1:c:b"), Some("{\"a\":1}"), None] {
        let ours = HistoryEvent::new(
            Timestamp::EPOCH,
            EventKind::EventRaised {
                name: "e".into(),
                input: text.map_or_else(Payload::absent, Payload::from_text),
            },
        );
        let wire = event_to_proto(&ours, &id("i"));
        match wire.event_type.as_ref().unwrap() {
            E::EventRaised(r) => assert_eq!(r.input.as_deref(), text),
            other => panic!("{other:?}"),
        }
        assert_eq!(event_from_proto(&wire).unwrap().event, ours.event);
    }
}

#[test]
fn a_rewind_goes_out_as_execution_rewound_with_its_reason_and_no_task_ids() {
    let instance = id("inst-1");
    let ours = HistoryEvent::new(
        Timestamp::from_millis(1_700_000_000_000),
        EventKind::ExecutionRewound {
            reason: Some("retry the card".into()),
            rewound_tasks: vec![0, 3],
        },
    );
    let wire = event_to_proto(&ours, &instance);
    assert_eq!(wire.event_id, -1);
    let Some(E::ExecutionRewound(r)) = &wire.event_type else {
        panic!("not executionRewound: {wire:?}");
    };
    assert_eq!(r.reason.as_deref(), Some("retry the card"));
    assert_eq!(r.parent_execution_id, None);
    assert_eq!(r.instance_id, None);
    // The task IDs have no field in the protocol: they come back empty.
    assert_eq!(
        event_from_proto(&wire).unwrap().event,
        EventKind::ExecutionRewound {
            reason: Some("retry the card".into()),
            rewound_tasks: Vec::new(),
        }
    );
}

#[test]
fn the_trace_context_of_a_task_or_child_an_sdk_started_goes_back_with_the_history() {
    let me = InstanceId::new("parent").unwrap();
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let mut scheduled = HistoryEvent::new(
        Timestamp::from_millis(5),
        EventKind::TaskScheduled {
            task_id: 3,
            name: "Pay".into(),
            version: None,
            input: Payload::null(),
            attempt: 1,
            tags: Default::default(),
        },
    );
    scheduled.trace = Some(tp.to_owned());
    let out = event_to_proto(&scheduled, &me);
    let Some(E::TaskScheduled(t)) = &out.event_type else {
        panic!("{out:?}")
    };
    assert_eq!(t.parent_trace_context.as_ref().unwrap().trace_parent, tp);
    assert_eq!(event_from_proto(&out).unwrap(), scheduled);

    let mut created = HistoryEvent::new(
        Timestamp::from_millis(6),
        EventKind::SubOrchestrationCreated {
            task_id: 4,
            name: "Child".into(),
            version: None,
            instance_id: InstanceId::new("kid").unwrap(),
            input: Payload::null(),
            tags: Default::default(),
        },
    );
    created.trace = Some(tp.to_owned());
    let out = event_to_proto(&created, &me);
    let Some(E::SubOrchestrationInstanceCreated(s)) = &out.event_type else {
        panic!("{out:?}")
    };
    assert_eq!(s.parent_trace_context.as_ref().unwrap().trace_parent, tp);
    assert_eq!(event_from_proto(&out).unwrap(), created);
    // None kept: none sent.
    created.trace = None;
    let Some(E::SubOrchestrationInstanceCreated(s)) = event_to_proto(&created, &me).event_type
    else {
        panic!()
    };
    assert!(s.parent_trace_context.is_none());
}
