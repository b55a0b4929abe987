//! [`Dispatcher`]: the SDK workers connected over `GetWorkItems` as the runtime's
//! [`RemoteExecutor`]. An executor call becomes a work item; the dispatcher hands it to a
//! connected worker with room (never more than the worker declared), under a completion
//! token of its own, and the call resolves when the worker answers under that token.
//!
//! * A worker that abandons an item, or whose stream ends (disconnected, killed), gives its
//!   items back at once: they go to another connected worker (the same one if it is alone).
//! * An item held longer than its timeout is taken back: the call answers
//!   [`ExecutorError::TimedOut`] (the runtime retries the turn or the activity) and a late
//!   answer is refused.
//! * An item that waits [`DispatcherSettings::no_worker_wait`] with no worker connected
//!   answers [`ExecutorError::Unavailable`].
//! * An item given back [`DispatcherSettings::give_back_limit`] times (abandoned, or its
//!   worker went away with it) answers [`ExecutorError::Abandoned`]: the runtime counts a
//!   failed delivery, so a work item that makes every worker give up ends in the dead letters
//!   instead of circling between workers.
//! * Dropping the call's future withdraws the item: it is not handed out any more and a
//!   completion under its token answers `NOT_FOUND`.
//! * Backpressure: what a worker has not read yet waits in its stream queue (`queue`),
//!   bounded by [`DispatcherSettings::stream_queue_items`] and `stream_queue_bytes`: a
//!   worker whose queue is full gets nothing more, whatever capacity it declared. A stream
//!   that leaves items unread for [`DispatcherSettings::stream_read_timeout`] is closed
//!   (`UNAVAILABLE`) and its items go to the other workers at once; an item taken back
//!   unread (timed out, withdrawn, abandoned) leaves the queue, so it is never queued twice
//!   on one stream.
//! * An item that waits [`DispatcherSettings::busy_wait`] while workers are connected but
//!   none has room answers [`ExecutorError::Busy`]: the runtime gives its work back uncounted
//!   and asks again shortly (a turn never counts as failed for the time it waited).
//! * A turn over [`DispatcherSettings::inline_history_bytes`] goes to a worker that streams
//!   history without its past events (`requiresHistoryStreaming`), which it then reads with
//!   `StreamInstanceHistory` (`streaming`); with only other workers connected it is refused
//!   at once, naming its size, instead of killing their streams.
//! * Memory: the work items waiting for a worker (none connected, or all full) hold at most
//!   [`DispatcherSettings::waiting_bytes`] (one item of any size when none waits); past it a
//!   call answers [`ExecutorError::Busy`] at once, and its work goes back to its queue
//!   instead of holding its history and input here (the runtime tries it again after a few
//!   seconds).
//! * A completion token is bound to the stream it was issued on (see `calls`). A worker
//!   whose protos have no token (the Go SDK) completes by instance (and task) ID, matched to
//!   the items of the streams on its connection (`key`); what each worker is sent (health
//!   pings, entity batches) is decided from its request in `profile`.
//! * A worker that sends work-item filters gets only the items they name (`filters`); an item
//!   no connected worker takes waits as if none were connected, and is never failed for it.
//! * An orchestration turn answered with more than
//!   [`DispatcherSettings::max_actions_per_turn`] actions fails its execution
//!   ([`INVALID_ACTION`], naming the cap).
//!
//! Module map: `state` (the bookkeeping, synchronous: workers with their declared capacity,
//! the queue per kind, items out under a fresh token per hand-out), `queue` (a worker's
//! stream queue), `wait` (an executor call's wait, on the hub's `Clock`), `calls` (the worker
//! half of the gRPC service), `stream` (a worker's stream and its watchdog), `request` and
//! `actions` (the conversions out and in; a malformed action becomes one failing decision
//! naming the action and the field), `entity_actions` (an SDK orchestration's entity messages
//! as the `$entity` events a Rust orchestration sends), `entity` (entity batches), `past`
//! (each instance's past events kept encoded between turns, bounded by `history_cache_bytes`),
//! `settings`, `profile`, `key`, `chunks` (a chunked answer's parts put together in order),
//! `filters`, `streaming` (`StreamInstanceHistory`), `rewind` (a `rewindOrchestration`
//! answer checked against the history sent).

pub(crate) mod actions;
mod calls;
mod chunks;
mod entity;
mod entity_actions;
mod filters;
mod key;
mod past;
mod profile;
mod queue;
mod request;
mod rewind;
mod settings;
mod state;
mod stream;
mod streaming;
mod wait;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use taskhub::admin::{UnmatchedSource, UnmatchedWork};
use taskhub::executor::{
    ActivityOutcome, ActivityWork, Decision, EntityBatchOutcome, EntityWork, ExecutorError,
    ExecutorFuture, OrchestrationDecision, OrchestrationWork, RemoteExecutor,
};
use taskhub_storage::Clock;

