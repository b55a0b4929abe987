//! One entity batch, step by step: admit it and find its entity and lease ([`process`]),
//! load the entity ([`load`]), run its operations here or in the remote executor ([`run`]),
//! then write what they did: the record's bookkeeping ([`note`]), the messages they send
//! ([`outbound`]) and the checkpoint ([`commit_batch`]).

use std::time::Duration;

use taskhub_core::entity::{run_batch, BatchMessage, BatchOutcome, EntityRecord, EntityRequest};
use taskhub_core::{EntityId, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, Expect, InstanceRow, LeaseFence, OutboundMessage, QueueName, Receipt,
};
use tracing::{debug, warn};

use super::{
    blame, decode, entity_row, failed_commit, from_entry, from_row, remote, send, send_outbox,
    to_entry, wait_for_due_signals, wake,
};
use crate::worker::orchestration::cached::{Cached, Loaded};
use crate::worker::orchestration::{
    abandon, admit, commit, give_back, redeliver_undecided, Admitted,
};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::Shared;

/// An admitted batch of one entity, under its partition's lease.
struct Batch<'a> {
    shared: &'a Shared,
    instance: &'a InstanceId,
    entity: EntityId,
    partition: u32,
    fence: LeaseFence,
    deliveries: Vec<Delivery>,
}

/// What the batch's operations did to a copy of the loaded entity.
struct Ran {
    state: Option<Payload>,
    record: EntityRecord,
    /// The outbox the loaded record still had (a crash between the two steps).
    pending: Vec<OutboundMessage>,
    outcome: BatchOutcome,
    /// The batch's time.
    now: Timestamp,
}

/// Processes one batch for the entity `instance`.
pub(crate) async fn process(
    shared: &Shared,
    instance: &InstanceId,
    cached: &mut Cached,
    deliveries: Vec<Delivery>,
) {
    let Some(Admitted {
        slot: _slot,
        deliveries,
    }) = admit(shared, cached, deliveries).await
    else {
        return;
    };
    let entity = match EntityId::from_instance_id(instance) {
        Ok(e) => e,
        Err(e) => {
            for d in &deliveries {
                crate::worker::lifecycle::poison::dead_letter(
                    &shared.hub,
                    &shared.lifecycle,
                    d.queue,
                    &d.raw,
                    e.to_string(),
                )
                .await;
            }
            return;
        }
    };
    let Some(partition) = deliveries.first().map(|d| d.partition) else {
        return;
    };
    let Some(fence) = shared.placement.fence(partition) else {
        give_back(shared.returns(), &deliveries, Duration::ZERO).await;
        return;
    };
    let mut batch = Batch {
        shared,
        instance,
        entity,
        partition,
        fence,
        deliveries,
    };
    let Some(loaded) = load(&batch, cached).await else {
        return;
    };
    let Some(ran) = run(&mut batch, &loaded).await else {
        return;
    };
    commit_batch(&batch, cached, &loaded, ran).await;
}

/// The entity as this session has it, loaded from its row first if it has not. `None`: it
/// could not be loaded (the batch went back).
async fn load(batch: &Batch<'_>, cached: &mut Cached) -> Option<Loaded> {
    let shared = batch.shared;
    if cached.entity.is_none() {
        let loaded = shared
            .hub
            .store()
            .get_instance(batch.instance)
            .await
            .and_then(from_row);
        match loaded {
            Ok(mut l) => {
                // This session did not see the last batch's deletes finish.
                l.record.after_load(shared.hub.clock().now());
                cached.entity = Some(l);
            }
            Err(e) => {
                let instance = batch.instance;
                warn!(%instance, error = %e, "could not load entity; messages will be retried");
                abandon(shared.returns(), &batch.deliveries, Duration::from_secs(1)).await;
                return None;
            }
        }
    }
    cached.entity.clone()
}

