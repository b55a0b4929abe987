//! The orchestration stage: one batch of an instance's messages becomes a turn. Load (or
//! reuse) the session, judge its start and version, run the turn (in Rust, or decided by a
//! remote executor), and commit one checkpoint (history + instance row + outbound messages +
//! consumed receipts); or send the batch where it can still be applied.
//!
//! Its steps, each in its own file: `admit` (a processing slot, the deliveries of the
//! partition's current lease, timers that came before their time), `load` (history and row
//! into the session; a torn checkpoint's outbox re-sent once this worker has seen it pending
//! for `torn_outbox_grace`, `outbox_screen` leaving out what was seen sent; a row left behind
//! repaired, `row_repair`), `start_accept` (which starts begin a new execution), `version_gate`
//! and `versioning` (the worker's version check), `rewind`, `plan` (pure: what the checkpoint
//! writes), `outbox` (actions → messages with derived IDs), `checkpoint`, `discards`,
//! `redeliver` (what becomes of messages no turn consumed), `remote` and `remote_watch` (a turn
//! decided by a remote executor), `refused` (a sub-orchestration start the child refused),
//! `carry` (events carried across continue-as-new), `trace`, and `cached` (what a session
//! keeps between batches, an entity's too). The entity stage reuses `admit`, `redeliver` and
//! `remote`; this stage hands claimed work items to the activity stage.

mod admit;
pub(crate) mod cached;
pub(crate) mod carry;
mod checkpoint;
mod discards;
#[cfg(test)]
mod fixtures;
mod load;
mod outbox;
pub(crate) mod outbox_screen;
pub(crate) mod plan;
mod redeliver;
mod refused;
mod remote;
pub(crate) mod remote_watch;
mod rewind;
pub(crate) mod row_repair;
mod start_accept;
mod trace;
mod version_gate;
pub(crate) mod versioning;

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{
    EventKind, InstanceId, Message, OrchestrationSession, OrchestrationStatus, TurnInput, TurnStep,
};
use tracing::{info, warn, Instrument as _};

use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::Shared;
pub(crate) use admit::{admit, hold_back, next_due, take_due, Admitted};
pub(crate) use cached::{Cached, Live};
use outbox::Origin;
use redeliver::consume;
pub(crate) use redeliver::{abandon, commit, give_back};
pub(crate) use remote::{decision_deadline, redeliver as redeliver_undecided, Undecided};
pub(crate) use rewind::Rewinding;
use start_accept::{early_start, judge_start, start_execution, Verdict};
use version_gate::Gate;

/// Processes one batch for `instance`. With `may_hold`, a batch without a start for an
/// instance that just continued as new is not run: it is returned, for the session to hand
/// back with the next batch (see [`carry::START_WAIT`]), so that it is applied in arrival
/// order after the next execution's start instead of being re-sent behind later events.
pub(crate) async fn process(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    deliveries: Vec<Delivery>,
    may_hold: bool,
) -> Vec<Delivery> {
    let Some(admit::Admitted {
        slot: _slot,
        deliveries,
    }) = admit::admit(shared, cached, deliveries).await
    else {
        return Vec::new();
    };
    let due = admit::due_now(&shared.hub, deliveries).await;
    if due.is_empty() {
        return Vec::new();
    }
    if cached.session.is_none() && !load::into_cache(shared, instance, cached, &due).await {
        return Vec::new();
    }
    if !rewind::prepare(shared, instance, cached, &due).await {
        return Vec::new();
    }
    let status = cached.session.as_ref().map(|l| l.session.status());
    let open = status.is_some_and(|s| s.is_active() && s != OrchestrationStatus::Pending);
    let (starts, others): (Vec<Delivery>, Vec<Delivery>) = due
        .into_iter()
        .partition(|d| matches!(d.message.event, EventKind::ExecutionStarted { .. }));
    if may_hold && starts.is_empty() && status == Some(OrchestrationStatus::ContinuedAsNew) {
        return others;
    }
    if open {
        let current = cached.session.as_ref().map(|l| l.session.execution_id());
        let (same, new): (Vec<Delivery>, Vec<Delivery>) = starts
            .into_iter()
            .partition(|d| start_execution(&d.message) == current);
        let mut batch = others;
        batch.extend(same);
        run(shared, instance, cached, batch, false, Vec::new()).await;
        if !new.is_empty() {
            start_new_execution(shared, instance, cached, new, Vec::new()).await;
        }
    } else {
        start_new_execution(shared, instance, cached, starts, others).await;
    }
    Vec::new()
}

