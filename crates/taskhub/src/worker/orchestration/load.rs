//! Loading an instance into a session: its history (re-sending a torn checkpoint's outbox
//! once it is old enough) and its row (repaired first when a torn checkpoint left it behind).

use std::time::Duration;

use taskhub_core::{InstanceId, MessageId, OrchestrationSession};
use taskhub_storage::{
    CheckpointRequest, ETag, HistorySnapshot, HistoryWrite, InstanceRow, LeaseFence,
    OutboundMessage, StorageError,
};
use tracing::{debug, info, warn};

use super::cached::{Cached, Live};
use super::outbox_screen::Seen;
use super::redeliver::{abandon, commit, give_back};
use super::row_repair::{self, RowRepair};
use crate::codec;
use crate::hub::TaskHub;
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::Shared;

/// Loads `instance` into `cached` (its session, its row, the row repaired if it must be) for a
/// turn over `due`. False: it could not be loaded now, and `due` went back to its queue.
pub(super) async fn into_cache(
    shared: &Shared,
    instance: &InstanceId,
    cached: &mut Cached,
    due: &[Delivery],
) -> bool {
    let Some(partition) = due.first().map(|d| d.partition) else {
        return false;
    };
    let Some(fence) = shared.placement.fence(partition) else {
        // The lease ended: never write (a torn checkpoint's re-send) without one.
        give_back(shared.returns(), due, Duration::ZERO).await;
        return false;
    };
    match load(shared, instance, fence, due).await {
        Ok(Loaded::Deferred(wait)) => {
            // A checkpoint's outbox that its writer may still be sending: neither re-send
            // it (a live writer's messages would go twice) nor run a turn (whose commit
            // would replace it). Come back once its writer cannot still be at work.
            debug!(%instance, ?wait, "the history has a fresh pending outbox; retrying later");
            give_back(shared.returns(), due, wait).await;
            return false;
        }
        Ok(Loaded::Ready(loaded)) => {
            let LoadedInstance {
                session,
                history_etag: etag,
                row,
                repair,
            } = *loaded;
            cached.row = row;
            let mut etag = etag;
            if let (RowRepair::FromHistory { last_event }, Some(history_etag)) =
                (repair, etag.as_ref())
            {
                let row = row_repair::repaired_row(
                    cached.row.as_ref(),
                    &session,
                    last_event,
                    partition,
                    shared.hub.clock().now(),
                );
                let guard = row_repair::RepairGuard {
                    fence,
                    history_etag,
                };
                match row_repair::write(&shared.hub, instance, cached, row, &guard).await {
                    Ok(moved) => etag = Some(moved),
                    Err(e) => {
                        // These deliveries are what brings the instance back to a loader.
                        // Consuming them with the row still behind would leave a finished
                        // instance looking Running forever: give them back and repair (or
                        // find the row in step) on their redelivery.
                        cached.row = None;
                        repair_failed(shared, instance, fence, due, &e).await;
                        return false;
                    }
                }
            }
            cached.session = Some(Live::new(session, etag));
        }
        Err(StorageError::Fenced { .. }) => {
            // Re-sending a torn checkpoint's outbox found the lease gone: not the
            // messages' fault (as for a fenced turn, below).
            shared.placement.lease_lost(fence.partition, fence.epoch);
            give_back(shared.returns(), due, Duration::ZERO).await;
            return false;
        }
        Err(e) => {
            warn!(%instance, error = %e, "could not load instance; messages will be retried");
            abandon(shared.returns(), due, Duration::from_secs(1)).await;
            return false;
        }
    }
    true
}

/// Gives `due` back after a row repair failed: uncounted when the lease ended (`Fenced`) or
/// the history moved since it was loaded (`Conflict`: another writer, whose row the repair
/// must not overwrite), counted otherwise.
async fn repair_failed(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
    due: &[Delivery],
    error: &StorageError,
) {
    match error {
        StorageError::Fenced { .. } => {
            shared.placement.lease_lost(fence.partition, fence.epoch);
            give_back(shared.returns(), due, Duration::ZERO).await;
        }
        StorageError::Conflict { .. } => {
            debug!(%instance, "the history moved before its row was repaired; reloading");
            give_back(shared.returns(), due, Duration::from_millis(100)).await;
        }
        e => {
            warn!(%instance, error = %e, "could not repair the instance row; messages will be retried");
            abandon(shared.returns(), due, Duration::from_secs(1)).await;
        }
    }
}

/// An instance as [`load`] found it.
struct LoadedInstance {
    /// The session replayed from history (a fresh one without history).
    session: OrchestrationSession,
    /// The history's ETag (`None`: no history yet).
    history_etag: Option<ETag>,
    /// The instance row read with it.
    row: Option<InstanceRow>,
    /// Whether that row must be rewritten from history first.
    repair: RowRepair,
}

/// What [`load`] found.
enum Loaded {
    /// The instance, ready for a turn.
    Ready(Box<LoadedInstance>),
    /// The history carries a pending outbox this worker has seen for less than the
    /// [`torn_outbox_grace`](crate::Settings::torn_outbox_grace): its writer may still be sending it, or a work item it
    /// claimed may still be hidden. Retry after this long.
    Deferred(Duration),
}

