//! A batch of an entity whose code runs in a remote executor (an SDK worker over gRPC): the
//! entity is not registered in this worker's registry and the executor runs entities.
//!
//! Everything but the operations' code stays the runtime's, with the same rules as a Rust
//! batch (`run_batch_with` is the same code): de-duplication, send order, locks and their
//! queue, scheduled signals, responses, and the checkpoint. The batch runs in three steps:
//! 1. a recording pass (on copies of the state and record) learns which operations run, in
//!    order, and where a client's delete falls between them;
//! 2. the executor runs those operations, one question per stretch between deletes (almost
//!    always one), with the state before the stretch; all the questions of a batch share one
//!    deadline (half the control queue's visibility timeout), as a turn's one question does;
//! 3. a replaying pass on the real state and record takes the executor's results in order:
//!    each call's response carries its operation's result or failure, the successful
//!    operations' signals and starts are sent (the answer's actions are taken with the last
//!    successful operation of their stretch, so their message IDs are the same when the batch
//!    is run again), and the state is the executor's state after the last stretch (or none
//!    after a trailing delete).
//!
//! An answer with fewer results than operations fails the operations left without one. When
//! no answer comes (lease ended, no worker, timeout, abandoned), nothing is committed and the
//! batch goes back as a remote orchestration turn's does (`orchestration/remote.rs`).
//!
//! An entity batch mixes many senders' requests (and locks and releases, which need no
//! executor), so one operation that hangs or crashes the SDK worker must not take the others
//! to the dead letters. A batch with a message delivered before (a counted failure) is
//! *careful*: it asks one operation at a time, each with the state the previous answer left.
//! When one operation's question fails with a counted error, only its message goes back
//! counted (to the dead letters past `max_dequeue_count`); the others go back uncounted at
//! once and run without it. An operation waiting in the record (no message of its own) that
//! fails so in a batch at its last delivery fails (`OperationNotAnswered`) instead.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use taskhub_core::entity::{
    run_batch_with, BatchMessage, BatchOutcome, EntityContext, EntityId, EntityRecord,
    OperationRunner,
};
use taskhub_core::{FailureDetails, Payload, Timestamp};
use taskhub_storage::LeaseFence;

use crate::executor::{EntityBatchOutcome, EntityOperation, EntityWork, ExecutorError};
use crate::worker::orchestration::remote_watch::until_cut;
use crate::worker::orchestration::{decision_deadline, Undecided};
use crate::worker::shared::executor_errors::counts_as_failed_delivery;
use crate::worker::shared::Shared;

/// One thing the recording pass saw.
enum Step {
    /// An operation ran.
    Operation(EntityOperation),
    /// The state was deleted.
    Deleted,
}

/// The recording pass: notes each operation and delete, runs nothing.
#[derive(Default)]
struct Recorder {
    steps: Vec<Step>,
}

impl OperationRunner for Recorder {
    fn run(
        &mut self,
        request_id: &str,
        ctx: &mut EntityContext,
    ) -> Result<Payload, FailureDetails> {
        self.steps.push(Step::Operation(
            EntityOperation::new(
                request_id.to_owned(),
                ctx.operation_name().to_owned(),
                ctx.raw_input().clone(),
            )
            .with_caller(ctx.caller().cloned()),
        ));
        Ok(Payload::null())
    }

    fn state_deleted(&mut self) {
        self.steps.push(Step::Deleted);
    }
}

/// A stretch of operations between deletes, and the executor's answer for it.
struct Stretch {
    /// The state before it.
    state: Option<Payload>,
    operations: Vec<EntityOperation>,
    /// The answer's results, front first (filled in step 2).
    results: VecDeque<Result<Payload, FailureDetails>>,
    answer: Option<EntityBatchOutcome>,
    /// The index of its last successful operation (its actions are taken there).
    last_success: Option<usize>,
    /// Asked one operation at a time (see [`RemoteBatch::careful`]): its state is the one the
    /// previous question's answer left, not known before it.
    chained: bool,
}

