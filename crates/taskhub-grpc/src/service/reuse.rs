//! The SDKs' `OrchestrationIdReusePolicy { replaceableStatus }` as Taskhub's `ReusePolicy`.
//!
//! With no policy (or an empty list), any existing instance is refused (`ALREADY_EXISTS`), as
//! the reference backends do. Otherwise an existing instance is replaced only if its status is
//! in the list: a finished one is replaced (`RejectActive`), an active one terminated and
//! replaced (`TerminateActive`). The decision is made on the row as read; if the row changes
//! before the start commits, Taskhub's policy still never replaces an active instance that
//! the list did not name (it may only refuse).

use taskhub::{OrchestrationStatus, ReusePolicy};

/// What a start does with an instance ID whose current status is `existing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Start under this policy.
    Start(ReusePolicy),
    /// Refuse: the instance exists with this status, which the list does not name.
    Refuse(OrchestrationStatus),
}

/// Decides on the status read (`None`: no such instance).
pub(crate) fn decide(
    existing: Option<OrchestrationStatus>,
    replaceable: &[OrchestrationStatus],
) -> Decision {
    match existing {
        // Nothing to replace: a start racing ours is refused.
        None => Decision::Start(ReusePolicy::RejectExisting),
        Some(s) if !replaceable.contains(&s) => Decision::Refuse(s),
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
            decide(None, &[]),
            Decision::Start(ReusePolicy::RejectExisting)
        );
        for s in [Pending, Running, Completed, Failed] {
            assert_eq!(decide(Some(s), &[]), Decision::Refuse(s));
        }
    }

    #[test]
    fn only_listed_statuses_are_replaced() {
        let finished = [Completed, Failed, Terminated];
        assert_eq!(
            decide(Some(Failed), &finished),
            Decision::Start(ReusePolicy::RejectActive)
        );
        assert_eq!(decide(Some(Running), &finished), Decision::Refuse(Running));
        // Only Failed replaceable: a Completed instance stays.
        assert_eq!(
            decide(Some(Completed), &[Failed]),
            Decision::Refuse(Completed)
        );
        // Active listed (what JS sends for an empty dedupe list): terminate and replace.
        let all = [Pending, Running, Suspended, Completed, Failed, Terminated];
        assert_eq!(
            decide(Some(Running), &all),
            Decision::Start(ReusePolicy::TerminateActive)
        );
        assert_eq!(
            decide(Some(Suspended), &all),
            Decision::Start(ReusePolicy::TerminateActive)
        );
    }
}
