//! Processing one batch of an instance's messages: load (or reuse) the session, run the turn,
//! and commit one checkpoint (history + instance row + outbound messages + consumed receipts).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{
    DiscardReason, EventKind, InstanceId, LogLevel, Message, MessageId, OrchestrationSession,
    OrchestrationStatus, TurnInput, TurnResult,
};
use taskhub_storage::{
    CheckpointRequest, ETag, HistorySnapshot, HistoryWrite, InstanceRow, LeaseFence,
    OutboundMessage, QueueName, Receipt, StorageError,
};
use tracing::{debug, error, info, warn, Instrument as _};

use super::claims::Claims;
use super::delivery::Delivery;
use super::local;
use super::outbox::{self, Origin};
use super::refused;
use super::row_repair::{self, RowRepair};
use super::session::Cached;
use super::start_accept::{accept_start, start_execution};
use super::turn_plan;
use super::turn_trace;
use super::versioning::{self, Verdict};
use super::Shared;
use crate::client::prestart;
use crate::signals::InstanceChanged;
use crate::telemetry;

/// How long a message for the next execution of an instance that continued as new waits
/// before it is delivered again (its start is already queued ahead of it).
const NEXT_EXECUTION_RETRY: Duration = Duration::from_millis(50);
/// How long a message waits, uncounted, for the start of an instance that has not started
/// (see [`wait_for_start`]).
const NOT_STARTED_GRACE: Duration = Duration::from_secs(300);
/// How often such a message is looked at again meanwhile.
const NOT_STARTED_RETRY: Duration = Duration::from_secs(1);

/// Processes one batch for `instance`.
pub(crate) async fn process(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    deliveries: Vec<Delivery>,
) {
    let Ok(_permit) = shared.orchestration_slots.acquire().await else {
        give_back(shared, &deliveries, Duration::ZERO).await;
        return;
    };
    let Some(deliveries) = under_current_lease(shared, cached, deliveries).await else {
        return;
    };
    // Timers the backend delivered early by less than its delay unit (their delay was rounded
    // down to whole units, see `outbox::timer_delay`): wait out the remainder here.
    let unit = shared.hub.store().delay_granularity();
    let mut now = shared.hub.clock().now();
    let remainder = deliveries
        .iter()
        .filter_map(|d| match d.message.event {
            EventKind::TimerFired { fire_at, .. } if fire_at > now => {
                Some(fire_at.saturating_since(now))
            }
            _ => None,
        })
        .filter(|r| *r <= unit)
        .max();
    if let Some(wait) = remainder {
        shared.hub.clock().sleep(wait).await;
        now = shared.hub.clock().now();
    }
    let (early, due): (Vec<Delivery>, Vec<Delivery>) = deliveries.into_iter().partition(
        |d| matches!(d.message.event, EventKind::TimerFired { fire_at, .. } if fire_at > now),
    );
    if !early.is_empty() {
        reschedule_early_timers(shared, early).await;
    }
    if due.is_empty() {
        return;
    }
    if cached.session.is_none() {
        let Some(fence) = shared.fence(due[0].partition) else {
            // The lease ended: never write (a torn checkpoint's re-send) without one.
            give_back(shared, &due, Duration::ZERO).await;
            return;
        };
        match load(shared, instance, fence).await {
            Ok(Loaded::Deferred(wait)) => {
                // A checkpoint's outbox that its writer may still be sending: neither re-send
                // it (a live writer's messages would go twice) nor run a turn (whose commit
                // would replace it). Come back once its writer cannot still be at work.
                debug!(%instance, ?wait, "the history has a fresh pending outbox; retrying later");
                give_back(shared, &due, wait).await;
                return;
            }
            Ok(Loaded::Ready(loaded)) => {
                let LoadedInstance {
                    session,
                    history_etag: etag,
                    row,
                    repair,
                } = *loaded;
                cached.row = row;
                if let RowRepair::FromHistory { last_event } = repair {
                    let row = row_repair::repaired_row(
                        cached.row.as_ref(),
                        &session,
                        last_event,
                        due[0].partition,
                        shared.hub.clock().now(),
                    );
                    if let Err(e) = row_repair::write(shared, instance, cached, row).await {
                        // These deliveries are what brings the instance back to a loader.
                        // Consuming them with the row still behind would leave a finished
                        // instance looking Running forever: give them back and repair on
                        // their redelivery.
                        warn!(%instance, error = %e, "could not repair the instance row; messages will be retried");
                        cached.row = None;
                        abandon(shared, &due, Duration::from_secs(1)).await;
                        return;
                    }
                }
                cached.session = Some((session, etag));
            }
            Err(StorageError::Fenced { .. }) => {
                // Re-sending a torn checkpoint's outbox found the lease gone: not the
                // messages' fault (as for a fenced turn, below).
                shared.lease_lost(fence.partition, fence.epoch);
                give_back(shared, &due, Duration::ZERO).await;
                return;
            }
            Err(e) => {
                warn!(%instance, error = %e, "could not load instance; messages will be retried");
                abandon(shared, &due, Duration::from_secs(1)).await;
                return;
            }
        }
    }
    let open = cached
        .session
        .as_ref()
        .is_some_and(|(s, _)| s.status().is_active() && s.status() != OrchestrationStatus::Pending);
    let (starts, others): (Vec<Delivery>, Vec<Delivery>) = due
        .into_iter()
        .partition(|d| matches!(d.message.event, EventKind::ExecutionStarted { .. }));
    if open {
        let current = cached.session.as_ref().map(|(s, _)| s.execution_id());
        let (same, new): (Vec<Delivery>, Vec<Delivery>) = starts
            .into_iter()
            .partition(|d| start_execution(&d.message) == current);
        let mut batch = others;
        batch.extend(same);
        run(shared, instance, cached, batch, false).await;
        if !new.is_empty() {
            start_new_execution(shared, instance, cached, new, Vec::new()).await;
        }
    } else {
        start_new_execution(shared, instance, cached, starts, others).await;
    }
}

