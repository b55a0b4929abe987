//! Turning a turn's actions into outbound queue messages.
//!
//! Message IDs are derived from the sending instance, execution and task, so a turn that is
//! re-run after a crash re-sends messages the receiver recognises as duplicates. Events carried
//! across continue-as-new are addressed to the instance, not to an execution; a message carries
//! the turn's trace, or the valid `traceparent` the code gave its activity or child (`joined`);
//! a child's start carries the tags its parent gave it. The encoding
//! and the delays every stage shares are in [`outbound`](crate::worker::shared::outbound).

use std::time::Duration;

use taskhub_core::{
    Action, EntityId, EventKind, ExecutionId, InstanceId, Message, MessageId, ParentInstance,
    SendOrder, Sender, Timestamp,
};
use taskhub_storage::{OutboundMessage, QueueName, StorageError};

use crate::hub::TaskHub;
use crate::telemetry::TraceContext;
use crate::worker::shared::outbound::{attempt_purpose, encode, timer_delay};
use crate::worker::shared::Shared;

/// Who is sending, for the envelopes.
pub(crate) struct Origin<'a> {
    pub instance: &'a InstanceId,
    pub execution: &'a ExecutionId,
    pub partition: u32,
    pub episode: u64,
    pub now: Timestamp,
    pub name: &'a str,
    /// The sending turn's trace context, carried by every message it sends.
    pub traceparent: Option<&'a str>,
    /// How many times the execution was rewound: a work item sent after a rewind gets a new
    /// message ID (a task scheduled again must not be taken for a copy of the failed attempt).
    pub rewinds: u32,
}

impl Origin<'_> {
    /// The purpose of a work item or a child's start, told apart from the same task's before
    /// each rewind of the execution: a task scheduled again (or a child started again) must
    /// not be taken for a copy of the attempt that failed (`run_ledger`), nor a child started
    /// again get the execution ID its purged predecessor had.
    /// The first send-order number after the execution's rewinds: an entity skips a number
    /// it applied, so the sends after a rewind count on above any before it (a rewind makes
    /// the code's sends name no predecessor from before it, see the core's `forget_sends`).
    fn send_order_base(&self) -> u64 {
        u64::from(self.rewinds) << 40
    }

    fn after_rewinds(&self, purpose: String) -> String {
        if self.rewinds == 0 {
            purpose
        } else {
            format!("{purpose}@rewind{}", self.rewinds)
        }
    }

    pub(crate) fn message(
        &self,
        purpose: &str,
        target: InstanceId,
        execution: Option<ExecutionId>,
        event: EventKind,
    ) -> Message {
        Message {
            id: MessageId::derived(self.instance, self.execution, purpose),
            target,
            execution_id: execution,
            sender: Some(Sender {
                instance_id: self.instance.clone(),
                execution_id: self.execution.clone(),
            }),
            episode: self.episode,
            enqueued_at: self.now,
            target_partition: None,
            traceparent: self.traceparent.map(str::to_owned),
            order: None,
            event,
        }
    }
}

/// Makes `m` carry `traceparent` instead of the turn's trace, when the code gave a valid one
/// for the work it starts (an SDK's `parentTraceContext`: its span that scheduled the
/// activity or started the child, so Taskhub's spans join the SDK's trace). An invalid one
/// is ignored: the turn's trace stays.
fn joined(m: &mut Message, traceparent: Option<&str>) {
    if let Some(tp) = traceparent.filter(|tp| TraceContext::parse(tp).is_some()) {
        m.traceparent = Some(tp.to_owned());
    }
}

/// A message, the queue it goes to, and its delay.
type Addressed = (QueueName, Message, Duration);

/// Builds the outbound messages of `actions`.
pub(crate) async fn build(
    shared: &Shared,
    origin: &Origin<'_>,
    actions: &[Action],
) -> Result<Vec<OutboundMessage>, StorageError> {
    let mut out = Vec::new();
    for action in actions {
        for (queue, message, delay) in messages_of(shared, origin, action).await? {
            out.push(encode(&shared.hub, queue, &message, delay).await?);
        }
    }
    Ok(out)
}

/// The messages one action sends (none for an action that sends nothing).
async fn messages_of(
    shared: &Shared,
    origin: &Origin<'_>,
    action: &Action,
) -> Result<Vec<Addressed>, StorageError> {
    let one = match action {
        Action::ScheduleActivity { .. } => work_item(origin, action),
        Action::StartSubOrchestration { .. } => sub_start(shared, origin, action).await?,
        Action::CreateTimer { task_id, fire_at } => {
            let m = origin.message(
                &format!("timer:{task_id}"),
                origin.instance.clone(),
                Some(origin.execution.clone()),
                EventKind::TimerFired {
                    task_id: *task_id,
                    fire_at: *fire_at,
                },
            );
            let delay = timer_delay(shared.hub.store().as_ref(), *fire_at, origin.now);
            Some((QueueName::Control(origin.partition), m, delay))
        }
        Action::SendEvent { .. } => event(&shared.hub, origin, action).await?,
        Action::NotifyParent { parent, event } => {
            let partition = shared.hub.partition_of(&parent.instance_id).await?;
            let m = origin.message(
                "parent",
                parent.instance_id.clone(),
                Some(parent.execution_id.clone()),
                event.clone(),
            );
            Some((QueueName::Control(partition), m, Duration::ZERO))
        }
        Action::ContinueAsNew { .. } => return Ok(continue_as_new(origin, action)),
        _ => None,
    };
    Ok(one.into_iter().collect())
}

