//! What a start does when its instance ID is in use: [`ReusePolicy`], and [`StatusSet`], the
//! statuses a policy names.

use taskhub_core::OrchestrationStatus;

/// A set of orchestration statuses (small and `Copy`): the statuses a [`ReusePolicy`] replaces
/// or keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusSet {
    bits: u32,
}

impl StatusSet {
    /// No status.
    pub const EMPTY: Self = Self { bits: 0 };

    /// Every status.
    #[must_use]
    pub fn all() -> Self {
        OrchestrationStatus::ALL.into_iter().collect()
    }

    /// Completed, Failed and Terminated: the statuses of a finished instance.
    #[must_use]
    pub fn finished() -> Self {
        Self::all().filter(OrchestrationStatus::is_terminal)
    }

    /// True if `status` is in the set.
    #[must_use]
    pub fn contains(self, status: OrchestrationStatus) -> bool {
        self.bits & bit(status) != 0
    }

    /// The set with `status` added.
    #[must_use]
    pub fn with(self, status: OrchestrationStatus) -> Self {
        Self {
            bits: self.bits | bit(status),
        }
    }

    /// True if the set has no status.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The statuses of the set that `keep` accepts.
    fn filter(self, keep: impl Fn(OrchestrationStatus) -> bool) -> Self {
        OrchestrationStatus::ALL
            .into_iter()
            .filter(|s| self.contains(*s) && keep(*s))
            .collect()
    }
}

/// The bit of `status` (its place in [`OrchestrationStatus::ALL`]).
fn bit(status: OrchestrationStatus) -> u32 {
    OrchestrationStatus::ALL
        .iter()
        .position(|s| *s == status)
        .map_or(0, |i| 1 << i)
}

impl FromIterator<OrchestrationStatus> for StatusSet {
    fn from_iter<T: IntoIterator<Item = OrchestrationStatus>>(iter: T) -> Self {
        iter.into_iter().fold(Self::EMPTY, Self::with)
    }
}

impl<const N: usize> From<[OrchestrationStatus; N]> for StatusSet {
    fn from(statuses: [OrchestrationStatus; N]) -> Self {
        statuses.into_iter().collect()
    }
}

/// What a start does when the instance ID is already in use. Whatever the policy, the start is
/// decided on the row its write is conditional on: if the row changes first, the start is
/// decided again on the new row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReusePolicy {
    /// Refuse if the instance is Pending, Running or Suspended; replace a finished one. Default.
    #[default]
    RejectActive,
    /// Refuse if the instance exists at all.
    RejectExisting,
    /// Terminate an active instance, then start the new execution; replace a finished one.
    TerminateActive,
    /// Replace an instance whose status is in the set (terminating it first if it is active);
    /// refuse any other. The empty set is [`RejectExisting`](Self::RejectExisting).
    ReplaceIn(StatusSet),
    /// Keep an instance whose status is in the set: start nothing, and answer with its ID (the
    /// Durable Task SDKs' older `IGNORE` action); refuse any other.
    KeepIn(StatusSet),
}

/// What a start does with the instance already under its ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnExisting {
    /// Replace it (terminating it first if it is active).
    Replace,
    /// Keep it, start nothing, and answer with its ID.
    Keep,
    /// Refuse the start (`AlreadyExists`).
    Refuse,
}

impl ReusePolicy {
    /// What this policy does with an existing instance in `status`.
    pub(crate) fn on_existing(self, status: OrchestrationStatus) -> OnExisting {
        let replace = match self {
            Self::RejectActive => !status.is_active(),
            Self::RejectExisting => false,
            Self::TerminateActive => true,
            Self::ReplaceIn(set) => set.contains(status),
            Self::KeepIn(set) if set.contains(status) => return OnExisting::Keep,
            Self::KeepIn(_) => false,
        };
        if replace {
            OnExisting::Replace
        } else {
            OnExisting::Refuse
        }
    }
}