/// The session is not running: accept the starts the instance row allows, drop the others,
/// and run a fresh execution (or let the engine discard `others` if there is no valid start).
async fn start_new_execution(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    starts: Vec<Delivery>,
    others: Vec<Delivery>,
) {
    if starts.is_empty() {
        run(shared, instance, cached, others, false, Vec::new()).await;
        return;
    }
    // No session means it has to be loaded again (a turn just failed): let the messages come
    // back rather than judge them without it.
    let Some(loaded) = cached.session.as_ref().map(Live::loaded_execution) else {
        abandon(shared, &starts, Duration::from_secs(1)).await;
        abandon(shared, &others, Duration::from_secs(1)).await;
        return;
    };
    let row = match shared.hub.store().get_instance(instance).await {
        Ok(r) => r,
        Err(e) => {
            warn!(%instance, error = %e, "could not read instance row");
            abandon(shared, &starts, Duration::from_secs(1)).await;
            abandon(shared, &others, Duration::from_secs(1)).await;
            return;
        }
    };
    let (mut accepted, mut rejected, mut deferred) = (Vec::new(), Vec::new(), Vec::new());
    let (now, max_delay) = (shared.hub.clock().now(), shared.hub.store().max_delay());
    let mut early = Vec::new();
    for d in starts {
        let verdict = judge_start(row.as_ref(), loaded.as_ref(), &d.message);
        if verdict == Verdict::Accept {
            if let Some(delay) = early_start(&d.message, now, max_delay) {
                early.push((d, delay));
                continue;
            }
        }
        match verdict {
            Verdict::Accept => accepted.push(d),
            Verdict::Refuse => rejected.push(d),
            Verdict::Defer => deferred.push(d),
        }
    }
    if !early.is_empty() {
        redeliver::send_round_again(shared, instance, early).await;
    }
    // A client's start whose Pending row has not landed waits for it, with the rest of the
    // batch when nothing else starts (those messages may be for the execution it begins).
    let mut others = others;
    for d in deferred {
        let rest = if accepted.is_empty() {
            std::mem::take(&mut others)
        } else {
            Vec::new()
        };
        if !redeliver::defer_start(shared, &d, &rest).await {
            others.extend(rest);
            rejected.push(d);
        }
    }
    if !rejected.is_empty() {
        info!(%instance, count = rejected.len(), "discarding superseded or racing start messages");
        // A parent whose start was refused (not a duplicate of the loaded execution) is told.
        let mut notices = Vec::new();
        for d in &rejected {
            if start_execution(&d.message) == loaded {
                continue;
            }
            match refused::notice(&shared.hub, instance, row.as_ref(), &d.message).await {
                Ok(Some(n)) => notices.push(n),
                Ok(None) => {}
                Err(e) => {
                    warn!(%instance, error = %e, "could not tell a parent its start was refused; will retry");
                    abandon(shared, &rejected, Duration::from_secs(1)).await;
                    abandon(shared, &others, Duration::from_secs(1)).await;
                    return;
                }
            }
        }
        if !notices.is_empty() {
            warn!(%instance, parents = notices.len(), "sub-orchestration start refused: the instance is in use");
        }
        shared
            .lifecycle
            .stat(|s| s.discarded += rejected.len() as u64);
        consume(&shared.hub, instance, &rejected, notices).await;
    }
    // What the execution this one continues carried, applied right after its start.
    let carried = match (cached.session.as_ref(), accepted.first()) {
        (Some(previous), Some(start)) => {
            carry::carried_messages(instance, &previous.session, &start.message)
        }
        _ => Vec::new(),
    };
    let mut batch = accepted;
    let fresh = !batch.is_empty();
    batch.extend(others);
    if fresh {
        let etag = cached.session.take().and_then(|l| l.history_etag);
        cached.session = Some(Live::new(
            OrchestrationSession::new_with(
                shared.registry.clone(),
                instance.clone(),
                shared.executor.is_some(),
            ),
            etag,
        ));
    }
    // The row just read is the one to judge the rest of the batch by (a client may have
    // ended the instance before its start since the session was cached).
    cached.row = row;
    run(shared, instance, cached, batch, fresh, carried).await;
}

