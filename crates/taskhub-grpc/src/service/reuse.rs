//! The SDKs' `OrchestrationIdReusePolicy { replaceableStatus }` as Taskhub's `ReusePolicy`: a
//! pure mapping. What the policy does with the row is decided by the client's start, on the
//! row its write depends on (`taskhub::client::start::plan`), so the row is read once.
//!
//! With no policy (or an empty list), any existing instance is refused (`ALREADY_EXISTS`), as
//! the reference backends do: `ReplaceIn(∅)`. Otherwise an existing instance is replaced only
//! if its status is in the list (an active one terminated first): `ReplaceIn(list)`.
//!
//! Older clients (the Go SDK v0.6.0, `api/orchestration.go` `OrchestrationIdReusePolicy`)
//! send an action with the list (field 2, which the current protocol reserves): `TERMINATE`
//! means what the current list means; `IGNORE` keeps an existing instance whose status is
//! listed and answers the start with its ID, as Go's own backend does
//! (`backend/sqlite/sqlite.go`, `handleInstanceExists`): `KeepIn(list)`. `ERROR` (0) is the
//! field's default and so cannot be told from a current client's list: the list is read as
//! replaceable — except from the Go SDK, whose `ERROR` refuses any existing instance.
//!
//! The Java SDK's protos have no reuse policy: its start with none replaces a finished
//! instance (`crate::library`).

use taskhub::{ReusePolicy, StatusSet};
use tonic::Status;

use super::fields;
use crate::library::Library;
use crate::proto::{CreateOrchestrationAction, OrchestrationIdReusePolicy};

/// The request field of the list, as errors name it.
const FIELD: &str = "orchestrationIdReusePolicy.replaceableStatus";

/// The reuse policy of a start request that sent `asked`, from a client of `library`.
///
/// # Errors
/// `INVALID_ARGUMENT` for a number in the list that is no orchestration status.
pub(crate) fn policy(
    asked: Option<&OrchestrationIdReusePolicy>,
    library: Library,
) -> Result<ReusePolicy, Status> {
    let listed = asked.map_or(&[][..], |p| &p.replaceable_status);
    let listed: StatusSet = fields::statuses(listed, FIELD)?.into_iter().collect();
    Ok(mapped(listed, action(asked), asked.is_none(), library))
}

/// The mapping itself: the list, the older clients' action (0 if none), whether the request
/// had a policy at all, and the client's library.
fn mapped(listed: StatusSet, action: i32, no_policy: bool, library: Library) -> ReusePolicy {
    if action == CreateOrchestrationAction::Ignore as i32 {
        return ReusePolicy::KeepIn(listed);
    }
    if library == Library::Java && no_policy {
        // A finished instance (Completed, Failed, Terminated) is replaced.
        return ReusePolicy::ReplaceIn(StatusSet::finished());
    }
    if library == Library::Go && action != CreateOrchestrationAction::Terminate as i32 {
        // The Go SDK's `ERROR` (0): an existing instance is refused whatever its status, as
        // its own backend does (`handleInstanceExists`).
        return ReusePolicy::ReplaceIn(StatusSet::EMPTY);
    }
    ReusePolicy::ReplaceIn(listed)
}

/// An older client's action (field 2; 0 when absent).
#[expect(deprecated, reason = "an older client's action (see the module's doc)")]
fn action(asked: Option<&OrchestrationIdReusePolicy>) -> i32 {
    asked.map_or(0, |p| p.action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub::OrchestrationStatus::{self, Completed, Failed, Running};
    use CreateOrchestrationAction::{Error, Ignore, Terminate};

    fn map(listed: &[OrchestrationStatus], action: CreateOrchestrationAction) -> ReusePolicy {
        let listed = listed.iter().copied().collect();
        mapped(listed, action as i32, false, Library::Other)
    }

    #[test]
    fn the_list_is_what_is_replaced() {
        let none = mapped(StatusSet::EMPTY, 0, true, Library::Other);
        assert_eq!(none, ReusePolicy::ReplaceIn(StatusSet::EMPTY));
        assert_eq!(
            map(&[Completed, Failed], Error),
            ReusePolicy::ReplaceIn(StatusSet::from([Completed, Failed]))
        );
        assert_eq!(
            map(&[Running], Terminate),
            ReusePolicy::ReplaceIn(StatusSet::from([Running]))
        );
    }

    #[test]
    fn an_older_clients_ignore_keeps_a_listed_instance() {
        assert_eq!(
            map(&[Running], Ignore),
            ReusePolicy::KeepIn(StatusSet::from([Running]))
        );
        let go = mapped(
            StatusSet::from([Running]),
            Ignore as i32,
            false,
            Library::Go,
        );
        assert_eq!(go, ReusePolicy::KeepIn(StatusSet::from([Running])));
    }

    #[test]
    fn java_without_a_policy_replaces_a_finished_instance() {
        let java = mapped(StatusSet::EMPTY, 0, true, Library::Java);
        let finished = StatusSet::from([Completed, Failed, OrchestrationStatus::Terminated]);
        assert_eq!(java, ReusePolicy::ReplaceIn(finished));
        // With a policy, Java's list is read as sent.
        let listed = StatusSet::from([Failed]);
        let sent = mapped(listed, 0, false, Library::Java);
        assert_eq!(sent, ReusePolicy::ReplaceIn(listed));
    }

    #[test]
    fn gos_error_refuses_any_existing_instance_and_its_terminate_replaces_the_list() {
        let listed = StatusSet::from([Running, Completed]);
        let error = mapped(listed, Error as i32, false, Library::Go);
        assert_eq!(error, ReusePolicy::ReplaceIn(StatusSet::EMPTY));
        let terminate = mapped(listed, Terminate as i32, false, Library::Go);
        assert_eq!(terminate, ReusePolicy::ReplaceIn(listed));
    }
}
