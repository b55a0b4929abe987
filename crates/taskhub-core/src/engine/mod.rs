//! The replay engine: history + new messages → new history events + actions. No I/O.
//!
//! One turn, in full (`docs/ARCHITECTURE.md` has the short version):
//!
//! ```text
//!  lease manager holds partition P under epoch E  ──►  poller of control-P dequeues (each
//!         │                                             delivery remembers E)
//!         ▼
//!  messages for instance X (from its control queue, grouped by the runtime, or an activity
//!  result this worker produced, handed over in process with the work item's receipt;
//!  deliveries whose epoch is no longer P's are released at once, uncounted, and a session
//!  cached under another (partition, epoch) is dropped)
//!         │
//!         ▼
//!  OrchestrationSession       ← OrchestrationSession::load(registry, X, history) replays once;
//!    │                          an extended session keeps it in memory between turns
//!    │  turn(TurnInput { now, messages })
//!    │   1. record OrchestratorStarted(now)           (now = ctx.now() for this turn)
//!    │   2. per message, in order (ExecutionStarted first):
//!    │        discard with a reason if finished / stale execution / duplicate / not started /
//!    │        invalid (after a continue-as-new: events and untargeted terminate, suspend and
//!    │        resume are AwaitingNextExecution, re-sent by the runtime behind the next start;
//!    │        in the turn that continues, events are carried over, or dropped and named in
//!    │        ContinuedAsNew); else record its event (with the message ID), deliver it to the
//!    │        waiting future, and poll the orchestration future if it was woken
//!    │   3. record each action the code took as an event (TaskScheduled, TimerCreated, ...)
//!    │   4. if the code returned: ExecutionCompleted / ExecutionFailed / ContinuedAsNew
//!    │   5. record OrchestratorCompleted
//!    ▼
//!  TurnResult { new_events, actions, custom_status, logs, discarded, status }
//!         │
//!         ▼
//!  runtime: one checkpoint fenced by (P, E), then the actions
//! ```
//!
//! Replay is the same, except that recorded actions are matched against the code's
//! (`replay.rs`). Task IDs are assigned in the order the code schedules work, from 0, and
//! correlate each completion with its task. Polling is waker-driven: a completion wakes only
//! the futures waiting on it, and `when_all` re-polls only woken children, so a turn costs
//! O(new events), not O(history). Turns an SDK worker decides: `remote.rs`; rewind: [`rewind`].

mod applied_ids;
mod decision;
mod output;
pub(crate) mod remote;
mod remote_locks;
mod replay;
pub mod rewind;
mod session;
mod turn;

pub use applied_ids::CARRIED_EVENT_IDS;
pub use decision::{Decision, OrchestrationDecision, OrchestrationSpan};
pub use output::{Action, DiscardReason, Discarded, TurnInput, TurnResult};
pub use remote::{DecisionRule, PendingTurn, TurnStep};
pub use rewind::{OpenChild, RewindPlan};
pub use session::OrchestrationSession;

use std::sync::Arc;

use crate::history::HistoryEvent;
use crate::ids::InstanceId;
use crate::registry::Registry;

/// One-shot turn: replays `history`, then applies `input`. Equivalent to
/// [`OrchestrationSession::load`] followed by [`OrchestrationSession::turn`].
#[must_use]
pub fn run_turn(
    registry: Arc<Registry>,
    instance_id: InstanceId,
    history: &[HistoryEvent],
    input: TurnInput,
) -> TurnResult {
    OrchestrationSession::load(registry, instance_id, history).turn(input)
}
