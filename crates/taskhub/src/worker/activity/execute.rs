//! Executing an admitted work item: in process when the registry names the activity (on a
//! task of its own, so a panic becomes a failure), else in the remote executor; either way
//! its work item is kept hidden (renewed at half its visibility timeout) while it runs.

use std::time::Duration;

use taskhub_core::{ActivityContext, ActivityInvocation, FailureDetails, Payload};
use tracing::{Instrument as _, Span};

use super::admit::Admitted;
use super::remote_activity;
use super::result_commit::WorkItemHold;
use crate::executor::ActivityWork;
use crate::telemetry::spans::{self, ActivitySpan, Place};
use crate::telemetry::{self, TraceContext};
use crate::worker::shared::Shared;

/// What an activity's run produced, and what its report needs.
pub(super) struct Executed {
    /// The activity's output, or its failure.
    pub outcome: Result<Payload, FailureDetails>,
    /// The work item, hidden while it ran.
    pub hold: WorkItemHold,
    /// The partition the work item names for its orchestration.
    pub partition_hint: u32,
    /// The trace of the run (its result carries it on).
    pub trace: TraceContext,
}

/// Runs an admitted work item. `None`: the remote executor could not run it, and its work
/// item went back.
pub(super) async fn execute(
    shared: &Shared,
    admitted: &Admitted,
    hidden_since: Duration,
) -> Option<Executed> {
    let Admitted {
        message,
        task,
        execution,
        ..
    } = admitted;
    let partition_hint = message
        .target_partition
        .unwrap_or_else(|| message.target.partition(shared.hub.partition_count()));
    let parent = message
        .traceparent
        .as_deref()
        .and_then(TraceContext::parse)
        .unwrap_or_else(|| TraceContext::of_execution(execution));
    let trace = parent.child();
    let span = spans::activity(&ActivitySpan {
        name: &task.name,
        instance: &message.target,
        execution,
        task_id: task.task_id,
        place: Place {
            partition: partition_hint,
            epoch: None,
        },
        parent,
        context: trace,
    });
    telemetry::record::activity_started(&task.name);
    let started = shared.hub.clock().monotonic();
    let mut hold = WorkItemHold {
        flight: admitted.flight,
        receipt: admitted.m.receipt.clone(),
        renewed_at: hidden_since,
    };
    // The checkpoint or dequeue, and a large input's read, may have taken long.
    hold.renew_if_due(&shared.hub, &shared.lifecycle).await;
    let outcome = run(shared, admitted, &mut hold, span, trace).await?;
    telemetry::record::activity_finished(
        &task.name,
        outcome.is_ok(),
        shared.hub.clock().monotonic().saturating_sub(started),
    );
    Some(Executed {
        outcome,
        hold,
        partition_hint,
        trace,
    })
}

/// Runs the activity here, or in the remote executor when the registry does not name it
/// and there is one. `None`: the executor could not run it (its work item went back).
async fn run(
    shared: &Shared,
    admitted: &Admitted,
    hold: &mut WorkItemHold,
    span: Span,
    trace: TraceContext,
) -> Option<Result<Payload, FailureDetails>> {
    let Admitted {
        message,
        task,
        execution,
        ..
    } = admitted;
    let ctx = ActivityContext::new(ActivityInvocation {
        instance_id: message.target.clone(),
        execution_id: execution.clone(),
        name: task.name.clone(),
        task_id: task.task_id,
        attempt: task.attempt,
    });
    let fut = match shared
        .registry
        .start_activity(&task.name, ctx, task.input.clone())
    {
        Ok(fut) => fut,
        // Not registered here: the remote executor runs it, if there is one.
        Err(failure) => match remote_activity::executor_for(shared, &task.name) {
            None => return Some(Err(failure)),
            Some(executor) => {
                let work = ActivityWork {
                    instance: message.target.clone(),
                    execution_id: execution.clone(),
                    task_id: task.task_id,
                    name: task.name.clone(),
                    version: task.version.clone(),
                    input: task.input.clone(),
                    task_execution_id: message.id.to_string(),
                    traceparent: Some(trace.traceparent()),
                    tags: task.tags.clone(),
                };
                let run = remote_activity::run(
                    &shared.hub,
                    &shared.lifecycle,
                    executor.as_ref(),
                    work,
                    hold,
                );
                return match run.instrument(span).await {
                    Ok(outcome) => Some(outcome),
                    Err(e) => {
                        remote_activity::give_back(
                            shared.hub.store().as_ref(),
                            &admitted.m,
                            &hold.receipt,
                            &e,
                        )
                        .await;
                        shared.lifecycle.landed(admitted.flight);
                        None
                    }
                };
            }
        },
    };
    Some(in_process(shared, &task.name, fut.instrument(span), hold).await)
}

/// Runs an in-process activity on its own task, so a panic becomes a failure, renewing its
/// work item's visibility meanwhile. If this run is abandoned (shutdown timed out), the
/// activity stops with it.
async fn in_process<F>(
    shared: &Shared,
    name: &str,
    fut: F,
    hold: &mut WorkItemHold,
) -> Result<Payload, FailureDetails>
where
    F: std::future::Future<Output = Result<Payload, FailureDetails>> + Send + 'static,
{
    let mut handle = tokio::spawn(fut);
    let _stop_with_this_run = AbortOnDrop(handle.abort_handle());
    let joined = hold
        .renewing(&shared.hub, &shared.lifecycle, &mut handle)
        .await;
    match joined {
        Ok(r) => r,
        Err(e) if e.is_panic() => Err(FailureDetails::new(
            "Panic",
            format!("activity '{name}' panicked: {}", panic_text(e)),
        )),
        Err(_) => Err(FailureDetails::new(
            "Cancelled",
            format!("activity '{name}' was cancelled"),
        )),
    }
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