/// The replaying pass: hands out the executor's results in order.
struct Replayer {
    stretches: VecDeque<Stretch>,
    /// Operations of the front stretch replayed so far.
    done: usize,
    /// How many results the answers lacked (for the log).
    missing: usize,
}

impl OperationRunner for Replayer {
    fn run(&mut self, _: &str, ctx: &mut EntityContext) -> Result<Payload, FailureDetails> {
        loop {
            let Some(front) = self.stretches.front_mut() else {
                return Err(missing_result(ctx.operation_name(), 0));
            };
            if self.done < front.operations.len() {
                break;
            }
            self.stretches.pop_front();
            self.done = 0;
        }
        let Some(front) = self.stretches.front_mut() else {
            return Err(missing_result(ctx.operation_name(), 0));
        };
        let index = self.done;
        self.done += 1;
        let answered = front.answer.as_ref().map_or(0, |a| a.results.len());
        let Some(result) = front.results.pop_front() else {
            // A partial answer fails the operations it left out rather than asking again: the
            // SDK may have run them (the answer's state has their effects), and running them
            // twice would be worse than a failure their callers see.
            self.missing += 1;
            return Err(missing_result(ctx.operation_name(), answered));
        };
        // The SDK answers a stretch's actions as one list, not per operation: they all go
        // out with the stretch's last successful operation, in the SDK's order, after the
        // responses of the operations before it (a response and a signal of one earlier
        // operation may so reach their targets in another order than the SDK ran them; both
        // are sent, once, with stable message IDs). A careful batch asks one operation at a
        // time, so there each operation's actions go with it.
        if result.is_ok() && front.last_success == Some(index) {
            if let Some(answer) = front.answer.as_mut() {
                for action in std::mem::take(&mut answer.actions) {
                    ctx.push_action(action);
                }
            }
        }
        result
    }
}

fn missing_result(op: &str, answered: usize) -> FailureDetails {
    let mut f = FailureDetails::new(
        "MissingOperationResult",
        format!(
            "the SDK worker answered {answered} result(s) for the batch and none for operation \
             '{op}': it counts as failed (its caller gets this failure)"
        ),
    );
    f.non_retryable = true;
    f
}

/// The entity batch's inputs and where its results go.
pub(super) struct RemoteBatch<'a> {
    /// The entity.
    pub entity: &'a EntityId,
    /// The batch's time.
    pub now: Timestamp,
    /// The lease the batch runs under.
    pub fence: LeaseFence,
    /// The state, updated in place when the executor answered.
    pub state: &'a mut Option<Payload>,
    /// The record, updated in place when the executor answered.
    pub record: &'a mut EntityRecord,
    /// Some of the batch's messages were delivered before and not consumed (a counted
    /// failure, most likely the executor's): ask one operation at a time, so the one that
    /// fails is known and only its message is counted (see [`NotRun::Operation`]).
    pub careful: bool,
    /// The request IDs of the operations this batch's deliveries carry (the others wait in
    /// the record).
    pub delivered: HashSet<String>,
    /// A message of the batch is at its last delivery before the dead letters.
    pub last_chance: bool,
}

/// Why a remote entity batch was not run.
pub(super) enum NotRun {
    /// The batch as a whole (as a remote turn: `orchestration/remote.rs`).
    Batch(Undecided),
    /// One operation, asked alone (a careful batch), failed with a counted executor error:
    /// the message carrying request `request_id` is to blame, not its batch-mates.
    Operation {
        /// The operation's request ID.
        request_id: String,
        /// What the executor said.
        error: ExecutorError,
    },
}

/// True if `entity`'s batches go to the remote executor.
pub(super) fn is_remote(shared: &Shared, entity: &EntityId) -> bool {
    !shared.registry.has_entity(entity.name())
        && shared.executor.as_ref().is_some_and(|e| e.runs_entities())
}

