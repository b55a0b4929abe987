//! Runtime status: Taskhub's `OrchestrationStatus` ↔ the protocol's enum.

use taskhub::OrchestrationStatus;

use crate::proto::OrchestrationStatus as P;

/// Taskhub's status as the protocol's.
#[must_use]
pub fn status_to_proto(s: OrchestrationStatus) -> P {
    match s {
        OrchestrationStatus::Pending => P::Pending,
        OrchestrationStatus::Suspended => P::Suspended,
        OrchestrationStatus::Completed => P::Completed,
        OrchestrationStatus::Failed => P::Failed,
        OrchestrationStatus::Terminated => P::Terminated,
        OrchestrationStatus::ContinuedAsNew => P::ContinuedAsNew,
        // Running, and any status a later version adds.
        _ => P::Running,
    }
}

/// The protocol's status as Taskhub's; `None` for `CANCELED`, which Taskhub never gives an
/// instance (no SDK produces it), and for a number the protocol does not define.
#[must_use]
pub fn status_from_proto(value: i32) -> Option<OrchestrationStatus> {
    Some(match P::try_from(value).ok()? {
        P::Running => OrchestrationStatus::Running,
        P::Completed => OrchestrationStatus::Completed,
        P::ContinuedAsNew => OrchestrationStatus::ContinuedAsNew,
        P::Failed => OrchestrationStatus::Failed,
        P::Terminated => OrchestrationStatus::Terminated,
        P::Pending => OrchestrationStatus::Pending,
        P::Suspended => OrchestrationStatus::Suspended,
        P::Canceled => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_and_canceled_has_no_equivalent() {
        for s in OrchestrationStatus::ALL {
            assert_eq!(status_from_proto(status_to_proto(s) as i32), Some(s), "{s}");
        }
        assert_eq!(status_to_proto(OrchestrationStatus::Running) as i32, 0);
        assert_eq!(status_to_proto(OrchestrationStatus::Suspended) as i32, 7);
        assert_eq!(status_from_proto(P::Canceled as i32), None);
        assert_eq!(status_from_proto(42), None);
    }
}
