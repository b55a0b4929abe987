//! One batch of an entity's messages: load (or reuse) its state and record from the instance
//! row, run the operations in order (`taskhub_core::entity::run_batch`), and commit the batch
//! as one checkpoint of the row (state + record, conditional on the row's ETag, fenced by the
//! lease) that deletes the consumed messages. No history is written: the state stays one row.
//!
//! Messages the batch sends (responses, signals, starts) go in the same checkpoint on a backend
//! whose checkpoints are atomic (SQLite). Elsewhere the ordered checkpoint would send them
//! before the row is written, so a batch that then failed to commit would have answered for
//! operations it did not apply: the batch commits them first as the record's outbox (the
//! consumed messages stay until step two), then a second checkpoint sends them, clears the
//! outbox and deletes the consumed messages. A crash between the two: the messages come back,
//! are skipped as already applied (their IDs are in the record), and the outbox is sent then.
//!
//! On an atomic backend the record keeps only the last batch's message IDs; otherwise it counts
//! them as `unconfirmed` (their deletes are the checkpoint's last step) and a session that loads
//! the record turns them into `suspect` IDs, skipped for an hour. A request from an
//! orchestration or an entity carries a `SendOrder` (`Message::order`); the receiver orders by
//! sender instance and execution (an entity's: its incarnation's epoch). The requests are
//! external events named `$entity`; the batch's steps are in `batch`, its messages in `send`
//! (IDs derived from the entity and the message each effect came from; a scheduled request that
//! came early goes to the entity again, same ID, with the rest of its delay), and an entity the
//! registry does not name runs in the remote executor (`remote`).

mod batch;
mod remote;
mod send;

pub(crate) use batch::process;

use std::time::Duration;

