//! Committing a turn: one checkpoint of its history batch, instance row, outbound messages and
//! consumed receipts, fenced by the partition's lease; then the session, the row and the
//! waiters learn the outcome, or the batch goes back.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::InstanceId;
use taskhub_storage::{
    CheckpointRequest, LeaseFence, OutboundMessage, QueueName, Receipt, StorageError,
};
use tracing::warn;

use super::cached::Cached;
use super::plan::{RowWrite, TurnWrites};
use super::redeliver::{abandon, commit, give_back};
use crate::signals::InstanceChanged;
use crate::telemetry;
use crate::worker::activity::claims::Claims;
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::Shared;

/// What [`commit_turn`] commits.
pub(super) struct TurnCheckpoint<'a> {
    /// The instance.
    pub(super) instance: &'a InstanceId,
    /// The partition's lease the turn ran under.
    pub(super) fence: LeaseFence,
    /// The turn's batch (given back if the commit fails).
    pub(super) batch: &'a [Delivery],
    /// The history and row the plan writes.
    pub(super) writes: TurnWrites,
    /// The receipts it deletes.
    pub(super) consumed: Vec<(QueueName, Receipt)>,
    /// The messages it sends.
    pub(super) outbound: Vec<OutboundMessage>,
    /// The turn rewinds its execution (counted once committed).
    pub(super) rewinds: bool,
}

/// Commits a turn's checkpoint (nothing, if it has nothing to write) and applies the outcome
/// to `cached`, whose session ran the turn.
pub(super) async fn commit_turn(shared: &Arc<Shared>, cached: &mut Cached, cp: TurnCheckpoint<'_>) {
    let TurnCheckpoint {
        instance,
        fence,
        batch,
        writes,
        consumed,
        mut outbound,
        rewinds,
    } = cp;
    let TurnWrites { history, row, .. } = writes;
    if history.is_none() && outbound.is_empty() && consumed.is_empty() {
        return;
    }
    // Work items this worker runs itself, in slots reserved now (see `claims`); only the
    // others wake a poller.
    let claims = Claims::reserve(shared, &mut outbound);
    // Handed-over results this checkpoint records (their work items are among the consumed).
    let recorded: Vec<_> = batch
        .iter()
        .filter_map(|d| d.held.as_ref().map(|h| (h, (d.queue, d.receipt.clone()))))
        .filter(|(_, r)| consumed.contains(r))
        .map(|(h, _)| h)
        .collect();
    let queues: Vec<(QueueName, Duration)> = outbound
        .iter()
        .filter(|o| o.claim.is_none())
        .map(|o| (o.queue, o.message.delay))
        .collect();
    let request = CheckpointRequest {
        instance_id: instance.clone(),
        fence: Some(fence),
        history,
        instance: row.clone().map(|w| (w.row, w.expect)),
        outbound,
        consumed,
    };
    let started = shared.hub.clock().monotonic();
    let committed = commit(&shared.hub, request).await;
    telemetry::record::checkpoint(shared.hub.clock().monotonic().saturating_sub(started));
    match committed {
        Ok(outcome) => {
            for h in recorded {
                h.recorded();
            }
            let name = cached.session.as_mut().map(|live| {
                if let Some(e) = outcome.history_etag {
                    live.history_etag = Some(e);
                }
                live.session.name()
            });
            if let Some(RowWrite { row: mut r, .. }) = row {
                r.etag = outcome.instance_etag;
                // Counted before the change is published, so a waiter sees the turn counted.
                shared.lifecycle.stat(|s| s.turns += 1);
                shared.placement.count_turn(fence.partition);
                if let Some(name) = &name {
                    telemetry::record::turn(name);
                    if rewinds {
                        telemetry::record::rewind(name);
                    }
                }
                let changed = cached.row.as_ref().is_none_or(|old| old.status != r.status);
                if changed {
                    shared.hub.signals().instance_changed(InstanceChanged {
                        instance_id: instance.clone(),
                        status: r.status,
                    });
                }
                cached.row = Some(r);
            }
            for (q, delay) in queues {
                shared.hub.signals().enqueued_after(q, delay);
            }
            claims.start(shared, outcome.claimed).await;
        }
        Err(e) => {
            if e.is_conflict() {
                shared.lifecycle.stat(|s| s.checkpoint_conflicts += 1);
            }
            warn!(%instance, error = %e, "checkpoint failed; the batch will be redelivered");
            cached.session = None;
            cached.row = None;
            if let StorageError::Fenced { .. } = e {
                // The lease is gone: not the messages' fault. They go back uncounted, and
                // this worker stops processing the partition under the old epoch at once
                // (else it would redeliver them to itself, fenced each time, until its lease
                // manager noticed, and dead-letter live messages).
                shared.placement.lease_lost(fence.partition, fence.epoch);
                give_back(shared, batch, Duration::ZERO).await;
                return;
            }
            let delay = if e.is_conflict() {
                Duration::ZERO
            } else {
                Duration::from_secs(1)
            };
            abandon(shared, batch, delay).await;
        }
    }
}
