//! A batch with starts for an instance whose session is not running: the starts the instance
//! row allows begin a fresh execution, the others are refused (a parent told when its child's
//! ID is in use), deferred until their Pending row lands, or sent round again until their
//! scheduled time.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{ExecutionId, InstanceId, Message, OrchestrationSession};
use taskhub_storage::InstanceRow;
use tracing::{info, warn};

use super::cached::{Cached, Live};
use super::start_accept::{early_start, judge_start, start_execution, Verdict};
use super::{abandon, carry, redeliver, refused, turn};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::{Returns, Shared};

/// The starts of a batch, judged on the instance row and the loaded execution.
#[derive(Default)]
struct Judged {
    accepted: Vec<Delivery>,
    rejected: Vec<Delivery>,
    deferred: Vec<Delivery>,
}

/// The session is not running: accept the starts the instance row allows, drop the others,
/// and run a fresh execution (or let the engine discard `others` if there is no valid start).
pub(super) async fn start_new_execution(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    starts: Vec<Delivery>,
    others: Vec<Delivery>,
) {
    if starts.is_empty() {
        turn::run(shared, instance, cached, others, false, Vec::new()).await;
        return;
    }
    // No session means it has to be loaded again (a turn just failed): let the messages come
    // back rather than judge them without it.
    let Some(loaded) = cached.session.as_ref().map(Live::loaded_execution) else {
        abandon(shared.returns(), &starts, Duration::from_secs(1)).await;
        abandon(shared.returns(), &others, Duration::from_secs(1)).await;
        return;
    };
    let row = match shared.hub.store().get_instance(instance).await {
        Ok(r) => r,
        Err(e) => {
            warn!(%instance, error = %e, "could not read instance row");
            abandon(shared.returns(), &starts, Duration::from_secs(1)).await;
            abandon(shared.returns(), &others, Duration::from_secs(1)).await;
            return;
        }
    };
    let mut judged = judge(
        shared.returns(),
        instance,
        row.as_ref(),
        loaded.as_ref(),
        starts,
    )
    .await;
    // A client's start whose Pending row has not landed waits for it, with the rest of the
    // batch when nothing else starts (those messages may be for the execution it begins).
    let mut others = others;
    for d in std::mem::take(&mut judged.deferred) {
        let rest = if judged.accepted.is_empty() {
            std::mem::take(&mut others)
        } else {
            Vec::new()
        };
        if !redeliver::defer_start(shared, &d, &rest).await {
            others.extend(rest);
            judged.rejected.push(d);
        }
    }
    let refusal = Refusal {
        instance,
        row: row.as_ref(),
        loaded: loaded.as_ref(),
    };
    if !refuse(shared.returns(), &refusal, &judged.rejected, &others).await {
        return;
    }
    begin(shared, instance, cached, row, judged.accepted, others).await;
}

/// Judges each start; one accepted before its scheduled time is sent round again now.
async fn judge(
    returns: Returns<'_>,
    instance: &InstanceId,
    row: Option<&InstanceRow>,
    loaded: Option<&ExecutionId>,
    starts: Vec<Delivery>,
) -> Judged {
    let mut judged = Judged::default();
    let (now, max_delay) = (returns.hub.clock().now(), returns.hub.store().max_delay());
    let mut early = Vec::new();
    for d in starts {
        let verdict = judge_start(row, loaded, &d.message);
        if verdict == Verdict::Accept {
            if let Some(delay) = early_start(&d.message, now, max_delay) {
                early.push((d, delay));
                continue;
            }
        }
        match verdict {
            Verdict::Accept => judged.accepted.push(d),
            Verdict::Refuse => judged.rejected.push(d),
            Verdict::Defer => judged.deferred.push(d),
        }
    }
    if !early.is_empty() {
        redeliver::send_round_again(returns, instance, early).await;
    }
    judged
}

/// What refusing starts is judged by.
struct Refusal<'a> {
    instance: &'a InstanceId,
    row: Option<&'a InstanceRow>,
    loaded: Option<&'a ExecutionId>,
}

/// Consumes the refused starts, telling a parent whose start was refused (not a duplicate of
/// the loaded execution). False: a parent could not be told (the refused starts and `others`
/// went back).
async fn refuse(
    returns: Returns<'_>,
    refusal: &Refusal<'_>,
    rejected: &[Delivery],
    others: &[Delivery],
) -> bool {
    if rejected.is_empty() {
        return true;
    }
    let instance = refusal.instance;
    info!(%instance, count = rejected.len(), "discarding superseded or racing start messages");
    let mut notices = Vec::new();
    for d in rejected {
        if start_execution(&d.message).as_ref() == refusal.loaded {
            continue;
        }
        match refused::notice(returns.hub, instance, refusal.row, &d.message).await {
            Ok(Some(n)) => notices.push(n),
            Ok(None) => {}
            Err(e) => {
                warn!(%instance, error = %e, "could not tell a parent its start was refused; will retry");
                abandon(returns, rejected, Duration::from_secs(1)).await;
                abandon(returns, others, Duration::from_secs(1)).await;
                return false;
            }
        }
    }
    if !notices.is_empty() {
        warn!(%instance, parents = notices.len(), "sub-orchestration start refused: the instance is in use");
    }
    returns
        .lifecycle
        .stat(|s| s.discarded += rejected.len() as u64);
    redeliver::consume(returns.hub, instance, rejected, notices).await;
    true
}

/// Runs the accepted start (a fresh session, the events the previous execution carried
/// applied right after it) with the rest of the batch.
async fn begin(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    row: Option<InstanceRow>,
    accepted: Vec<Delivery>,
    others: Vec<Delivery>,
) {
    // What the execution this one continues carried, applied right after its start.
    let carried: Vec<Message> = match (cached.session.as_ref(), accepted.first()) {
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
    turn::run(shared, instance, cached, batch, fresh, carried).await;
}