use taskhub_core::entity::order::sender_key;
use taskhub_core::entity::{
    BatchMessage, Caller, EntityRecord, EntityRequest, OutboxEntry, ENTITY_REQUEST_EVENT,
};
use taskhub_core::{
    EntityId, EventKind, ExecutionId, InstanceId, Message, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_storage::{
    CheckpointRequest, Expect, InstanceRow, NewQueueMessage, OutboundMessage, QueueName,
    StorageError,
};
use tracing::warn;

use crate::hub::TaskHub;
use crate::worker::orchestration::cached::{Cached, Loaded};
use crate::worker::orchestration::{abandon, after_failed_checkpoint, commit, give_back};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::executor_errors::EXECUTOR_RETRY;
use crate::worker::shared::{Returns, Shared};

/// The execution ID every entity row carries (an entity has no executions).
pub(crate) const ENTITY_EXECUTION: &str = "entity";

/// The execution ID of entity rows and messages.
pub(crate) fn entity_execution() -> ExecutionId {
    ExecutionId::new(ENTITY_EXECUTION).unwrap_or_else(|_| ExecutionId::random())
}

/// Reads an entity's state and record from its row.
///
/// # Errors
/// A storage error, or `Corrupt` if the row is not an entity's.
pub(crate) fn from_row(row: Option<InstanceRow>) -> Result<Loaded, StorageError> {
    let Some(row) = row else {
        return Ok(Loaded {
            state: None,
            record: EntityRecord::default(),
            row: None,
        });
    };
    let record = row
        .input
        .parse::<EntityRecord>("entity record")
        .map_err(|e| StorageError::Corrupt {
            what: format!("entity row of '{}'", row.instance_id),
            detail: e.to_string(),
        })?;
    Ok(Loaded {
        state: row.custom_status.clone(),
        record,
        row: Some(row),
    })
}

/// Step two on a backend without atomic checkpoints: send the batch's messages, clear the
/// outbox and delete the consumed messages, conditional on the row step one wrote.
async fn send_outbox(
    shared: &Shared,
    instance: &InstanceId,
    cached: &mut Cached,
    deliveries: &[Delivery],
    outbound: Vec<OutboundMessage>,
    consumed: Vec<(QueueName, taskhub_storage::Receipt)>,
) {
    let Some(loaded) = cached.entity.as_mut() else {
        return;
    };
    let Some(row) = loaded.row.clone() else {
        return;
    };
    let Some(fence) = deliveries
        .first()
        .and_then(|d| shared.placement.fence(d.partition))
    else {
        cached.entity = None;
        give_back(shared.returns(), deliveries, Duration::ZERO).await;
        return;
    };
    let mut record = loaded.record.clone();
    record.outbox.clear();
    let input = match Payload::to_payload(&record, "entity record") {
        Ok(p) => p,
        Err(e) => {
            warn!(%instance, error = %e, "could not encode the entity record");
            cached.entity = None;
            abandon(shared.returns(), deliveries, Duration::from_secs(1)).await;
            return;
        }
    };
    let expect = row.etag.clone().map_or(Expect::Any, Expect::ETag);
    let cleared = InstanceRow {
        input,
        etag: None,
        ..row
    };
    let request = CheckpointRequest {
        instance_id: instance.clone(),
        fence: Some(fence),
        history: None,
        instance: Some((cleared.clone(), expect)),
        outbound: outbound.clone(),
        consumed,
    };
    match commit(&shared.hub, request).await {
        Ok(o) => {
            loaded.record = record;
            loaded.row = Some(InstanceRow {
                etag: o.instance_etag,
                ..cleared
            });
            wake(&shared.hub, &outbound);
        }
        Err(e) => {
            // The batch is committed with its outbox; the consumed messages come back, are
            // skipped as applied, and their batch sends the outbox.
            failed_commit(shared, instance, cached, deliveries, fence, e).await;
        }
    }
}

async fn failed_commit(
    shared: &Shared,
    instance: &InstanceId,
    cached: &mut Cached,
    deliveries: &[Delivery],
    fence: taskhub_storage::LeaseFence,
    e: StorageError,
) {
    cached.entity = None;
    if e.is_conflict() {
        shared.lifecycle.stat(|s| s.checkpoint_conflicts += 1);
    }
    warn!(%instance, error = %e, "entity checkpoint failed; the batch will be redelivered");
    after_failed_checkpoint(shared, deliveries, fence, &e).await;
}

/// Wakes this process's pollers of the queues `outbound` went to.
fn wake(hub: &TaskHub, outbound: &[OutboundMessage]) {
    for o in outbound {
        hub.signals().enqueued_after(o.queue, o.message.delay);
    }
}

/// Scheduled signals the backend delivered early by less than its delay unit (delays are
/// rounded down to whole units): wait out the remainder, as a turn does for timers. Returns
/// the batch's time.
async fn wait_for_due_signals(hub: &TaskHub, messages: &[BatchMessage]) -> Timestamp {
    let clock = hub.clock();
    let unit = hub.store().delay_granularity();
    let now = clock.now();
    let remainder = messages
        .iter()
        .filter_map(|m| match &m.request {
            EntityRequest::Operation { at: Some(at), .. } if *at > now => {
                Some(at.saturating_since(now))
            }
            _ => None,
        })
        .filter(|r| *r <= unit)
        .max();
    match remainder {
        Some(wait) => {
            clock.sleep(wait).await;
            clock.now()
        }
        None => now,
    }
}

/// One operation of a careful remote batch failed alone (`remote::NotRun::Operation`): its
/// message goes back counted (to the dead letters past `max_dequeue_count`), after
/// `EXECUTOR_RETRY`; its batch-mates (other callers, locks, releases) go back uncounted at
/// once, so they run without it and never reach the dead letters for its sake.
async fn blame(
    returns: Returns<'_>,
    instance: &InstanceId,
    deliveries: &[Delivery],
    request_id: &str,
    error: &crate::executor::ExecutorError,
) {
    warn!(%instance, request_id, %error, "an entity operation failed alone in the executor; its message is retried without its batch");
    let (guilty, mates): (Vec<&Delivery>, Vec<&Delivery>) =
        deliveries.iter().partition(|d| {
            matches!(request_of(&d.message), Some(EntityRequest::Operation { id, .. }) if id == request_id)
        });
    for d in guilty {
        abandon(returns, std::slice::from_ref(d), EXECUTOR_RETRY).await;
    }
    for d in mates {
        give_back(returns, std::slice::from_ref(d), Duration::ZERO).await;
    }
}

fn request_of(m: &Message) -> Option<EntityRequest> {
    match &m.event {
        EventKind::EventRaised { name, input } if name == ENTITY_REQUEST_EVENT => {
            input.parse::<EntityRequest>("entity request").ok()
        }
        // A .NET orchestration's entity message in DT Core's shape (`op`, `release`).
        EventKind::EventRaised { name, input } => {
            let sender = m.sender.as_ref().map(|s| Caller {
                instance_id: s.instance_id.clone(),
                execution_id: s.execution_id.clone(),
            });
            taskhub_core::entity::dt_core::request_of_event(name, input, sender.as_ref())
        }
        _ => None,
    }
}

/// The batch's requests, and how many messages were none.
fn decode(deliveries: &[Delivery]) -> (Vec<BatchMessage>, u64) {
    let mut out = Vec::with_capacity(deliveries.len());
    let mut ignored = 0;
    for d in deliveries {
        match request_of(&d.message) {
            Some(request) => out.push(BatchMessage {
                message_id: d.message.id.clone(),
                sender: d.message.sender.as_ref().map(|s| s.instance_id.clone()),
                request,
                order: d
                    .message
                    .order
                    .zip(d.message.sender.as_ref())
                    .map(|(o, s)| (sender_key(&s.instance_id, s.execution_id.as_str()), o)),
            }),
            None => ignored += 1,
        }
    }
    (out, ignored)
}

/// The entity's row after a batch: the state in `custom_status`, the record in `input`.
fn entity_row(
    entity: &EntityId,
    prev: Option<&InstanceRow>,
    state: &Option<Payload>,
    record: &EntityRecord,
    partition: u32,
    now: Timestamp,
) -> Result<InstanceRow, taskhub_core::CoreError> {
    Ok(InstanceRow {
        instance_id: entity.instance_id().clone(),
        name: entity.name().to_owned(),
        version: None,
        execution_id: entity_execution(),
        status: OrchestrationStatus::Running,
        input: Payload::to_payload(record, "entity record")?,
        output: None,
        failure: None,
        custom_status: state.clone(),
        created_at: prev.map_or(now, |p| p.created_at),
        updated_at: now,
        completed_at: None,
        scheduled_start: None,
        partition: prev.map_or(partition, |p| p.partition),
        tags: prev.map(|p| p.tags.clone()).unwrap_or_default(),
        executions: Vec::new(),
        etag: None,
    })
}

fn to_entry(o: &OutboundMessage) -> Option<OutboxEntry> {
    match o.queue {
        QueueName::Control(partition) => Some(OutboxEntry {
            partition,
            body: o.message.body.clone(),
            delay_ms: u64::try_from(o.message.delay.as_millis()).unwrap_or(u64::MAX),
        }),
        QueueName::WorkItems => None,
    }
}

fn from_entry(e: &OutboxEntry) -> OutboundMessage {
    OutboundMessage {
        queue: QueueName::Control(e.partition),
        message: NewQueueMessage {
            body: e.body.clone(),
            delay: Duration::from_millis(e.delay_ms),
        },
        claim: None,
    }
}
