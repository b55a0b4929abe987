//! The orchestration stage: one batch of an instance's messages becomes a turn. Load (or
//! reuse) the session, judge its start and version, run the turn (in Rust, or decided by a
//! remote executor), and commit one checkpoint (history + instance row + outbound messages +
//! consumed receipts); or send the batch where it can still be applied.
//!
//! Its steps, each in its own file: `admit` (a processing slot, the deliveries of the
//! partition's current lease, timers that came before their time), `load` (history and row
//! into the session; a torn checkpoint's outbox re-sent once this worker has seen it pending
//! for `torn_outbox_grace`, `outbox_screen` leaving out what was seen sent; a row left behind
//! repaired, `row_repair`), `new_execution` and `start_accept` (which starts begin a new
//! execution: accepted, refused, deferred), `turn` (one turn: gate, decide, route, plan, build,
//! commit), `version_gate` and `versioning` (the worker's version check), `rewind`, `plan`
//! (pure: what the checkpoint writes), `outbox` (actions → messages with derived IDs),
//! `checkpoint`, `discards` (what becomes of each message), `redeliver` (what becomes of
//! messages no turn consumed), `remote` and `remote_watch` (a turn decided by a remote
//! executor), `refused` (a sub-orchestration start the child refused), `carry` (events carried
//! across continue-as-new), `trace`, and `cached` (what a session keeps between batches, an
//! entity's too). The entity stage reuses `admit`, `redeliver` and `remote`; this stage hands
//! claimed work items to the activity stage.

mod admit;
pub(crate) mod cached;
pub(crate) mod carry;
mod checkpoint;
mod discards;
#[cfg(test)]
mod fixtures;
mod load;
mod new_execution;
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
mod turn;
mod version_gate;
pub(crate) mod versioning;

use std::sync::Arc;

use taskhub_core::{EventKind, InstanceId, OrchestrationStatus};

use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::Shared;
pub(crate) use admit::{admit, hold_back, next_due, take_due, Admitted};
pub(crate) use cached::Cached;
use new_execution::start_new_execution;
pub(crate) use redeliver::{abandon, after_failed_checkpoint, commit, give_back};
pub(crate) use remote::{decision_deadline, redeliver as redeliver_undecided, Undecided};
use start_accept::start_execution;
use turn::run;

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
