//! The activity dispatcher: every worker competes for the one work-item queue, runs activities
//! up to `max_concurrent_activities` at once, and keeps their messages hidden while they run.
//! A result for a partition this worker holds goes to its session in process (see
//! [`local`](super::local)); any other is sent to its orchestration's control queue in the same
//! checkpoint that deletes the work item.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{
    ActivityContext, ActivityInvocation, EventKind, FailureDetails, Message, MessageId, Sender,
};
use taskhub_storage::{Dequeued, QueueName};
use tokio::sync::OwnedSemaphorePermit;
use tracing::{warn, Instrument as _};

use super::local::{self, LocalResult};
use super::remote_activity;
use super::result_commit::{self, WorkItemHold};
use crate::codec::{self, DecodeError};
use crate::executor::ActivityWork;
use crate::telemetry::spans::{self, ActivitySpan, Place};
use crate::telemetry::{self, TraceContext};
use crate::worker::lifecycle::poison;
use crate::worker::shared::backoff::{seed_for, PollBackoff};
use crate::worker::shared::outbound;
use crate::worker::shared::poll::{Interrupt, Poller};
use crate::worker::shared::run_ledger;
use crate::worker::shared::Shared;

/// Polls the work-item queue until the worker stops.
pub(crate) async fn poll_work_items(shared: Arc<Shared>) {
    let queue = QueueName::WorkItems;
    let settings = shared.hub.settings().clone();
    // Longer idle waits than the control queues': overflow rings the doorbell (see
    // `doorbell`), only orphans wait for a blind poll.
    let mut poller = Poller::new(
        &shared.hub,
        queue,
        settings.work_item_visibility_timeout,
        PollBackoff::new(
            settings.work_item_polling_cap(),
            seed_for(&shared.placement.name, u64::MAX),
        ),
    );
    let mut stop = shared.lifecycle.stop.clone();
    while !shared.lifecycle.stopping() {
        let Ok(mut slots) = shared.slots.activities.clone().acquire_owned().await else {
            return;
        };
        take_free(&shared, &mut slots);
        let wanted = slots.num_permits();
        let started = shared.hub.clock().monotonic();
        let Some((messages, mut slots)) = poller.dequeue(slots).await else {
            continue;
        };
        if messages.is_empty() {
            drop(slots);
            poller
                .idle(async {
                    tokio::select! {
                        // Another worker left work items on the queue: poll now, and keep
                        // polling from the shortest wait up while they last.
                        () = shared.doorbell.heard() => Interrupt::Reset,
                        _ = stop.changed() => Interrupt::Recheck,
                    }
                })
                .await;
            continue;
        }
        poller.found();
        let drained = messages.len() < wanted;
        for m in messages {
            let Some(permit) = slots.split(1) else { break };
            let s = shared.clone();
            shared.lifecycle.spawn(run_one(s, m, permit, started));
        }
        drop(slots);
        if drained {
            // The queue looked empty after this batch: wait for a wake-up (or the shortest
            // back-off, for other processes' messages) rather than an empty dequeue at once.
            poller
                .drained(async {
                    let _ = stop.changed().await;
                    Interrupt::Recheck
                })
                .await;
        }
    }
}

/// Runs a work item this worker claimed as its own turn sent it (see
/// [`claims`](super::claims)), in the activity slot reserved for it; `hidden_since` is the
/// monotonic time before the checkpoint that sent it hidden.
pub(crate) fn spawn_claimed(
    shared: &Arc<Shared>,
    m: Dequeued,
    slot: OwnedSemaphorePermit,
    hidden_since: Duration,
) {
    shared
        .lifecycle
        .spawn(run_one(shared.clone(), m, slot, hidden_since));
}

/// Adds every free activity slot to `slots`, up to a full dequeue batch.
fn take_free(shared: &Shared, slots: &mut OwnedSemaphorePermit) {
    let batch = shared.hub.store().max_dequeue_batch().max(1);
    while slots.num_permits() < batch {
        match shared.slots.activities.clone().try_acquire_owned() {
            Ok(p) => slots.merge(p),
            Err(_) => break,
        }
    }
}