/// An activity's work item (`None` for any other action).
fn work_item(origin: &Origin<'_>, action: &Action) -> Option<Addressed> {
    let Action::ScheduleActivity {
        task_id,
        attempt,
        traceparent,
        ..
    } = action
    else {
        return None;
    };
    // The work item carries the `TaskScheduled` event that records the action.
    let mut m = origin.message(
        &origin.after_rewinds(attempt_purpose("task", *task_id, *attempt)),
        origin.instance.clone(),
        Some(origin.execution.clone()),
        action.recorded_event()?,
    );
    m.target_partition = Some(origin.partition);
    joined(&mut m, traceparent.as_deref());
    Some((QueueName::WorkItems, m, Duration::ZERO))
}

/// A sub-orchestration's start (`None` for any other action).
async fn sub_start(
    shared: &Shared,
    origin: &Origin<'_>,
    action: &Action,
) -> Result<Option<Addressed>, StorageError> {
    let Action::StartSubOrchestration {
        task_id,
        name,
        version,
        instance_id,
        input,
        attempt,
        tags,
        traceparent,
    } = action
    else {
        return Ok(None);
    };
    let partition = shared.home(instance_id, shared.hub.partition_of(instance_id).await?);
    // A retry under the same task ID (remote code) is a new start of a new child execution:
    // the attempt is in the purpose, so in both IDs.
    let purpose = origin.after_rewinds(attempt_purpose("sub", *task_id, *attempt));
    let child_execution =
        ExecutionId::new(MessageId::derived(origin.instance, origin.execution, &purpose).as_str())
            .unwrap_or_else(|_| ExecutionId::random());
    let mut m = origin.message(
        &purpose,
        instance_id.clone(),
        Some(child_execution.clone()),
        EventKind::ExecutionStarted {
            name: name.clone(),
            // Without a version, the hub's `default_version` (if set).
            version: version.clone().or_else(|| {
                let default = &shared.hub.settings().default_version;
                (!default.is_empty()).then(|| default.clone())
            }),
            input: input.clone(),
            execution_id: child_execution,
            parent: Some(ParentInstance {
                instance_id: origin.instance.clone(),
                execution_id: origin.execution.clone(),
                task_id: *task_id,
                name: Some(origin.name.into()),
            }),
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Box::new(tags.clone()),
        },
    );
    m.target_partition = Some(partition);
    joined(&mut m, traceparent.as_deref());
    Ok(Some((QueueName::Control(partition), m, Duration::ZERO)))
}

/// An event sent to another instance, numbered in send order for an entity (`None` for any
/// other action).
async fn event(
    hub: &TaskHub,
    origin: &Origin<'_>,
    action: &Action,
) -> Result<Option<Addressed>, StorageError> {
    let Action::SendEvent {
        task_id,
        instance_id,
        name,
        input,
        after,
    } = action
    else {
        return Ok(None);
    };
    let partition = hub.partition_of(instance_id).await?;
    let mut m = origin.message(
        &origin.after_rewinds(format!("send:{task_id}")),
        instance_id.clone(),
        None,
        EventKind::EventRaised {
            name: name.clone(),
            input: input.clone(),
        },
    );
    // An entity applies one execution's requests in send order (task IDs grow with every
    // action, so they number the execution's messages).
    if EntityId::is_entity_instance(instance_id) {
        let base = origin.send_order_base();
        m.order = Some(SendOrder {
            n: base.saturating_add(*task_id).saturating_add(1),
            prev: after.map(|a| base.saturating_add(a).saturating_add(1)),
        });
    }
    Ok(Some((QueueName::Control(partition), m, Duration::ZERO)))
}

/// The next execution's start and the events carried to it (none for any other action).
fn continue_as_new(origin: &Origin<'_>, action: &Action) -> Vec<Addressed> {
    let Action::ContinueAsNew {
        execution_id,
        input,
        version,
        carried_events,
        parent,
        applied_event_ids,
    } = action
    else {
        return Vec::new();
    };
    let q = QueueName::Control(origin.partition);
    let start = origin.message(
        "continue-as-new",
        origin.instance.clone(),
        Some(execution_id.clone()),
        EventKind::ExecutionStarted {
            name: origin.name.to_owned(),
            version: version.clone(),
            input: input.clone(),
            execution_id: execution_id.clone(),
            parent: parent.clone(),
            scheduled_start: None,
            applied_event_ids: applied_event_ids.clone(),
            tags: Default::default(),
        },
    );
    let mut out = vec![(q, start, Duration::ZERO)];
    // Addressed to the instance, not to the next execution: if that execution has itself
    // continued as new before they are applied, they go on to the one after it instead of
    // being discarded as stale.
    for (i, e) in carried_events.iter().enumerate() {
        let m = origin.message(
            &super::carry::purpose(i),
            origin.instance.clone(),
            None,
            EventKind::EventRaised {
                name: e.name.clone(),
                input: e.input.clone(),
            },
        );
        out.push((q, m, Duration::ZERO));
    }
    out
}
