//! Committing a turn: one checkpoint of its history batch, instance row, outbound messages and
//! consumed receipts, fenced by the partition's lease; then the session, the row and the
//! waiters learn the outcome, or the batch goes back.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::InstanceId;
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, Dequeued, LeaseFence, OutboundMessage, QueueName,
    Receipt, StorageError,
};
use tracing::warn;

use super::cached::Cached;
use super::plan::{RowWrite, TurnWrites};
use super::redeliver::{after_failed_checkpoint, commit};
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
            let committed = Committed {
                instance,
                partition: fence.partition,
                rewinds,
                row,
            };
            let claimed = apply(shared, cached, committed, outcome);
            for (q, delay) in queues {
                shared.hub.signals().enqueued_after(q, delay);
            }
            claims.start(shared, claimed).await;
        }
        Err(e) => failed(shared, cached, instance, fence, batch, e).await,
    }
}

/// A committed turn's checkpoint, as the session and the waiters learn it.
struct Committed<'a> {
    instance: &'a InstanceId,
    partition: u32,
    /// The turn rewound its execution.
    rewinds: bool,
    /// The row the checkpoint wrote, if it wrote one.
    row: Option<RowWrite>,
}

/// Applies a committed checkpoint to `cached` (the history's and the row's new ETags),
/// counts the turn and tells this process's waiters a changed status. Returns the work items
/// the checkpoint sent claimed for this worker.
fn apply(
    shared: &Shared,
    cached: &mut Cached,
    committed: Committed<'_>,
    outcome: CheckpointOutcome,
) -> Vec<Dequeued> {
    let name = cached.session.as_mut().map(|live| {
        if let Some(e) = outcome.history_etag {
            live.history_etag = Some(e);
        }
        live.session.name()
    });
    if let Some(RowWrite { row: mut r, .. }) = committed.row {
        r.etag = outcome.instance_etag;
        // Counted before the change is published, so a waiter sees the turn counted.
        shared.lifecycle.stat(|s| s.turns += 1);
        shared.placement.count_turn(committed.partition);
        if let Some(name) = &name {
            telemetry::record::turn(name);
            if committed.rewinds {
                telemetry::record::rewind(name);
            }
        }
        let changed = cached.row.as_ref().is_none_or(|old| old.status != r.status);
        if changed {
            shared.hub.signals().instance_changed(InstanceChanged {
                instance_id: committed.instance.clone(),
                status: r.status,
            });
        }
        cached.row = Some(r);
    }
    outcome.claimed
}

/// A checkpoint that failed: the session and row are dropped, and the batch goes back (at
/// once and uncounted when the lease is gone).
async fn failed(
    shared: &Shared,
    cached: &mut Cached,
    instance: &InstanceId,
    fence: LeaseFence,
    batch: &[Delivery],
    e: StorageError,
) {
    if e.is_conflict() {
        shared.lifecycle.stat(|s| s.checkpoint_conflicts += 1);
    }
    warn!(%instance, error = %e, "checkpoint failed; the batch will be redelivered");
    cached.session = None;
    cached.row = None;
    after_failed_checkpoint(shared, batch, fence, &e).await;
}
