//! One turn over a batch, in the turn's span: gate it on the worker's version, have the
//! session decide it (in Rust, or by the remote executor), route its messages and plan its
//! writes, build what it sends, and commit its checkpoint.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{InstanceId, Message, TurnInput, TurnResult, TurnStep};
use taskhub_storage::{LeaseFence, OutboundMessage, StorageError};
use tracing::{warn, Instrument as _};

use super::cached::{Cached, Live, Rewinding};
use super::outbox::{self, Origin};
use super::rewind;
use super::version_gate::{self, Gate};
use super::{abandon, carry, checkpoint, discards, give_back, plan, remote, trace, versioning};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::Shared;

/// Runs one turn over `batch` (and the events `carried` into the execution it starts, see
/// [`carry`]) and commits it, in the turn's span.
pub(super) async fn run(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    batch: Vec<Delivery>,
    new_execution: bool,
    carried: Vec<Message>,
) {
    let Some(partition) = batch.first().map(|d| d.partition) else {
        return;
    };
    let messages: Vec<&Message> = batch.iter().map(|d| &d.message).collect();
    let trace = cached.session.as_ref().map(|Live { session, .. }| {
        trace::TurnTrace::new(trace::TurnTraceRequest {
            session,
            instance,
            messages: &messages,
            partition,
            epoch: shared.placement.fence(partition).map(|f| f.epoch),
        })
    });
    drop(messages);
    let turn = run_traced(
        shared,
        instance,
        cached,
        batch,
        new_execution,
        trace.as_ref(),
        carried,
    );
    match &trace {
        Some(t) => turn.instrument(t.span.clone()).await,
        // No session (nothing to trace): the turn gives the batch back or does nothing.
        None => turn.await,
    }
}

/// A decided turn: where and when it ran, its batch and its result.
struct Turn<'a> {
    instance: &'a InstanceId,
    /// The instance's home partition (its new one, on a partition being removed).
    partition: u32,
    fence: LeaseFence,
    now: taskhub_core::Timestamp,
    new_execution: bool,
    trace: Option<&'a trace::TurnTrace>,
    batch: &'a [Delivery],
    result: &'a TurnResult,
}

/// Runs one turn over `batch` and commits it.
async fn run_traced(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    batch: Vec<Delivery>,
    new_execution: bool,
    trace: Option<&trace::TurnTrace>,
    carried: Vec<Message>,
) {
    let Some(partition) = batch.first().map(|d| d.partition) else {
        return;
    };
    let Some(fence) = shared.placement.fence(partition) else {
        // The lease ended: never commit without one.
        cached.session = None;
        give_back(shared.returns(), &batch, Duration::ZERO).await;
        return;
    };
    // On a partition being removed, the row and replies already name the instance's new home.
    let partition = shared.home(instance, partition);
    let Some(live) = cached.session.as_mut() else {
        give_back(shared.returns(), &batch, Duration::ZERO).await;
        return;
    };
    let settings = shared.hub.settings();
    if version_gate::check_version(settings, &mut live.session, &batch, new_execution)
        == Gate::Reject
    {
        // Another worker's version: the messages go back, uncounted, for it.
        cached.session = None;
        give_back(shared.returns(), &batch, versioning::REJECT_DELAY).await;
        return;
    }
    let mut batch = batch;
    let now = shared.hub.clock().now();
    let decided = decide(shared, instance, fence, cached, &mut batch, carried, now).await;
    let Some(result) = decided else {
        return;
    };
    // Handed-over results: their work items stop being renewed now (a renewal would replace
    // the receipt), and the checkpoint deletes them with their current receipts.
    for d in &mut batch {
        if let Some(held) = &d.held {
            d.receipt = held.take().await;
        }
    }
    trace::emit_logs(instance, &result);
    if let Some(t) = trace {
        t.timers_fired(&batch, &result);
    }
    let turn = Turn {
        instance,
        partition,
        fence,
        now,
        new_execution,
        trace,
        batch: &batch,
        result: &result,
    };
    if let Some(cp) = prepare(shared, cached, &turn).await {
        checkpoint::commit_turn(shared, cached, cp).await;
    }
}

