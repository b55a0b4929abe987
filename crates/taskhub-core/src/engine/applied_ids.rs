//! The message IDs of the external events an instance applied, so that a redelivered or
//! retried event (`raise_event_with` and an event ID) is applied once — also after the
//! instance continued as new, since the most recent IDs are carried into the next execution.

use std::collections::{HashSet, VecDeque};

use crate::ids::MessageId;

/// How many of the most recently applied event IDs a continue-as-new carries into the next
/// execution (in its `ExecutionStarted`). A retry of an event older than that many later
/// events, across a continue-as-new, is not recognised. At about 35 bytes an ID, this keeps
/// the start event under 10 KB.
pub const CARRIED_EVENT_IDS: usize = 256;

/// Applied event message IDs, in the order they were applied.
#[derive(Debug, Default)]
pub(crate) struct AppliedEventIds {
    set: HashSet<MessageId>,
    order: VecDeque<MessageId>,
}

impl AppliedEventIds {
    /// Records `id` as applied; `false` if it already was.
    pub(crate) fn insert(&mut self, id: MessageId) -> bool {
        if !self.set.insert(id.clone()) {
            return false;
        }
        self.order.push_back(id);
        true
    }

    /// The most recently applied IDs (at most [`CARRIED_EVENT_IDS`]), oldest first.
    pub(crate) fn recent(&self) -> Vec<MessageId> {
        let skip = self.order.len().saturating_sub(CARRIED_EVENT_IDS);
        self.order.iter().skip(skip).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_applied_once_and_the_most_recent_are_carried_in_order() {
        let all: Vec<MessageId> = (0..CARRIED_EVENT_IDS + 10)
            .map(|_| MessageId::random())
            .collect();
        let mut ids = AppliedEventIds::default();
        for id in &all {
            assert!(ids.insert(id.clone()));
        }
        assert!(!ids.insert(all[3].clone()));
        assert_eq!(ids.recent(), all[10..].to_vec());
    }
}