/// Keeps the deliveries dequeued under the partition's current lease and gives the others
/// back at once (their lease was lost or handed over). A session cached under another lease
/// (another epoch, or another partition after the instance moved) is dropped: another worker
/// may have moved the instance on meanwhile.
pub(crate) async fn under_current_lease(
    shared: &Shared,
    cached: &mut Cached,
    deliveries: Vec<Delivery>,
) -> Option<Vec<Delivery>> {
    let partition = deliveries.first().map(|d| d.partition)?;
    let current = shared.fence(partition).map(|f| f.epoch);
    let (valid, stale): (Vec<Delivery>, Vec<Delivery>) = deliveries
        .into_iter()
        .partition(|d| Some(d.epoch) == current);
    if !stale.is_empty() {
        debug!(
            partition,
            count = stale.len(),
            "giving back messages fetched under an old lease"
        );
        give_back(shared, &stale, Duration::ZERO).await;
    }
    let lease = current.map(|epoch| (partition, epoch));
    if cached.lease != lease {
        *cached = Cached::default();
        cached.lease = lease;
    }
    (!valid.is_empty()).then_some(valid)
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
        run(shared, instance, cached, others, false).await;
        return;
    }
    // The execution whose history is loaded. `None` means it has to be loaded again (a turn
    // just failed): let the messages come back rather than judge them without it.
    let Some(loaded) = cached
        .session
        .as_ref()
        .map(|(s, _)| (s.status() != OrchestrationStatus::Pending).then(|| s.execution_id()))
    else {
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
    let (accepted, rejected): (Vec<Delivery>, Vec<Delivery>) = starts
        .into_iter()
        .partition(|d| accept_start(row.as_ref(), loaded.as_ref(), &d.message));
    if !rejected.is_empty() {
        info!(%instance, count = rejected.len(), "discarding superseded or racing start messages");
        // A parent whose start was refused (not a duplicate of the loaded execution) is told.
        let mut notices = Vec::new();
        for d in &rejected {
            if start_execution(&d.message) == loaded {
                continue;
            }
            match refused::notice(shared, instance, row.as_ref(), &d.message).await {
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
        shared.stat(|s| s.discarded += rejected.len() as u64);
        consume(shared, instance, &rejected, notices).await;
    }
    let mut batch = accepted;
    let fresh = !batch.is_empty();
    batch.extend(others);
    if fresh {
        let etag = cached.session.take().and_then(|(_, e)| e);
        cached.session = Some((
            OrchestrationSession::new(shared.registry.clone(), instance.clone()),
            etag,
        ));
    }
    // The row just read is the one to judge the rest of the batch by (a client may have
    // ended the instance before its start since the session was cached).
    cached.row = row;
    run(shared, instance, cached, batch, fresh).await;
}

/// Runs one turn over `batch` and commits it, in the turn's span.
async fn run(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    batch: Vec<Delivery>,
    new_execution: bool,
) {
    if batch.is_empty() {
        return;
    }
    let partition = batch[0].partition;
    let messages: Vec<&Message> = batch.iter().map(|d| &d.message).collect();
    let trace = cached.session.as_ref().map(|(session, _)| {
        turn_trace::TurnTrace::new(turn_trace::TurnTraceRequest {
            session,
            instance,
            messages: &messages,
            partition,
            epoch: shared.fence(partition).map(|f| f.epoch),
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
            )
            .instrument(t.span.clone())
            .await;
        }
        // No session (nothing to trace): the turn gives the batch back or does nothing.
        None => run_traced(shared, instance, cached, batch, new_execution, None).await,
    }
}

/// Runs one turn over `batch` and commits it.
async fn run_traced(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    cached: &mut Cached,
    batch: Vec<Delivery>,
    new_execution: bool,
    trace: Option<&turn_trace::TurnTrace>,
) {
    let partition = batch[0].partition;
    let Some(fence) = shared.fence(partition) else {
        // The lease ended: never commit without one.
        cached.session = None;
        give_back(shared, &batch, Duration::ZERO).await;
        return;
    };
    // On a partition being removed, the row and replies already name the instance's new home.
    let partition = shared.home(instance, partition);
    let Some((session, etag)) = cached.session.as_mut() else {
        give_back(shared, &batch, Duration::ZERO).await;
        return;
    };
    if !check_version(shared, session, &batch, new_execution) {
        // Another worker's version: the messages go back, uncounted, for it.
        cached.session = None;
        give_back(shared, &batch, versioning::REJECT_DELAY).await;
        return;
    }
    // Handed-over results: their work items stop being renewed now (a renewal would replace
    // the receipt), and the checkpoint deletes them with their current receipts.
    let mut batch = batch;
    for d in &mut batch {
        if let Some(held) = &d.held {
            d.receipt = held.take().await;
        }
    }
    let now = shared.hub.clock().now();
    let result = session.turn(TurnInput {
        now,
        messages: batch.iter().map(|d| d.message.clone()).collect(),
    });
    emit_logs(instance, &result);
    if let Some(t) = trace {
        t.timers_fired(&batch, &result);
    }
    let not_started: HashSet<&MessageId> = result
        .discarded
        .iter()
        .filter(|d| d.reason == DiscardReason::NotStarted)
        .map(|d| &d.message_id)
        .collect();
    // Messages for the next execution of an instance that just continued as new: its start is
    // already queued (committed with ContinuedAsNew), so they go back behind it.
    let for_next: HashSet<&MessageId> = result
        .discarded
        .iter()
        .filter(|d| d.reason == DiscardReason::AwaitingNextExecution)
        .map(|d| &d.message_id)
        .collect();
    let discarded = result.discarded.len() as u64;
    let (waiting, applied): (Vec<&Delivery>, Vec<&Delivery>) = batch
        .iter()
        .partition(|d| not_started.contains(&d.message.id));
    let (next, applied): (Vec<&Delivery>, Vec<&Delivery>) = applied
        .into_iter()
        .partition(|d| for_next.contains(&d.message.id));
    let mut consumed: Vec<(QueueName, Receipt)> = applied
        .iter()
        .map(|d| (d.queue, d.receipt.clone()))
        .collect();
    let mut outbound: Vec<OutboundMessage> = Vec::new();
    // A fresh copy of each (same message ID, so it is still applied once), in arrival order,
    // consumed in the same checkpoint: never dropped, and never counted towards the poison
    // threshold while the next execution's start is on its way.
    for d in &next {
        match outbox::encode(shared, d.home(), &d.message, NEXT_EXECUTION_RETRY).await {
            Ok(o) => {
                outbound.push(o);
                consumed.push((d.queue, d.receipt.clone()));
            }
            Err(e) => {
                warn!(%instance, error = %e, "could not re-send a message for the next execution");
                retry_later(shared, d, Duration::from_secs(1)).await;
            }
        }
    }
    // Messages for an instance whose start is still pending are re-sent with a delay (a fresh
    // copy, so waiting for a delayed start never counts towards the poison threshold).
    if cached
        .row
        .as_ref()
        .is_some_and(|r| r.status == OrchestrationStatus::Pending)
    {
        for d in &waiting {
            let delay = cached
                .row
                .as_ref()
                .and_then(|r| r.scheduled_start)
                .map_or(Duration::from_secs(1), |at| {
                    at.saturating_since(now).max(Duration::from_millis(100))
                });
            match outbox::encode(shared, d.home(), &d.message, delay).await {
                Ok(o) => {
                    outbound.push(o);
                    consumed.push((d.queue, d.receipt.clone()));
                }
                Err(e) => {
                    warn!(%instance, error = %e, "could not re-send a message for a pending instance");
                    retry_later(shared, d, Duration::from_secs(1)).await;
                }
            }
        }
    } else if cached.row.as_ref().is_some_and(|r| {
        r.status == OrchestrationStatus::Suspended || prestart::terminated_before_start(r)
    }) {
        // Suspended before its start: the messages wait for the resume (a fresh copy each
        // time, as for a pending start). Terminated before its start: it never runs, and
        // they are discarded.
        let suspended = cached
            .row
            .as_ref()
            .is_some_and(|r| r.status == OrchestrationStatus::Suspended);
        for d in &waiting {
            if !suspended {
                consumed.push((d.queue, d.receipt.clone()));
                continue;
            }
            match outbox::encode(shared, d.home(), &d.message, Duration::from_secs(1)).await {
                Ok(o) => {
                    outbound.push(o);
                    consumed.push((d.queue, d.receipt.clone()));
                }
                Err(e) => {
                    warn!(%instance, error = %e, "could not re-send a message for a suspended instance");
                    retry_later(shared, d, Duration::from_secs(1)).await;
                }
            }
        }
    } else {
        for d in waiting {
            wait_for_start(shared, d, now).await;
        }
    }
    if discarded > 0 {
        debug!(%instance, discarded = ?result.discarded, "messages not applied");
        shared.stat(|s| s.discarded += discarded);
    }

    let writes = turn_plan::plan(&turn_plan::PlanInput {
        session,
        result: &result,
        known_row: cached.row.as_ref(),
        history_etag: etag.as_ref(),
        new_execution,
        partition,
        now,
    });
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
        };
        match outbox::build(shared, &origin, &result.actions).await {
            Ok(mut o) => outbound.append(&mut o),
            Err(e) => {
                warn!(%instance, error = %e, "could not prepare outbound messages; turn will be retried");
                cached.session = None;
                abandon(shared, &batch, Duration::from_secs(1)).await;
                return;
            }
        }
    }
    let turn_plan::TurnWrites { history, row, .. } = writes;
    if history.is_none() && outbound.is_empty() && consumed.is_empty() {
        return;
    }
    // Work items this worker runs itself, in slots reserved now (see `claims`); only the
    // others wake a poller.
    let claims = Claims::reserve(shared, &mut outbound);
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
    let committed = commit(shared, request).await;
    telemetry::record::checkpoint(shared.hub.clock().monotonic().saturating_sub(started));
    match committed {
        Ok(outcome) => {
            if let Some(e) = outcome.history_etag {
                *etag = Some(e);
            }
            if let Some(turn_plan::RowWrite { row: mut r, .. }) = row {
                r.etag = outcome.instance_etag;
                // Counted before the change is published, so a waiter sees the turn counted.
                shared.stat(|s| s.turns += 1);
                shared.count_turn(fence.partition);
                telemetry::record::turn(&session.name());
                let changed = cached.row.as_ref().is_none_or(|old| old.status != r.status);
                if changed {
                    shared.hub.inner.signals.instance_changed(InstanceChanged {
                        instance_id: instance.clone(),
                        status: r.status,
                    });
                }
                cached.row = Some(r);
            }
            for (q, delay) in queues {
                shared.hub.inner.signals.enqueued_after(q, delay);
            }
            claims.start(shared, outcome.claimed).await;
        }
        Err(e) => {
            if e.is_conflict() {
                shared.stat(|s| s.checkpoint_conflicts += 1);
            }
            warn!(%instance, error = %e, "checkpoint failed; the batch will be redelivered");
            cached.session = None;
            cached.row = None;
            if let StorageError::Fenced { .. } = e {
                // The lease is gone: not the messages' fault. They go back uncounted, and
                // this worker stops processing the partition under the old epoch at once
                // (else it would redeliver them to itself, fenced each time, until its lease
                // manager noticed, and dead-letter live messages).
                shared.lease_lost(fence.partition, fence.epoch);
                give_back(shared, &batch, Duration::ZERO).await;
                return;
            }
            let delay = if e.is_conflict() {
                Duration::ZERO
            } else {
                Duration::from_secs(1)
            };
            abandon(shared, &batch, delay).await;
        }
    }
}

/// Judges the version of the execution this turn runs (the start's in `batch` for a new
/// execution, else the loaded one's; a finished or not yet started one is not judged: the
/// engine discards or holds its messages). False: reject the turn. A mismatch under
/// `version_failure = fail` makes the turn fail the execution.
fn check_version(
    shared: &Shared,
    session: &mut OrchestrationSession,
    batch: &[Delivery],
    new_execution: bool,
) -> bool {
    let (name, version) = if new_execution {
        let Some((name, version)) = batch.iter().find_map(|d| match &d.message.event {
            EventKind::ExecutionStarted { name, version, .. } => {
                Some((name.clone(), version.clone()))
            }
            _ => None,
        }) else {
            return true;
        };
        (name, version)
    } else if session.status().is_active() && session.status() != OrchestrationStatus::Pending {
        (session.name(), session.version())
    } else {
        return true;
    };
    match versioning::judge(shared.hub.settings(), &name, version.as_deref()) {
        Verdict::Run => true,
        Verdict::Reject => {
            debug!(orchestration = %name, ?version, "rejecting a turn of another version");
            false
        }
        Verdict::Fail(failure) => {
            warn!(orchestration = %name, ?version, "failing an instance of another version");
            session.refuse(failure);
            true
        }
    }
}

/// Commits with a few retries on transient errors.
pub(crate) async fn commit(
    shared: &Shared,
    request: CheckpointRequest,
) -> Result<taskhub_storage::CheckpointOutcome, StorageError> {
    retry_transient(shared, || shared.hub.store().checkpoint(request.clone())).await
}

/// Runs `op`, retrying it a few times (with growing waits on the clock) while it fails with a
/// retryable error.
pub(crate) async fn retry_transient<T, F, Fut>(
    shared: &Shared,
    mut op: F,
) -> Result<T, StorageError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StorageError>>,
{
    let mut wait = Duration::from_millis(20);
    let mut attempt = 0;
    loop {
        match op().await {
            Err(e) if e.is_retryable() && attempt < 3 => {
                attempt += 1;
                shared.hub.clock().sleep(wait).await;
                wait *= 4;
            }
            other => return other,
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
    /// The history carries a pending outbox younger than [`outbox_grace`]: its writer may
    /// still be sending it. Retry after this long.
    Deferred(Duration),
}

/// How old a pending outbox must be before a loader takes it for a torn checkpoint's and
/// re-sends it: a lease interval, after which a live writer that held the lease when it
/// committed has stopped working on the partition (it stops on its own when it has not
/// renewed for that long). A younger one is most likely a checkpoint still under way in
/// another worker (a handover whose drain timed out, a lease taken from a stalled worker, a
/// removed partition's last turn): re-sending it would send its messages twice, and an
/// activity would run twice.
fn outbox_grace(shared: &Shared) -> Duration {
    shared.hub.settings().lease_interval
}

/// Loads history (re-sending a torn checkpoint's outbox, see [`resend_outbox`]) and the
/// instance row.
async fn load(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
) -> Result<Loaded, StorageError> {
    let store = shared.hub.store();
    let snapshot = store.load_history(instance).await?;
    let row = store.get_instance(instance).await?;
    Ok(Loaded::Ready(Box::new(match snapshot {
        Some(s) => {
            if let Some(since) = s.pending_since.filter(|_| !s.pending_outbox.is_empty()) {
                let age = shared.hub.clock().now().saturating_since(since);
                let grace = outbox_grace(shared);
                if age < grace {
                    return Ok(Loaded::Deferred(grace - age));
                }
            }
            let etag = resend_outbox(shared, instance, fence, &s).await?;
            let session =
                OrchestrationSession::load(shared.registry.clone(), instance.clone(), &s.events);
            let repair = row_repair::judge(
                &session,
                row.as_ref(),
                &s.events,
                !s.pending_outbox.is_empty(),
            );
            LoadedInstance {
                session,
                history_etag: Some(etag),
                row,
                repair,
            }
        }
        None => LoadedInstance {
            session: OrchestrationSession::new(shared.registry.clone(), instance.clone()),
            history_etag: None,
            row,
            repair: RowRepair::NotNeeded,
        },
    })))
}

/// Re-sends the outbox a torn checkpoint left pending, and clears it in the same step, so that
/// it is re-sent once and not by every later loader: one checkpoint of no events, fenced by
/// this worker's lease and conditional on the loaded history ETag, that carries the outbox
/// (the driver commits it as pending, sends it, then clears it). Returns the history's ETag
/// afterwards. Receivers de-duplicate the copies by message ID.
async fn resend_outbox(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
    loaded: &HistorySnapshot,
) -> Result<ETag, StorageError> {
    if loaded.pending_outbox.is_empty() {
        return Ok(loaded.etag.clone());
    }
    let request = CheckpointRequest {
        instance_id: instance.clone(),
        fence: Some(fence),
        history: Some(HistoryWrite {
            execution_id: loaded.execution_id.clone(),
            expected: Some(loaded.etag.clone()),
            new_execution: false,
            events: Vec::new(),
        }),
        instance: None,
        // A re-sent outbox claims nothing: a claim belongs to the turn that made it.
        outbound: loaded
            .pending_outbox
            .iter()
            .map(|o| OutboundMessage::new(o.queue, o.message.clone()))
            .collect(),
        consumed: Vec::new(),
    };
    let outcome = commit(shared, request).await?;
    info!(%instance, messages = loaded.pending_outbox.len(), "re-sent the outbox of a torn checkpoint");
    for o in &loaded.pending_outbox {
        shared
            .hub
            .inner
            .signals
            .enqueued_after(o.queue, o.message.delay);
    }
    Ok(outcome.history_etag.unwrap_or_else(|| loaded.etag.clone()))
}

/// Timer messages that arrived before their time (chunked long timers) go back with the rest
/// of their delay.
async fn reschedule_early_timers(shared: &Shared, early: Vec<Delivery>) {
    let now = shared.hub.clock().now();
    for d in early {
        let EventKind::TimerFired { fire_at, .. } = d.message.event else {
            continue;
        };
        let delay = outbox::timer_delay(shared, fire_at, now);
        let Ok(o) = outbox::encode(shared, d.home(), &d.message, delay).await else {
            continue;
        };
        let req = CheckpointRequest {
            instance_id: d.message.target.clone(),
            fence: None,
            history: None,
            instance: None,
            outbound: vec![o],
            consumed: vec![(d.queue, d.receipt.clone())],
        };
        if let Err(e) = commit(shared, req).await {
            warn!(error = %e, "could not re-schedule an early timer message");
        }
    }
}

/// Deletes messages that were handled without a turn, sending `outbound` in the same
/// checkpoint.
async fn consume(
    shared: &Shared,
    instance: &InstanceId,
    deliveries: &[Delivery],
    outbound: Vec<OutboundMessage>,
) {
    let queues: Vec<(QueueName, Duration)> = outbound
        .iter()
        .map(|o| (o.queue, o.message.delay))
        .collect();
    let req = CheckpointRequest {
        instance_id: instance.clone(),
        fence: None,
        history: None,
        instance: None,
        outbound,
        consumed: deliveries
            .iter()
            .map(|d| (d.queue, d.receipt.clone()))
            .collect(),
    };
    match commit(shared, req).await {
        Ok(_) => {
            for (q, delay) in queues {
                shared.hub.inner.signals.enqueued_after(q, delay);
            }
        }
        Err(e) => {
            warn!(%instance, error = %e, "could not delete discarded messages; they will be discarded again");
        }
    }
}

/// Returns messages whose processing failed to their queue, to be tried again after `delay`;
/// a message already delivered more than `max_dequeue_count` times goes to the dead-letter
/// store instead (never an endless loop).
pub(crate) async fn abandon(shared: &Shared, deliveries: &[Delivery], delay: Duration) {
    for d in deliveries {
        retry_later(shared, d, delay).await;
    }
}

async fn retry_later(shared: &Shared, d: &Delivery, delay: Duration) {
    if d.is_local() {
        local::fall_back(shared, d, delay).await;
        return;
    }
    let max = shared.hub.settings().max_dequeue_count;
    if d.raw.dequeue_count > max {
        let reason = super::poison::too_many_deliveries(d.raw.dequeue_count, max);
        super::poison::dead_letter(shared, d.queue, &d.raw, reason).await;
        return;
    }
    // A failed delivery: it counts toward the poison threshold.
    if let Err(e) = shared.hub.store().abandon(d.queue, &d.receipt, delay).await {
        debug!(error = %e, "abandon failed; the message reappears after its visibility timeout");
    }
}

/// A message for an instance with neither history nor a Pending row: the start it depends on
/// has not arrived or is not visible yet (queues do not keep order, so an event sent right
/// after a sub-orchestration's start can overtake it). It goes back with a delay, uncounted,
/// while younger than [`NOT_STARTED_GRACE`]; after that each delivery counts, so a message for
/// an instance that never starts ends in the dead letters rather than circling forever.
async fn wait_for_start(shared: &Shared, d: &Delivery, now: taskhub_core::Timestamp) {
    if d.is_local() {
        local::fall_back(shared, d, NOT_STARTED_RETRY).await;
        return;
    }
    if now.saturating_since(d.raw.enqueued_at) < NOT_STARTED_GRACE {
        if let Err(e) = shared
            .hub
            .store()
            .release(d.queue, &d.receipt, NOT_STARTED_RETRY)
            .await
        {
            debug!(error = %e, "release failed; the message reappears after its visibility timeout");
        }
    } else {
        retry_later(shared, d, NOT_STARTED_RETRY).await;
    }
}

/// Returns messages to their queue without counting the delivery (a lease ended).
pub(crate) async fn give_back(shared: &Shared, deliveries: &[Delivery], delay: Duration) {
    for d in deliveries {
        if d.is_local() {
            local::fall_back(shared, d, delay).await;
            continue;
        }
        if let Err(e) = shared.hub.store().release(d.queue, &d.receipt, delay).await {
            debug!(error = %e, "abandon failed; the message reappears after its visibility timeout");
        }
    }
}

fn emit_logs(instance: &InstanceId, r: &TurnResult) {
    for line in &r.logs {
        match line.level {
            LogLevel::Debug => {
                debug!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
            LogLevel::Info => {
                info!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
            LogLevel::Warn => {
                warn!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
            LogLevel::Error => {
                error!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
        }
    }
}
