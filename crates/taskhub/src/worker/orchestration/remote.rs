//! A turn decided by a remote executor: the session applied the batch
//! ([`TurnStep::Decide`](taskhub_core::TurnStep)); the executor is asked with the execution's
//! history and the turn's new events; its answer is recorded by the session (validated there,
//! `OrchestrationSession::finish_turn`) and committed like any turn.
//!
//! What happens to the batch when no answer comes:
//! - the partition's lease ends (lost, handed over, drained) or the worker stops while the
//!   question is out: the executor's future is dropped at once (withdrawing the work item) and
//!   the messages go back uncounted, at once: nothing was wrong with them, and nothing is
//!   committed under the ended lease (a checkpoint would be fenced anyway);
//! - [`ExecutorError::Unavailable`] (no connected worker): back uncounted after
//!   [`EXECUTOR_RETRY`](crate::worker::shared::executor_errors::EXECUTOR_RETRY): a missing worker says nothing about the messages, and they must not
//!   end in the dead letters because no SDK was connected for a while;
//! - [`ExecutorError::Busy`] (the executor's backlog is full): back uncounted after
//!   [`BUSY_RETRY`](crate::worker::shared::executor_errors::BUSY_RETRY);
//! - [`ExecutorError::TimedOut`] and [`ExecutorError::Abandoned`] (a worker took the work and
//!   did not answer, gave it back or died with it; or no answer came within
//!   [`decision_deadline`], half the control queue's visibility timeout, the runtime's own
//!   limit whatever the executor's): back after `EXECUTOR_RETRY`, counted as
//!   a failed delivery, so a turn that hangs or kills every worker it reaches ends in the dead
//!   letters after `max_dequeue_count` deliveries instead of circling forever.
//!
//! In every case the session is dropped: it applied the batch, and is loaded again from
//! storage for the next one.
//!
//! The wait holds nothing other instances need: no lock, no prefetch-buffer slot (the batch's
//! are freed: the poller may fetch more meanwhile), no activity slot (a handed-over result's
//! is freed too), and its processing slot is lent (see
//! [`remote_watch`](super::remote_watch)). So the number of turns waiting on the
//! executor is bounded by the executor (its workers' concurrency and its timeout), not by
//! `max_concurrent_orchestrations` or the buffer.

use std::time::Duration;

use taskhub_core::engine::{Decision, OrchestrationDecision};
use taskhub_core::{FailureDetails, InstanceId, OrchestrationSession, PendingTurn, TurnResult};
use taskhub_storage::LeaseFence;
use tracing::{debug, warn};

use super::redeliver::{abandon, give_back};
use super::remote_watch::{until_cut, Cut};
use crate::client::tags::{validate_tags, TagCaps};
use crate::executor::{ExecutorError, OrchestrationWork};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::executor_errors::{counts_as_failed_delivery, retry_delay};
use crate::worker::shared::{Returns, Shared};

/// The longest the runtime waits for a decision, whatever the executor's own timeout: half
/// the control queue's visibility timeout. The batch's messages are not renewed while the
/// question is out, so a longer wait would let them reappear (and be fetched again, each
/// time counted as a delivery); past it the turn is [`ExecutorError::TimedOut`].
pub(crate) fn decision_deadline(settings: &crate::Settings) -> Duration {
    settings.control_queue_visibility_timeout / 2
}

/// Why a remote turn was not decided.
pub(crate) enum Undecided {
    /// The wait was cut (lease ended, worker stopping).
    Cut(Cut),
    /// The executor could not answer.
    Failed(ExecutorError),
}