pub use actions::INVALID_ACTION;
pub use entity::INVALID_ENTITY_RESULT;
pub use settings::DispatcherSettings;

use crate::proto::work_item::Request;
use past::PastCache;
use rewind::RewindAnswer;
use state::{Kind, Refused, Reply, State};

/// Hands the runtime's work to connected SDK workers. Cheap to clone; plug the same one into
/// the runtime (as its [`RemoteExecutor`]) and into the endpoint
/// ([`GrpcConfig::with_workers`](crate::GrpcConfig::with_workers)).
#[derive(Clone, Debug)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    /// The past events of recent turns, encoded (a separate lock: encoding is not quick).
    past: Arc<Mutex<PastCache>>,
    clock: Arc<dyn Clock>,
    settings: DispatcherSettings,
}

impl Dispatcher {
    /// A dispatcher with no worker connected yet; `clock` times its waits (the hub's clock).
    #[must_use]
    pub fn new(clock: Arc<dyn Clock>, settings: DispatcherSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new({
                    let mut state = State::new(clock.monotonic());
                    state.set_give_back_limit(settings.give_back_limit);
                    state.set_stream_bounds(settings.stream_bounds());
                    state.set_waiting_limit(settings.waiting_bytes.max(1));
                    state.set_inline_limit(settings.inline_history_bytes.max(1));
                    state
                }),
                past: Arc::new(Mutex::new(PastCache::new(settings.history_cache_bytes))),
                clock,
                settings,
            }),
        }
    }

    /// Its settings.
    #[must_use]
    pub fn settings(&self) -> &DispatcherSettings {
        &self.inner.settings
    }

    /// How many SDK workers are connected now.
    #[must_use]
    pub fn connected_workers(&self) -> usize {
        self.inner.lock().connected()
    }

    /// The most orchestration and activity work items that were waiting or out at once so
    /// far (how much work the runtime hands over concurrently; for benchmarks).
    #[must_use]
    pub fn peak_items(&self) -> [usize; 2] {
        self.inner.lock().peak()
    }

    /// The work items waiting because no connected SDK worker's work-item filters take them
    /// (every waiting item while no worker is connected), by kind, with the names they wait for
    /// (bounded): what the HTTP API's stats, partitions page and scale recommendation show
    /// (`HttpConfig::with_unmatched` in `taskhub-http`, [`HubAdmin::scale_seeing`]). Such an
    /// item waits here `no_worker_wait` at a time, then goes back to its queue for about a
    /// second and comes back: the count is of those here now.
    ///
    /// [`HubAdmin::scale_seeing`]: taskhub::admin::HubAdmin::scale_seeing
    #[must_use]
    pub fn unmatched(&self) -> UnmatchedWork {
        self.inner.lock().unmatched()
    }

    /// A reader of [`unmatched`](Self::unmatched) to hand to the HTTP API.
    #[must_use]
    pub fn unmatched_source(&self) -> UnmatchedSource {
        let me = self.clone();
        Arc::new(move || me.unmatched())
    }

    /// How many work items (health pings included) wait unread on each connected worker's
    /// stream, by stream number (for tests and diagnostics: a stream that reads nothing for
    /// [`DispatcherSettings::stream_read_timeout`] is closed).
    #[must_use]
    pub fn unread_items(&self) -> Vec<(u64, usize)> {
        self.inner.lock().unread()
    }

    /// Ends every worker's stream and every call waiting for an answer (they answer
    /// [`ExecutorError::Abandoned`]); later calls too. For shutdown: the endpoint's graceful
    /// stop waits for open streams.
    pub fn close(&self) {
        self.inner.lock().close();
    }

    /// Submits a work item and waits for its answer. `rebuild` makes its request, now for the
    /// first hand-out and again after a give-back; `what` names the work in errors (built only
    /// for one).
    async fn run(
        &self,
        kind: Kind,
        rebuild: state::Rebuild,
        what: &(dyn Fn() -> String + Sync),
    ) -> Result<Reply, ExecutorError> {
        let request = rebuild();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let now = self.inner.clock.monotonic();
        let submitted = self
            .inner
            .lock()
            .submit_once(kind, request, rebuild, tx, now);
        match submitted {
            Ok(id) => wait::answer(&self.inner, kind, id, now, rx, what).await,
            Err(Refused::Closed) => Err(ExecutorError::Unavailable { what: what() }),
            Err(Refused::TooLarge { bytes, limit }) => Err(ExecutorError::Abandoned {
                what: what(),
                reason: format!(
                    "its work item is {} KiB with the turn's history, over the {} KiB an SDK \
                     worker is sent whole, and no connected worker announced history streaming \
                     (WORKER_CAPABILITY_HISTORY_STREAMING; the .NET SDK does); connect one, or \
                     keep the orchestration's history smaller (continue-as-new)",
                    bytes / 1024,
                    limit / 1024
                ),
            }),
            Err(Refused::Backlog { waiting, limit }) => Err(ExecutorError::Busy {
                what: what(),
                why: format!(
                    "{} KiB of work items already wait for the SDK workers \
                     (`grpc_waiting_mib`: {} KiB)",
                    waiting / 1024,
                    limit / 1024
                ),
            }),
        }
    }

    /// Makes `work`'s turn request, its past events encoded from the dispatcher's cache.
    fn orchestrator_rebuild(&self, work: &Arc<OrchestrationWork>) -> state::Rebuild {
        let source = Arc::clone(work);
        let cache = Arc::clone(&self.inner.past);
        Box::new(move || request::orchestrator_request(&source, &cache))
    }
}

