//! The SDKs' `OrchestrationIdReusePolicy { replaceableStatus }` as Taskhub's `ReusePolicy`.
//!
//! Older clients (the Go SDK v0.6.0, `api/orchestration.go` `OrchestrationIdReusePolicy`)
//! send an action with the list (field 2, which the current protocol reserves): `TERMINATE`
//! means what the current list means; `IGNORE` keeps an existing instance whose status is
//! listed and answers the start with its ID, as Go's own backend does
//! (`backend/sqlite/sqlite.go`, `handleInstanceExists`); `ERROR` (0) is the field's default
//! and so cannot be told from a current client's list: the list is read as replaceable.
//!
//! With no policy (or an empty list), any existing instance is refused (`ALREADY_EXISTS`), as
//! the reference backends do. Otherwise an existing instance is replaced only if its status is
//! in the list: a finished one is replaced (`RejectActive`), an active one terminated and
//! replaced (`TerminateActive`). The decision is made on the row as read; if the row changes
//! before the start commits, Taskhub's policy still never replaces an active instance that
//! the list did not name (it may only refuse).

use taskhub::{OrchestrationStatus, ReusePolicy};

/// The statuses of a finished instance: what a start with no policy from a client whose
/// protos have no reuse policy replaces (`crate::library`).
pub(crate) const FINISHED: [OrchestrationStatus; 3] = [
    OrchestrationStatus::Completed,
    OrchestrationStatus::Failed,
    OrchestrationStatus::Terminated,
];

/// What a start does with an instance ID whose current status is `existing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Start under this policy.
    Start(ReusePolicy),
    /// Refuse: the instance exists with this status, which the list does not name.
    Refuse(OrchestrationStatus),
    /// Start nothing: the instance exists with a listed status and the client asked to keep
    /// it (`IGNORE`); the start answers with its ID.
    Keep,
}

/// What to do with an existing instance whose status is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listed {
    /// Replace it (the current protocol; an older client's `TERMINATE` or `ERROR`).
    Replace,
    /// Keep it (an older client's `IGNORE`).
    Keep,
}

/// Decides on the status read (`None`: no such instance).
pub(crate) fn decide(
    existing: Option<OrchestrationStatus>,
    listed: &[OrchestrationStatus],
    action: Listed,
) -> Decision {
    match existing {
        // Nothing to replace: a start racing ours is refused.
        None => Decision::Start(ReusePolicy::RejectExisting),
        Some(s) if !listed.contains(&s) => Decision::Refuse(s),
        Some(_) if action == Listed::Keep => Decision::Keep,
        Some(s) if s.is_active() => Decision::Start(ReusePolicy::TerminateActive),
        Some(_) => Decision::Start(ReusePolicy::RejectActive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OrchestrationStatus::{Completed, Failed, Pending, Running, Suspended, Terminated};

    #[test]
    fn no_policy_refuses_any_existing_instance() {
        assert_eq!(
            decide(None, &[], Listed::Replace),
            Decision::Start(ReusePolicy::RejectExisting)
        );
        for s in [Pending, Running, Completed, Failed] {
            assert_eq!(decide(Some(s), &[], Listed::Replace), Decision::Refuse(s));
        }
    }

    #[test]
    fn only_listed_statuses_are_replaced() {
        let finished = [Completed, Failed, Terminated];
        assert_eq!(
            decide(Some(Failed), &finished, Listed::Replace),
            Decision::Start(ReusePolicy::RejectActive)
        );
        assert_eq!(
            decide(Some(Running), &finished, Listed::Replace),
            Decision::Refuse(Running)
        );
        // Only Failed replaceable: a Completed instance stays.
        assert_eq!(
            decide(Some(Completed), &[Failed], Listed::Replace),
            Decision::Refuse(Completed)
        );
        // Active listed (what JS sends for an empty dedupe list): terminate and replace.
        let all = [Pending, Running, Suspended, Completed, Failed, Terminated];
        assert_eq!(
            decide(Some(Running), &all, Listed::Replace),
            Decision::Start(ReusePolicy::TerminateActive)
        );
        assert_eq!(
            decide(Some(Suspended), &all, Listed::Replace),
            Decision::Start(ReusePolicy::TerminateActive)
        );
    }

    #[test]
    fn an_older_clients_ignore_keeps_a_listed_instance_and_refuses_the_others() {
        assert_eq!(
            decide(Some(Running), &[Running], Listed::Keep),
            Decision::Keep
        );
        assert_eq!(
            decide(Some(Completed), &[Running], Listed::Keep),
            Decision::Refuse(Completed)
        );
        assert_eq!(
            decide(None, &[Running], Listed::Keep),
            Decision::Start(ReusePolicy::RejectExisting)
        );
    }
}