/// The turn's result: decided by the session, or by the remote executor when the session
/// asks. `None`: no answer came (the session is dropped and the batch redelivered).
async fn decide(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
    cached: &mut Cached,
    batch: &mut [Delivery],
    carried: Vec<Message>,
    now: taskhub_core::Timestamp,
) -> Option<TurnResult> {
    let live = cached.session.as_mut()?;
    let messages = carry::with_carried(batch.iter().map(|d| d.message.clone()).collect(), carried);
    match live.session.start_turn(TurnInput { now, messages }) {
        TurnStep::Done(result) => Some(result),
        // Remote code decides (see `remote`): the session is dropped if no answer comes.
        TurnStep::Decide(pending) => {
            let session = &mut live.session;
            match remote::decide(shared, instance, fence, session, pending, batch).await {
                Ok(result) => Some(result),
                Err(why) => {
                    cached.session = None;
                    remote::redeliver(shared.returns(), instance, batch, why).await;
                    None
                }
            }
        }
    }
}

/// What the turn's checkpoint writes: its messages routed (consumed, or sent where they can
/// still be applied), its history and row planned, and the messages its actions send.
/// `None`: these could not be built (the session is dropped and the batch goes back).
async fn prepare<'a>(
    shared: &Shared,
    cached: &mut Cached,
    turn: &Turn<'a>,
) -> Option<checkpoint::TurnCheckpoint<'a>> {
    let Live {
        session,
        history_etag,
        rewinding,
    } = cached.session.as_mut()?;
    let discards::Routed {
        consumed,
        mut outbound,
    } = discards::route(
        shared,
        discards::RouteRequest {
            instance: turn.instance,
            batch: turn.batch,
            result: turn.result,
            row: cached.row.as_ref(),
            now: turn.now,
        },
    )
    .await;
    let mut writes = plan::plan(&plan::PlanInput {
        session,
        result: turn.result,
        known_row: cached.row.as_ref(),
        history_etag: history_etag.as_ref(),
        new_execution: turn.new_execution,
        partition: turn.partition,
        now: turn.now,
    });
    // Loaded rewound: this checkpoint replaces the history (once: a failed commit reloads).
    let rewinding = rewinding.take();
    if let Some(r) = &rewinding {
        rewind::replace_history(&mut writes, r);
    }
    if writes.send_actions {
        match build_outbound(shared, session, turn, rewinding.as_ref()).await {
            Ok(mut o) => outbound.append(&mut o),
            Err(e) => {
                let instance = turn.instance;
                warn!(%instance, error = %e, "could not prepare outbound messages; turn will be retried");
                cached.session = None;
                abandon(shared.returns(), turn.batch, Duration::from_secs(1)).await;
                return None;
            }
        }
    }
    Some(checkpoint::TurnCheckpoint {
        instance: turn.instance,
        fence: turn.fence,
        batch: turn.batch,
        writes,
        consumed,
        outbound,
        rewinds: rewinding.is_some(),
    })
}

/// The messages the turn's actions send, and for a rewound execution the children it sets
/// going again.
async fn build_outbound(
    shared: &Shared,
    session: &mut taskhub_core::OrchestrationSession,
    turn: &Turn<'_>,
    rewinding: Option<&Rewinding>,
) -> Result<Vec<OutboundMessage>, StorageError> {
    let execution = session.execution_id();
    let name = session.name();
    let origin = Origin {
        instance: turn.instance,
        execution: &execution,
        partition: turn.partition,
        episode: session.episode(),
        now: turn.now,
        name: &name,
        traceparent: turn.trace.map(|t| t.traceparent.as_str()),
        rewinds: session.rewinds(),
    };
    let mut out = outbox::build(shared, &origin, &turn.result.actions).await?;
    if let Some(r) = rewinding {
        out.append(&mut rewind::children(shared, &origin, r).await?);
    }
    Ok(out)
}