/// Asks the executor to decide `pending` (made of `batch`) and records its answer in
/// `session`. The batch's buffer slots (a handed-over result's: the activity slot it ran in)
/// are freed for the wait, and its processing slot is lent.
pub(super) async fn decide(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
    session: &mut OrchestrationSession,
    pending: PendingTurn,
    batch: &mut [Delivery],
) -> Result<TurnResult, Undecided> {
    for d in batch.iter_mut() {
        d._slot.free();
    }
    let Some(executor) = shared.executor.clone() else {
        // A session is remote only on a worker with an executor.
        return Err(Undecided::Failed(ExecutorError::Unavailable {
            what: format!("orchestration '{}' (instance '{instance}')", session.name()),
        }));
    };
    let mut work = OrchestrationWork::new(
        instance.clone(),
        session.execution_id(),
        session.name(),
        session.remote_history_shared(),
        pending.new_events().to_vec(),
    );
    work.traceparent = session.start_trace().map(str::to_owned);
    work.span = session.span().cloned();
    let clock = shared.hub.clock().clone();
    let deadline = decision_deadline(shared.hub.settings());
    let what = format!("orchestration '{}' (instance '{instance}')", session.name());
    let question = executor.orchestrate(work);
    let asked = async move {
        tokio::select! {
            answer = question => answer,
            () = clock.sleep(deadline) => Err(ExecutorError::TimedOut {
                what,
                seconds: deadline.as_secs(),
            }),
        }
    };
    match until_cut(
        shared,
        instance,
        fence,
        Some(&shared.slots.orchestrations),
        asked,
    )
    .await
    {
        Ok(Ok(decision)) => {
            let decision = screen_tags(decision, &TagCaps::of(shared.hub.settings()));
            Ok(session.finish_turn(pending, decision))
        }
        Ok(Err(e)) => Err(Undecided::Failed(e)),
        Err(cut) => Err(Undecided::Cut(cut)),
    }
}

/// The `errorType` of the failure a decision with bad tags turns into.
pub(crate) const INVALID_TAGS: &str = "InvalidTags";

/// `decision`, or, when a task or child it starts carries tags a client's start could not
/// (over the hub's caps: `max_tags`, `max_tag_key_chars`, `max_tag_value_chars`), one
/// `Fail` naming the decision and the tag: the execution fails with a clear reason, and
/// nothing it decided is carried out.
pub(crate) fn screen_tags(
    decision: OrchestrationDecision,
    caps: &TagCaps,
) -> OrchestrationDecision {
    let bad = decision.decisions.iter().enumerate().find_map(|(i, d)| {
        let (what, name, tags) = match d {
            Decision::ScheduleActivity { name, tags, .. } => ("activity", name, tags),
            Decision::StartSubOrchestration { name, tags, .. } => ("sub-orchestration", name, tags),
            _ => return None,
        };
        validate_tags(tags, caps)
            .err()
            .map(|e| format!("decision {i} ({what} '{name}'): {e}"))
    });
    match bad {
        None => decision,
        Some(message) => OrchestrationDecision::new(vec![Decision::Fail {
            failure: FailureDetails {
                error_type: INVALID_TAGS.into(),
                message,
                details: None,
                non_retryable: true,
            },
        }]),
    }
}

/// Returns `batch` to its queues as the module documentation says.
pub(crate) async fn redeliver(
    returns: Returns<'_>,
    instance: &InstanceId,
    batch: &[Delivery],
    why: Undecided,
) {
    match why {
        Undecided::Cut(cut) => {
            debug!(%instance, ?cut, "a remote turn was withdrawn; its messages go back");
            give_back(returns, batch, Duration::ZERO).await;
        }
        Undecided::Failed(e) => {
            warn!(%instance, error = %e, "the executor did not decide a turn; it will be retried");
            if counts_as_failed_delivery(&e) {
                abandon(returns, batch, retry_delay(&e)).await;
            } else {
                give_back(returns, batch, retry_delay(&e)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use taskhub_core::{InstanceId, Payload, Tags};

    use super::*;

    fn child(tags: Tags) -> Decision {
        Decision::StartSubOrchestration {
            task_id: 1,
            name: "Child".into(),
            version: None,
            instance_id: InstanceId::new("c").unwrap(),
            input: Payload::null(),
            tags,
            traceparent: None,
        }
    }

    #[test]
    fn tags_within_the_caps_pass_and_tags_over_them_fail_the_turn_naming_the_decision() {
        let caps = TagCaps {
            max_tags: 1,
            ..TagCaps::default()
        };
        let one: Tags = [("team".to_owned(), "ops".to_owned())].into();
        let ok = screen_tags(OrchestrationDecision::new(vec![child(one.clone())]), &caps);
        assert_eq!(ok.decisions, vec![child(one)]);

        let two: Tags = [
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "2".to_owned()),
        ]
        .into();
        let bad = screen_tags(OrchestrationDecision::new(vec![child(two)]), &caps);
        let [Decision::Fail { failure }] = bad.decisions.as_slice() else {
            panic!("{:?}", bad.decisions);
        };
        assert_eq!(failure.error_type, INVALID_TAGS);
        assert!(
            failure
                .message
                .contains("decision 0 (sub-orchestration 'Child')")
                && failure.message.contains("max_tags"),
            "{}",
            failure.message
        );
    }
}
