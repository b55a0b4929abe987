//! The version gate of a turn (see `worker::versioning`): the execution a turn runs is judged
//! against this worker's version before the engine sees the batch.

use taskhub_core::{EventKind, OrchestrationSession, OrchestrationStatus};
use tracing::{debug, warn};

use super::super::delivery::Delivery;
use super::super::versioning::{self, Verdict};
use super::super::Shared;

/// Judges the version of the execution this turn runs (the start's in `batch` for a new
/// execution, else the loaded one's; a finished or not yet started one is not judged: the
/// engine discards or holds its messages). False: reject the turn. A mismatch under
/// `version_failure = fail` makes the turn fail the execution.
pub(super) fn check_version(
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