/// Runs `messages` for a remote entity (see the module documentation). Every question of the
/// batch shares one deadline ([`decision_deadline`]): the batch's messages are not renewed
/// while it waits, however many questions it asks.
pub(super) async fn run(
    shared: &Shared,
    batch: RemoteBatch<'_>,
    messages: Vec<BatchMessage>,
) -> Result<BatchOutcome, NotRun> {
    let RemoteBatch {
        entity,
        now,
        fence,
        state,
        record,
        careful,
        delivered,
        last_chance,
    } = batch;
    let mut plan = match record_batch(entity, now, state, record, &messages) {
        Recorded::Local(outcome) => return Ok(outcome),
        Recorded::Remote(plan) => plan,
    };
    if careful {
        plan.stretches = one_at_a_time(plan.stretches);
    }
    let clock = shared.hub.clock().clone();
    let until = clock
        .monotonic()
        .saturating_add(decision_deadline(shared.hub.settings()));
    let mut before: Option<Option<Payload>> = None;
    for stretch in &mut plan.stretches {
        if stretch.chained {
            if let Some(s) = before.take() {
                stretch.state = s;
            }
        }
        let left = until.saturating_sub(clock.monotonic());
        let answer = match ask(shared, entity, fence, stretch, left).await {
            Ok(answer) => answer,
            Err(Undecided::Failed(error)) if careful && counts_as_failed_delivery(&error) => {
                let request_id = stretch
                    .operations
                    .first()
                    .map(|o| o.request_id.clone())
                    .unwrap_or_default();
                if delivered.contains(&request_id) || !last_chance {
                    return Err(NotRun::Operation { request_id, error });
                }
                // Held in the record (no message of its own to count) and the batch is at its
                // last delivery: the operation fails rather than taking its batch-mates to
                // the dead letters.
                EntityBatchOutcome::new(vec![Err(not_answered(&error))], stretch.state.clone())
            }
            Err(why) => return Err(NotRun::Batch(why)),
        };
        before = Some(answer.state.clone());
        stretch.take(answer);
    }
    let (outcome, missing) = replay(plan, entity, now, state, record, messages);
    if missing > 0 {
        tracing::warn!(entity = %entity, missing, "the SDK worker's answer lacked results: those operations failed");
    }
    Ok(outcome)
}

/// The failure of an operation the executor never answered, at its batch's last delivery.
fn not_answered(error: &ExecutorError) -> FailureDetails {
    let mut f = FailureDetails::new(
        "OperationNotAnswered",
        format!("the SDK worker did not run the operation ({error}) on any of its deliveries"),
    );
    f.non_retryable = true;
    f
}

/// The stretches as one question per operation, each after the first of a stretch taking
/// the state the previous answer left.
fn one_at_a_time(stretches: Vec<Stretch>) -> Vec<Stretch> {
    let mut out = Vec::new();
    for s in stretches {
        for (i, op) in s.operations.into_iter().enumerate() {
            out.push(Stretch {
                state: if i == 0 { s.state.clone() } else { None },
                operations: vec![op],
                results: VecDeque::new(),
                answer: None,
                last_success: None,
                chained: i > 0,
            });
        }
    }
    out
}

/// What the recording pass found.
enum Recorded {
    /// No operation runs: the batch is done (state and record updated).
    Local(BatchOutcome),
    /// Operations run: ask the executor for each stretch, then [`replay`].
    Remote(Plan),
}

/// The stretches to ask for, and whether the batch ends with a delete.
struct Plan {
    stretches: Vec<Stretch>,
    trailing_delete: bool,
}

/// The recording pass (step 1), on copies of `state` and `record`; a batch with no operation
/// is applied to them at once.
fn record_batch(
    entity: &EntityId,
    now: Timestamp,
    state: &mut Option<Payload>,
    record: &mut EntityRecord,
    messages: &[BatchMessage],
) -> Recorded {
    let mut recorder = Recorder::default();
    let (mut state_copy, mut record_copy) = (state.clone(), record.clone());
    let recorded = run_batch_with(
        &mut recorder,
        entity,
        now,
        &mut state_copy,
        &mut record_copy,
        messages.to_vec(),
    );
    if !recorder
        .steps
        .iter()
        .any(|s| matches!(s, Step::Operation(_)))
    {
        // Locks, releases, deletes, duplicates only: nothing for the executor.
        *state = state_copy;
        *record = record_copy;
        return Recorded::Local(recorded);
    }
    let trailing_delete = matches!(recorder.steps.last(), Some(Step::Deleted));
    Recorded::Remote(Plan {
        stretches: stretches(state.clone(), recorder.steps),
        trailing_delete,
    })
}

