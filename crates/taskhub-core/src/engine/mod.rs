//! The replay engine: history + new messages → new history events + actions. No I/O.
//!
//! See `docs/ARCHITECTURE.md` (and `docs/MODULES.md`, "One turn, in full") for the data flow
//! of one turn.

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
