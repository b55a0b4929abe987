//! The executor seam: what decides an orchestration turn and runs an activity when the code is
//! not in this worker's [`Registry`](crate::Registry).
//!
//! The Rust replay engine is the built-in executor. A [`RemoteExecutor`] is another: it hands
//! the turn's history to code running elsewhere (an SDK worker connected over the Durable Task
//! gRPC protocol, see `taskhub-grpc`), which replays it itself and answers with
//! [`Decision`]s. Everything below the executor stays the runtime's: partitions and leases,
//! fencing, ordered checkpoints, de-duplication, poison handling, timers, continue-as-new,
//! suspend/resume, terminate. The runtime converts decisions into history events and messages
//! in one place and validates them there: an impossible decision fails the orchestration with
//! a clear failure, never the worker.
//!
//! Dropping a future returned by a [`RemoteExecutor`] withdraws its work item (the partition
//! was lost, or the worker is stopping): the executor must not hand it out any more, and a
//! completion that arrives for it later is refused.
//!
//! A [`RemoteExecutor`] decides turns ([`orchestrate`](RemoteExecutor::orchestrate): an
//! [`OrchestrationWork`] in, an [`OrchestrationDecision`] out), runs activities
//! ([`run_activity`](RemoteExecutor::run_activity)) and, when it
//! [`runs_entities`](RemoteExecutor::runs_entities), entity batches
//! ([`run_entity`](RemoteExecutor::run_entity)). A worker started with
//! `Worker::start_with_executor` sends it what its registry does not have.

mod decision;
mod entity;
mod work;

use std::future::Future;
use std::pin::Pin;

pub use decision::{Decision, OrchestrationDecision, OrchestrationSpan};
pub use entity::{EntityBatchOutcome, EntityOperation, EntityWork};
/// The rule an impossible decision list broke: the `error_type` of the failure it ends in.
pub use taskhub_core::DecisionRule;
pub use work::{ActivityOutcome, ActivityWork, OrchestrationWork};

/// A boxed future of an executor call.
pub type ExecutorFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ExecutorError>> + Send + 'a>>;

/// Runs orchestration turns and activities outside this process.
pub trait RemoteExecutor: Send + Sync + 'static {
    /// Decides one orchestration turn: `work` carries the execution's history so far and the
    /// events this turn adds; the answer is what the code did with them.
    fn orchestrate(&self, work: OrchestrationWork) -> ExecutorFuture<'_, OrchestrationDecision>;

    /// Runs one activity.
    fn run_activity(&self, work: ActivityWork) -> ExecutorFuture<'_, ActivityOutcome>;

    /// True if this executor runs entities ([`run_entity`](Self::run_entity)). The runtime
    /// asks it for the batches of entities not registered in Rust only then; otherwise their
    /// operations fail as unregistered. Default false.
    fn runs_entities(&self) -> bool {
        false
    }

    /// Runs one batch of an entity's operations. Default: no worker can
    /// ([`ExecutorError::Unavailable`]); an executor that overrides it says so in
    /// [`runs_entities`](Self::runs_entities).
    fn run_entity(&self, work: EntityWork) -> ExecutorFuture<'_, EntityBatchOutcome> {
        Box::pin(async move {
            Err(ExecutorError::Unavailable {
                what: format!("entity '{}' (this executor runs no entities)", work.entity),
            })
        })
    }
}

/// Why an executor could not answer. The runtime gives the work back to be tried again after
/// a short delay for every kind: [`Unavailable`](Self::Unavailable) without counting it as a
/// failed delivery (a missing worker says nothing about the work), the others counted toward
/// `max_dequeue_count`, so work that hangs or kills every worker it reaches ends in the dead
/// letters (see `worker/orchestration/remote.rs`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecutorError {
    /// No connected worker can take the work now.
    #[error("no connected worker can take {what} now")]
    Unavailable {
        /// The work item, e.g. `orchestration 'Greet' (instance 'abc')`.
        what: String,
    },
    /// The executor already holds as much work waiting for a worker as it may (its backlog
    /// is full): the work goes back to its queue uncounted, and is tried again after a longer
    /// pause than for [`Unavailable`](Self::Unavailable), so that it is not loaded and
    /// refused over and over while the backlog drains.
    #[error("{what} cannot wait for a worker now: {why}")]
    Busy {
        /// The work item.
        what: String,
        /// The limit that was reached.
        why: String,
    },
    /// The worker that took the work did not answer in time.
    #[error("{what} was not answered within {seconds} s")]
    TimedOut {
        /// The work item.
        what: String,
        /// The time allowed.
        seconds: u64,
    },
    /// The worker gave the work back (abandoned it) or disconnected while it had it, and no
    /// other worker took it.
    #[error("{what} was given back by its worker: {reason}")]
    Abandoned {
        /// The work item.
        what: String,
        /// Why.
        reason: String,
    },
}

impl ExecutorError {
    /// True for every kind: the work is given back and tried again.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        true
    }
}