/// Runs one work item to completion and reports its result. `hidden_since` is the monotonic
/// time before the request that hid the item (the dequeue, or the checkpoint that claimed
/// it): its visibility is renewed counting from then, never later.
async fn run_one(
    shared: Arc<Shared>,
    m: Dequeued,
    permit: OwnedSemaphorePermit,
    hidden_since: Duration,
) {
    let queue = QueueName::WorkItems;
    let settings = shared.hub.settings();
    if m.dequeue_count > settings.max_dequeue_count {
        let reason = poison::too_many_deliveries(m.dequeue_count, settings.max_dequeue_count);
        poison::dead_letter(&shared.hub, &shared.lifecycle, queue, &m, reason).await;
        return;
    }
    let message = match codec::decode(shared.hub.store().as_ref(), &m.body).await {
        Ok(message) => message,
        Err(DecodeError::Malformed(why)) => {
            poison::dead_letter(
                &shared.hub,
                &shared.lifecycle,
                queue,
                &m,
                format!("malformed message: {why}"),
            )
            .await;
            return;
        }
        Err(DecodeError::Storage(e)) => {
            warn!(error = %e, "could not read a large work item; retrying later");
            crate::worker::lifecycle::schema_watch::give_back_failed(
                &shared.hub,
                &shared.lifecycle,
                queue,
                &m.receipt,
                Duration::from_secs(1),
            )
            .await;
            return;
        }
    };
    let EventKind::TaskScheduled {
        task_id,
        name,
        version,
        input,
        attempt,
        tags,
    } = &message.event
    else {
        let what = message.event.type_name();
        poison::dead_letter(
            &shared.hub,
            &shared.lifecycle,
            queue,
            &m,
            format!("not an activity work item: {what}"),
        )
        .await;
        return;
    };
    let Some(execution) = message.execution_id.clone() else {
        poison::dead_letter(
            &shared.hub,
            &shared.lifecycle,
            queue,
            &m,
            "work item has no execution ID".into(),
        )
        .await;
        return;
    };
    // A copy of a work item that runs here now, or whose result is recorded, does not run.
    let Some(mark) = run_ledger::screen(&shared, &m, &message.id).await else {
        return;
    };
    let flight = shared.lifecycle.take_off(queue, m.receipt.clone());

    let partition_hint = message
        .target_partition
        .unwrap_or_else(|| message.target.partition(shared.hub.partition_count()));
    let parent = message
        .traceparent
        .as_deref()
        .and_then(TraceContext::parse)
        .unwrap_or_else(|| TraceContext::of_execution(&execution));
    let trace = parent.child();
    let span = spans::activity(&ActivitySpan {
        name,
        instance: &message.target,
        execution: &execution,
        task_id: *task_id,
        place: Place {
            partition: partition_hint,
            epoch: None,
        },
        parent,
        context: trace,
    });
    telemetry::record::activity_started(name);
    let started = shared.hub.clock().monotonic();

    let ctx = ActivityContext::new(ActivityInvocation {
        instance_id: message.target.clone(),
        execution_id: execution.clone(),
        name: name.clone(),
        task_id: *task_id,
        attempt: *attempt,
    });
    let mut hold = WorkItemHold {
        flight,
        receipt: m.receipt.clone(),
        renewed_at: hidden_since,
    };
    // The checkpoint or dequeue, and a large input's read, may have taken long.
    hold.renew_if_due(&shared.hub, &shared.lifecycle).await;
    let outcome = match shared.registry.start_activity(name, ctx, input.clone()) {
        // Not registered here: the remote executor runs it, if there is one.
        Err(failure) => match remote_activity::executor_for(&shared, name) {
            None => Err(failure),
            Some(executor) => {
                let work = ActivityWork {
                    instance: message.target.clone(),
                    execution_id: execution.clone(),
                    task_id: *task_id,
                    name: name.clone(),
                    version: version.clone(),
                    input: input.clone(),
                    task_execution_id: message.id.to_string(),
                    traceparent: Some(trace.traceparent()),
                    tags: tags.clone(),
                };
                let run = remote_activity::run(&shared, executor.as_ref(), work, &mut hold);
                match run.instrument(span.clone()).await {
                    Ok(outcome) => outcome,
                    Err(e) => {
                        remote_activity::give_back(&shared, &m, &hold.receipt, &e).await;
                        shared.lifecycle.landed(flight);
                        return;
                    }
                }
            }
        },
        Ok(fut) => {
            // Run on its own task so a panic becomes a failure, and keep the message hidden.
            // If this run is abandoned (shutdown timed out), the activity stops with it.
            let mut handle = tokio::spawn(fut.instrument(span.clone()));
            let _stop_with_this_run = AbortOnDrop(handle.abort_handle());
            let visibility = settings.work_item_visibility_timeout;
            loop {
                // Half the visibility after the last renewal; after a failed renewal, retry
                // a tenth of it later (not at once).
                let now = shared.hub.clock().monotonic();
                let due = (hold.renewed_at + visibility / 2)
                    .saturating_sub(now)
                    .max(visibility / 10);
                let renew = shared.hub.clock().sleep(due);
                tokio::select! {
                    joined = &mut handle => break match joined {
                        Ok(r) => r,
                        Err(e) if e.is_panic() => Err(FailureDetails::new("Panic", format!("activity '{name}' panicked: {}", panic_text(e)))),
                        Err(_) => Err(FailureDetails::new("Cancelled", format!("activity '{name}' was cancelled"))),
                    },
                    () = renew => hold.renew(&shared.hub, &shared.lifecycle).await,
                }
            }
        }
    };
    telemetry::record::activity_finished(
        name,
        outcome.is_ok(),
        shared.hub.clock().monotonic().saturating_sub(started),
    );
    let event = match outcome {
        Ok(result) => EventKind::TaskCompleted {
            task_id: *task_id,
            result,
        },
        Err(failure) => EventKind::TaskFailed {
            task_id: *task_id,
            failure,
        },
    };
    let hint = partition_hint;
    // The instance may have moved off a partition that is being removed.
    let partition = shared.route(&message.target, hint).await.unwrap_or(hint);
    let reply = Message {
        id: MessageId::derived(
            &message.target,
            &execution,
            &outbound::attempt_purpose("result", *task_id, *attempt),
        ),
        target: message.target.clone(),
        execution_id: Some(execution.clone()),
        sender: Some(Sender {
            instance_id: message.target.clone(),
            execution_id: execution,
        }),
        episode: message.episode,
        enqueued_at: shared.hub.clock().now(),
        target_partition: Some(partition),
        traceparent: Some(trace.traceparent()),
        order: None,
        event,
    };
    // This worker holds the orchestration's partition: the result goes to its session in
    // process, and the checkpoint that records it deletes the work item.
    let local = LocalResult {
        reply,
        partition,
        work_item: m,
        slot: permit,
        mark,
    };
    let (reply, _permit, mark) = match local::try_deliver(&shared, local, &hold) {
        Ok(()) => return,
        Err(local) => (local.reply, local.slot, local.mark),
    };
    let reply_queue = QueueName::Control(partition);
    let outbound = match outbound::encode(&shared.hub, reply_queue, &reply, Duration::ZERO).await {
        Ok(o) => o,
        Err(e) => {
            warn!(error = %e, "could not encode an activity result; the work item will run again");
            shared.lifecycle.landed(flight);
            return;
        }
    };
    match result_commit::commit(
        &shared.hub,
        &shared.lifecycle,
        &message.target,
        outbound,
        &mut hold,
    )
    .await
    {
        Ok(_) => {
            mark.recorded();
            shared.lifecycle.stat(|s| s.activities += 1);
            shared.hub.signals().enqueued(reply_queue);
        }
        Err(e) => {
            warn!(error = %e, "could not report an activity result; the work item will run again")
        }
    }
    shared.lifecycle.landed(flight);
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn panic_text(e: tokio::task::JoinError) -> String {
    let p = e.into_panic();
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned())
}