/// Whether a turn's decision ends its execution (its encoded past is of no more use).
fn ends_execution(d: &OrchestrationDecision) -> bool {
    d.decisions.iter().any(|d| {
        matches!(
            d,
            Decision::Complete { .. }
                | Decision::Fail { .. }
                | Decision::Terminate { .. }
                | Decision::ContinueAsNew { .. }
        )
    })
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RemoteExecutor for Dispatcher {
    fn orchestrate(&self, work: OrchestrationWork) -> ExecutorFuture<'_, OrchestrationDecision> {
        Box::pin(async move {
            let work = Arc::new(work);
            let what = || {
                format!(
                    "orchestration '{}' (instance '{}')",
                    work.name, work.instance
                )
            };
            let rebuild = self.orchestrator_rebuild(&work);
            match self.run(Kind::Orchestration, rebuild, &what).await? {
                Reply::Orchestrator(r) => {
                    let r = match rewind::rewind_answer(&work, &r) {
                        RewindAnswer::None => r,
                        RewindAnswer::Accepted => match self.ask_again(&work, &what).await? {
                            Ok(r) => r,
                            Err(failure) => return Ok(rewind::failed(failure)),
                        },
                        RewindAnswer::Refused(failure) => return Ok(rewind::failed(failure)),
                    };
                    let decision = actions::orchestration_decision(
                        &work.instance,
                        &work.execution_id,
                        &r,
                        self.inner.settings.max_actions_per_turn,
                    );
                    if ends_execution(&decision) {
                        self.inner
                            .past
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .forget(&work.instance);
                    }
                    Ok(decision)
                }
                other => Err(abandoned(other, what())),
            }
        })
    }

    fn run_activity(&self, work: ActivityWork) -> ExecutorFuture<'_, ActivityOutcome> {
        Box::pin(async move {
            let work = Arc::new(work);
            let what = || {
                format!(
                    "activity '{}' (task {} of instance '{}')",
                    work.name, work.task_id, work.instance
                )
            };
            let source = Arc::clone(&work);
            let rebuild: state::Rebuild = Box::new(move || {
                Request::ActivityRequest(request::activity_request(&source)).into()
            });
            match self.run(Kind::Activity, rebuild, &what).await? {
                Reply::Activity(r) => Ok(actions::activity_outcome(&r)),
                other => Err(abandoned(other, what())),
            }
        })
    }

    fn runs_entities(&self) -> bool {
        true
    }

    fn run_entity(&self, work: EntityWork) -> ExecutorFuture<'_, EntityBatchOutcome> {
        Box::pin(async move {
            let work = Arc::new(work);
            let what = || {
                format!(
                    "entity batch of '{}' ({} operations)",
                    work.entity,
                    work.operations.len()
                )
            };
            let source = Arc::clone(&work);
            let rebuild: state::Rebuild =
                Box::new(move || Request::EntityRequestV2(entity::entity_request(&source)).into());
            match self.run(Kind::Entity, rebuild, &what).await? {
                Reply::Entity(r) => Ok(entity::entity_outcome(&work, &r)),
                other => Err(abandoned(other, what())),
            }
        })
    }
}

/// The error of a turn, activity or batch whose reply is not its answer: given up (why), or
/// answered as another kind of work item (which).
fn abandoned(reply: Reply, what: String) -> ExecutorError {
    let reason = match reply {
        Reply::GivenUp(reason) => reason,
        Reply::Orchestrator(_) => "answered as an orchestration".into(),
        Reply::Activity(_) => "answered as an activity".into(),
        Reply::Entity(_) => "answered as an entity batch".into(),
    };
    ExecutorError::Abandoned { what, reason }
}
