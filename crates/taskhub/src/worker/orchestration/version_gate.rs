//! The version gate of a turn (see `worker::versioning`): the execution a turn runs is judged
//! against this worker's version before the engine sees the batch.

use taskhub_core::{EventKind, OrchestrationSession, OrchestrationStatus};
use tracing::{debug, warn};

use super::versioning::{self, Verdict};
use crate::settings::Settings;
use crate::worker::shared::delivery::Delivery;

/// What the gate lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    /// The turn runs (a mismatch under `version_failure = fail` has made the session refuse
    /// the execution: the turn fails it).
    Run,
    /// Another worker's version: the batch goes back, uncounted.
    Reject,
}

/// Judges the version of the execution this turn runs (the start's in `batch` for a new
/// execution, else the loaded one's; a finished or not yet started one is not judged: the
/// engine discards or holds its messages).
pub(super) fn check_version(
    settings: &Settings,
    session: &mut OrchestrationSession,
    batch: &[Delivery],
    new_execution: bool,
) -> Gate {
    let (name, version) = if new_execution {
        let Some((name, version)) = batch.iter().find_map(|d| match &d.message.event {
            EventKind::ExecutionStarted { name, version, .. } => {
                Some((name.clone(), version.clone()))
            }
            _ => None,
        }) else {
            return Gate::Run;
        };
        (name, version)
    } else if session.status().is_active() && session.status() != OrchestrationStatus::Pending {
        (session.name(), session.version())
    } else {
        return Gate::Run;
    };
    match versioning::judge(settings, &name, version.as_deref()) {
        Verdict::Run => Gate::Run,
        Verdict::Reject => {
            debug!(orchestration = %name, ?version, "rejecting a turn of another version");
            Gate::Reject
        }
        Verdict::Fail(failure) => {
            warn!(orchestration = %name, ?version, "failing an instance of another version");
            session.refuse(failure);
            Gate::Run
        }
    }
}