/// Loads history (re-sending a torn checkpoint's outbox, see [`resend_outbox`]) and the
/// instance row.
async fn load(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
    due: &[Delivery],
) -> Result<Loaded, StorageError> {
    let store = shared.hub.store();
    let snapshot = store.load_history(instance).await?;
    let row = store.get_instance(instance).await?;
    Ok(Loaded::Ready(Box::new(match snapshot {
        Some(s) => {
            if !s.pending_outbox.is_empty() {
                // Timed by this worker's own clock from its first sighting of this outbox,
                // never by the writer's wall-clock `pending_since` (see `outbox_watch`).
                let now = shared.hub.clock().monotonic();
                let held = due.iter().map(|d| &d.message.id);
                let watched = shared.watches.outbox.watched(instance, &s.etag, now, held);
                let grace = shared.hub.settings().torn_outbox_grace();
                if watched < grace {
                    return Ok(Loaded::Deferred(grace - watched));
                }
            }
            let torn = TornOutbox {
                instance,
                fence,
                loaded: &s,
                // Only a pending outbox was watched (no lock on the common path).
                held: if s.pending_outbox.is_empty() {
                    Vec::new()
                } else {
                    shared.watches.outbox.noted(instance, &s.etag)
                },
            };
            let etag = resend_outbox(shared, torn).await?;
            shared.watches.outbox.forget(instance, &s.etag);
            let session = OrchestrationSession::load_with(
                shared.registry.clone(),
                instance.clone(),
                &s.events,
                shared.executor.is_some(),
            );
            let mut repair = row_repair::judge(
                &session,
                row.as_ref(),
                &s.events,
                !s.pending_outbox.is_empty(),
            );
            let atomic = shared.hub.store().atomic_checkpoints();
            if super::rewind::row_is_the_request(&session, row.as_ref(), &s.events, due, atomic) {
                repair = RowRepair::NotNeeded;
            }
            LoadedInstance {
                session,
                history_etag: Some(etag),
                row,
                repair,
            }
        }
        None => LoadedInstance {
            session: OrchestrationSession::new_with(
                shared.registry.clone(),
                instance.clone(),
                shared.executor.is_some(),
            ),
            history_etag: None,
            row,
            repair: RowRepair::NotNeeded,
        },
    })))
}

/// A torn checkpoint's pending outbox, as a loader found it.
struct TornOutbox<'a> {
    instance: &'a InstanceId,
    /// The loader's lease: the re-send is fenced by it.
    fence: LeaseFence,
    /// The history with the outbox.
    loaded: &'a HistorySnapshot,
    /// The IDs of the instance's messages the loader held while it watched the outbox (those
    /// it holds now among them).
    held: Vec<MessageId>,
}

/// Re-sends the outbox a torn checkpoint left pending, less what was sent already (see
/// [`outbox_screen`](super::outbox_screen)), and clears it in the same step, so that it is
/// re-sent once and not by every later loader: one checkpoint of no events, fenced by this
/// worker's lease and conditional on the loaded history ETag, that carries the outbox (the
/// driver commits it as pending, sends it, then clears it). Returns the history's ETag
/// afterwards. Receivers de-duplicate the copies by message ID.
async fn resend_outbox(shared: &Shared, torn: TornOutbox<'_>) -> Result<ETag, StorageError> {
    let loaded = torn.loaded;
    if loaded.pending_outbox.is_empty() {
        return Ok(loaded.etag.clone());
    }
    let hub = &shared.hub;
    let (outbound, left_out) = screen(hub, &torn).await;
    let request = CheckpointRequest {
        instance_id: torn.instance.clone(),
        fence: Some(torn.fence),
        history: Some(HistoryWrite {
            execution_id: loaded.execution_id.clone(),
            expected: Some(loaded.etag.clone()),
            new_execution: false,
            events: Vec::new(),
        }),
        instance: None,
        outbound,
        consumed: Vec::new(),
    };
    let resent = request.outbound.len();
    let delays: Vec<_> = request
        .outbound
        .iter()
        .map(|o| (o.queue, o.message.delay))
        .collect();
    let outcome = commit(hub, request).await?;
    info!(
        instance = %torn.instance,
        resent,
        left_out,
        "re-sent the outbox of a torn checkpoint, less the messages seen sent"
    );
    if left_out > 0 {
        shared
            .lifecycle
            .stat(|s| s.outbox_messages_left_out += left_out);
    }
    for (queue, delay) in delays {
        hub.signals().enqueued_after(queue, delay);
    }
    Ok(outcome.history_etag.unwrap_or_else(|| loaded.etag.clone()))
}

/// The messages of `torn`'s outbox to send again (plain: a re-sent outbox claims nothing, a
/// claim belongs to the turn that made it), and how many were left out. A message whose body
/// cannot be read now is sent again.
async fn screen(hub: &TaskHub, torn: &TornOutbox<'_>) -> (Vec<OutboundMessage>, u64) {
    let loaded = torn.loaded;
    let seen = Seen::new(&loaded.events, &torn.held);
    let mut outbound = Vec::new();
    let mut left_out = 0;
    for o in &loaded.pending_outbox {
        let verdict = match codec::decode(hub.store().as_ref(), &o.message.body).await {
            Ok(m) => seen.judge(torn.instance, &loaded.execution_id, o.queue, &m),
            Err(e) => {
                debug!(instance = %torn.instance, error = ?e, "a pending message could not be read; sending it again");
                None
            }
        };
        match verdict {
            Some(why) => {
                debug!(instance = %torn.instance, ?why, "left a message of a torn outbox out");
                left_out += 1;
            }
            None => outbound.push(OutboundMessage::new(o.queue, o.message.clone())),
        }
    }
    (outbound, left_out)
}