/// The replaying pass (step 3) on the real `state` and `record`, once every stretch has its
/// answer. Returns the outcome and how many operations had no result.
fn replay(
    plan: Plan,
    entity: &EntityId,
    now: Timestamp,
    state: &mut Option<Payload>,
    record: &mut EntityRecord,
    messages: Vec<BatchMessage>,
) -> (BatchOutcome, usize) {
    let final_state = if plan.trailing_delete {
        None
    } else {
        plan.stretches
            .last()
            .and_then(|s| s.answer.as_ref())
            .and_then(|a| a.state.clone())
    };
    let mut replayer = Replayer {
        stretches: plan.stretches.into(),
        done: 0,
        missing: 0,
    };
    let outcome = run_batch_with(&mut replayer, entity, now, state, record, messages);
    *state = final_state;
    (outcome, replayer.missing)
}

impl Stretch {
    /// Takes the executor's answer for this stretch. An answer with more results than
    /// operations cannot be matched to them: every operation fails
    /// (`InvalidEntityBatchResult`) and the state stays as it was.
    fn take(&mut self, answer: EntityBatchOutcome) {
        let n = self.operations.len();
        let answer = if answer.results.len() > n {
            let mut f = FailureDetails::new(
                "InvalidEntityBatchResult",
                format!(
                    "the SDK worker's entity batch result cannot be taken: results: {} for {n} \
                     operation(s)",
                    answer.results.len()
                ),
            );
            f.non_retryable = true;
            EntityBatchOutcome::new(vec![Err(f); n], self.state.clone())
        } else {
            answer
        };
        self.last_success = answer.results.iter().take(n).rposition(Result::is_ok);
        self.results = answer.results.iter().take(n).cloned().collect();
        self.answer = Some(answer);
    }
}

/// The recorded steps as stretches of operations between deletes.
fn stretches(initial: Option<Payload>, steps: Vec<Step>) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    let mut state = initial;
    let mut current: Vec<EntityOperation> = Vec::new();
    let mut close = |ops: &mut Vec<EntityOperation>, state: Option<Payload>| {
        if !ops.is_empty() {
            out.push(Stretch {
                state,
                operations: std::mem::take(ops),
                results: VecDeque::new(),
                answer: None,
                last_success: None,
                chained: false,
            });
        }
    };
    for step in steps {
        match step {
            Step::Operation(op) => current.push(op),
            Step::Deleted => {
                close(&mut current, state.take());
            }
        }
    }
    close(&mut current, state);
    out
}

/// Asks the executor to run one stretch, within `left` of the batch's deadline and while the
/// lease holds.
async fn ask(
    shared: &Shared,
    entity: &EntityId,
    fence: LeaseFence,
    stretch: &Stretch,
    left: Duration,
) -> Result<EntityBatchOutcome, Undecided> {
    let Some(executor) = shared.executor.clone() else {
        return Err(Undecided::Failed(ExecutorError::Unavailable {
            what: format!("entity '{entity}'"),
        }));
    };
    let work = EntityWork::new(
        entity.clone(),
        stretch.state.clone(),
        stretch.operations.clone(),
    );
    let clock = shared.hub.clock().clone();
    let seconds = decision_deadline(shared.hub.settings()).as_secs();
    let what = format!("entity '{entity}'");
    let question = executor.run_entity(work);
    let asked = async move {
        tokio::select! {
            answer = question => answer,
            () = clock.sleep(left) => Err(ExecutorError::TimedOut { what, seconds }),
        }
    };
    match until_cut(
        shared,
        entity.instance_id(),
        fence,
        Some(&shared.slots.orchestrations),
        asked,
    )
    .await
    {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(Undecided::Failed(e)),
        Err(cut) => Err(Undecided::Cut(cut)),
    }
}

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