/// Runs the batch's operations on a copy of `loaded`. `None`: a remote batch was not run
/// (its messages went back).
async fn run(batch: &mut Batch<'_>, loaded: &Loaded) -> Option<Ran> {
    let shared = batch.shared;
    let (messages, ignored) = decode(&batch.deliveries);
    let now = wait_for_due_signals(&shared.hub, &messages).await;
    if ignored > 0 {
        let instance = batch.instance;
        debug!(%instance, ignored, "messages for an entity that are no entity requests");
        shared.lifecycle.stat(|s| s.discarded += ignored);
    }
    let mut state = loaded.state.clone();
    let mut record = loaded.record.clone();
    let pending = std::mem::take(&mut record.outbox);
    let outcome = if remote::is_remote(shared, &batch.entity) {
        run_remote(batch, now, &mut state, &mut record, messages).await?
    } else {
        run_batch(
            &shared.registry,
            &batch.entity,
            now,
            &mut state,
            &mut record,
            messages,
        )
    };
    Some(Ran {
        state,
        record,
        pending: pending.iter().map(from_entry).collect(),
        outcome,
        now,
    })
}

/// Runs the batch's operations in the remote executor. `None`: not run (see
/// `remote::NotRun`; the messages went back).
async fn run_remote(
    batch: &mut Batch<'_>,
    now: Timestamp,
    state: &mut Option<Payload>,
    record: &mut EntityRecord,
    messages: Vec<BatchMessage>,
) -> Option<BatchOutcome> {
    let shared = batch.shared;
    // The wait for the executor holds no buffer slot (see `orchestration/remote.rs`).
    for d in &mut batch.deliveries {
        d._slot.free();
    }
    let deliveries = &batch.deliveries;
    let max = shared.hub.settings().max_dequeue_count;
    let remote_batch = remote::RemoteBatch {
        entity: &batch.entity,
        now,
        fence: batch.fence,
        state,
        record,
        careful: deliveries.iter().any(|d| d.raw.dequeue_count > 1),
        delivered: messages
            .iter()
            .filter_map(|m| match &m.request {
                EntityRequest::Operation { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect(),
        last_chance: deliveries.iter().any(|d| d.raw.dequeue_count >= max),
    };
    match remote::run(shared, remote_batch, messages).await {
        Ok(outcome) => Some(outcome),
        Err(remote::NotRun::Batch(why)) => {
            redeliver_undecided(shared.returns(), batch.instance, deliveries, why).await;
            None
        }
        Err(remote::NotRun::Operation { request_id, error }) => {
            blame(
                shared.returns(),
                batch.instance,
                deliveries,
                &request_id,
                &error,
            )
            .await;
            None
        }
    }
}

/// The record's bookkeeping after a run: which message IDs it keeps, and what is logged and
/// counted.
fn note(batch: &Batch<'_>, ran: &mut Ran, atomic: bool) {
    let (shared, instance, outcome) = (batch.shared, batch.instance, &ran.outcome);
    if atomic {
        // One transaction commits the batch and deletes its messages: a message comes back
        // after its batch committed only if its receipt went stale during the batch (then
        // into the next batch), so the last batch's IDs are enough and the row stays small.
        ran.record.forget_all_but(outcome.applied);
    } else {
        // The deletes are the checkpoint's last step: until this session sees them done,
        // this batch's messages may come back (see `EntityRecord::suspect`).
        ran.record.unconfirmed = outcome.applied;
    }
    if outcome.failed > 0
        && !shared.registry.has_entity(batch.entity.name())
        && shared.executor.as_ref().is_none_or(|e| !e.runs_entities())
    {
        warn!(%instance, operations = outcome.failed, "entity is not registered on this worker: its operations fail");
    }
    if outcome.duplicates > 0 {
        shared.lifecycle.stat(|s| s.discarded += outcome.duplicates);
    }
}

/// The messages the batch sends: the loaded record's pending outbox, then its operations'
/// effects. `None`: one could not be prepared (the batch went back).
async fn outbound(
    batch: &Batch<'_>,
    cached: &mut Cached,
    ran: &mut Ran,
    home: u32,
) -> Option<Vec<OutboundMessage>> {
    let shared = batch.shared;
    let mut outbound = std::mem::take(&mut ran.pending);
    let from = send::From {
        entity: &batch.entity,
        home,
        now: ran.now,
        epoch: ran.record.outgoing.epoch.as_deref(),
    };
    for effect in &ran.outcome.effects {
        match send::outbound(&shared.hub, &from, effect).await {
            Ok(o) => outbound.push(o),
            Err(e) => {
                let instance = batch.instance;
                warn!(%instance, error = %e, "could not prepare an entity's messages; the batch will be retried");
                cached.entity = None;
                abandon(shared.returns(), &batch.deliveries, Duration::from_secs(1)).await;
                return None;
            }
        }
    }
    Some(outbound)
}

/// Commits the batch: its row (state and record) and, on a backend with atomic checkpoints
/// or when it sends nothing, its messages and consumed receipts in the same checkpoint; else
/// the messages go in the record's outbox, sent by a second checkpoint (`send_outbox`).
async fn commit_batch(batch: &Batch<'_>, cached: &mut Cached, loaded: &Loaded, mut ran: Ran) {
    let (shared, instance) = (batch.shared, batch.instance);
    let atomic = shared.hub.store().atomic_checkpoints();
    note(batch, &mut ran, atomic);
    let home = shared.home(instance, batch.partition);
    let Some(outbound) = outbound(batch, cached, &mut ran, home).await else {
        return;
    };
    let consumed: Vec<(QueueName, Receipt)> = batch
        .deliveries
        .iter()
        .map(|d| (d.queue, d.receipt.clone()))
        .collect();
    let two_steps = !atomic && !outbound.is_empty();
    if two_steps {
        ran.record.outbox = outbound.iter().filter_map(to_entry).collect();
    }
    let row = match entity_row(
        &batch.entity,
        loaded.row.as_ref(),
        &ran.state,
        &ran.record,
        home,
        ran.now,
    ) {
        Ok(r) => r,
        Err(e) => {
            warn!(%instance, error = %e, "could not encode the entity record; the batch will be retried");
            cached.entity = None;
            abandon(shared.returns(), &batch.deliveries, Duration::from_secs(1)).await;
            return;
        }
    };
    let expect = loaded
        .row
        .as_ref()
        .and_then(|r| r.etag.clone())
        .map_or(Expect::Absent, Expect::ETag);
    let (sent, deleted) = if two_steps {
        (Vec::new(), Vec::new())
    } else {
        (outbound.clone(), consumed.clone())
    };
    let first = CheckpointRequest {
        instance_id: instance.clone(),
        fence: Some(batch.fence),
        history: None,
        instance: Some((row.clone(), expect)),
        outbound: sent,
        consumed: deleted,
    };
    let etag = match commit(&shared.hub, first).await {
        Ok(o) => o.instance_etag,
        Err(e) => {
            failed_commit(shared, instance, cached, &batch.deliveries, batch.fence, e).await;
            return;
        }
    };
    committed(batch, cached, ran, InstanceRow { etag, ..row });
    if !two_steps {
        wake(&shared.hub, &outbound);
        return;
    }
    let deliveries = &batch.deliveries;
    send_outbox(shared, instance, cached, deliveries, outbound, consumed).await;
}

/// Step one committed: the batch is counted and the session keeps the entity as written.
fn committed(batch: &Batch<'_>, cached: &mut Cached, ran: Ran, row: InstanceRow) {
    let shared = batch.shared;
    shared.lifecycle.stat(|s| {
        s.entity_batches += 1;
        s.entity_operations += ran.outcome.operations;
    });
    shared.placement.count_turn(batch.fence.partition);
    cached.entity = Some(Loaded {
        state: ran.state,
        record: ran.record,
        row: Some(row),
    });
}