/// Runs one turn over `batch` (and the events `carried` into the execution it starts, see
/// [`carry`]) and commits it, in the turn's span.
async fn run(
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
    match &trace {
        Some(t) => {
            run_traced(
                shared,
                instance,
                cached,
                batch,
                new_execution,
                trace.as_ref(),
                carried,
            )
            .instrument(t.span.clone())
            .await;
        }
        // No session (nothing to trace): the turn gives the batch back or does nothing.
        None => {
            run_traced(
                shared,
                instance,
                cached,
                batch,
                new_execution,
                None,
                carried,
            )
            .await
        }
    }
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
        give_back(shared, &batch, Duration::ZERO).await;
        return;
    };
    // On a partition being removed, the row and replies already name the instance's new home.
    let partition = shared.home(instance, partition);
    let Some(Live {
        session,
        history_etag,
        rewinding,
    }) = cached.session.as_mut()
    else {
        give_back(shared, &batch, Duration::ZERO).await;
        return;
    };
    if version_gate::check_version(shared.hub.settings(), session, &batch, new_execution)
        == Gate::Reject
    {
        // Another worker's version: the messages go back, uncounted, for it.
        cached.session = None;
        give_back(shared, &batch, versioning::REJECT_DELAY).await;
        return;
    }
    let mut batch = batch;
    let now = shared.hub.clock().now();
    let result = match session.start_turn(TurnInput {
        now,
        messages: carry::with_carried(batch.iter().map(|d| d.message.clone()).collect(), carried),
    }) {
        TurnStep::Done(result) => result,
        // Remote code decides (see `remote`): the session is dropped if no answer comes.
        TurnStep::Decide(pending) => {
            match remote::decide(shared, instance, fence, session, pending, &mut batch).await {
                Ok(result) => result,
                Err(why) => {
                    cached.session = None;
                    remote::redeliver(shared, instance, &batch, why).await;
                    return;
                }
            }
        }
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
    let discards::Routed {
        consumed,
        mut outbound,
    } = discards::route(
        shared,
        discards::RouteRequest {
            instance,
            batch: &batch,
            result: &result,
            row: cached.row.as_ref(),
            now,
        },
    )
    .await;
    let mut writes = plan::plan(&plan::PlanInput {
        session,
        result: &result,
        known_row: cached.row.as_ref(),
        history_etag: history_etag.as_ref(),
        new_execution,
        partition,
        now,
    });
    // Loaded rewound: this checkpoint replaces the history (once: a failed commit reloads).
    let rewinding = rewinding.take();
    if let Some(r) = &rewinding {
        rewind::replace_history(&mut writes, r);
    }
    if writes.send_actions {
        let execution = session.execution_id();
        let name = session.name();
        let origin = Origin {
            instance,
            execution: &execution,
            partition,
            episode: session.episode(),
            now,
            name: &name,
            traceparent: trace.map(|t| t.traceparent.as_str()),
            rewinds: session.rewinds(),
        };
        let built = match &rewinding {
            Some(r) => match outbox::build(shared, &origin, &result.actions).await {
                Ok(mut o) => rewind::children(shared, &origin, r).await.map(|mut c| {
                    o.append(&mut c);
                    o
                }),
                Err(e) => Err(e),
            },
            None => outbox::build(shared, &origin, &result.actions).await,
        };
        match built {
            Ok(mut o) => outbound.append(&mut o),
            Err(e) => {
                warn!(%instance, error = %e, "could not prepare outbound messages; turn will be retried");
                cached.session = None;
                abandon(shared, &batch, Duration::from_secs(1)).await;
                return;
            }
        }
    }
    checkpoint::commit_turn(
        shared,
        cached,
        checkpoint::TurnCheckpoint {
            instance,
            fence,
            batch: &batch,
            writes,
            consumed,
            outbound,
            rewinds: rewinding.is_some(),
        },
    )
    .await;
}
