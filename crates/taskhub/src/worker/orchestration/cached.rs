//! What an instance's session keeps in memory between batches: the orchestration replayed
//! ([`Live`], and [`Rewinding`] when it was loaded rewound), or the entity's state and record
//! ([`Loaded`]), with the row and the lease they were read under. The session (`intake::session`) owns it; a turn or an entity batch
//! (`entity`) reads and updates it.

use taskhub_core::entity::EntityRecord;
use taskhub_core::{
    ExecutionId, HistoryEvent, OpenChild, OrchestrationSession, OrchestrationStatus, Payload,
};
use taskhub_storage::{ETag, InstanceRow, LeaseFence};

/// An orchestration replayed into memory, and the history it was replayed from.
pub(crate) struct Live {
    /// The orchestration.
    pub session: OrchestrationSession,
    /// The ETag of its history as last loaded or committed (`None`: no history yet).
    pub history_etag: Option<ETag>,
    /// Loaded rewound: what its next turn's checkpoint writes besides the turn (see
    /// [`rewind`](super::rewind)).
    pub rewinding: Option<Rewinding>,
}

impl Live {
    /// A session and the ETag of the history it stands for.
    pub(crate) fn new(session: OrchestrationSession, history_etag: Option<ETag>) -> Self {
        Self {
            session,
            history_etag,
            rewinding: None,
        }
    }

    /// The execution whose history is loaded; `None` while it has not started (a fresh
    /// session, or a start still Pending).
    pub(crate) fn loaded_execution(&self) -> Option<ExecutionId> {
        (self.session.status() != OrchestrationStatus::Pending).then(|| self.session.execution_id())
    }
}

/// A session loaded rewound, until its turn commits (made and used by
/// [`rewind`](super::rewind)).
pub(crate) struct Rewinding {
    /// The history kept; the turn's events follow it.
    pub(super) kept: Vec<HistoryEvent>,
    /// The children the kept history waits for.
    pub(super) children: Vec<OpenChild>,
    /// The reason of the request, passed on to the children rewound with it.
    pub(super) reason: Option<String>,
}

/// What a session keeps between batches.
#[derive(Default)]
pub(crate) struct Cached {
    /// The live orchestration and the history ETag it corresponds to.
    pub session: Option<Live>,
    /// The instance row as last written or read.
    pub row: Option<InstanceRow>,
    /// The lease the cache was built under.
    pub lease: Option<LeaseFence>,
    /// An entity's state and record, as last loaded or committed.
    pub entity: Option<Loaded>,
}

/// An entity as last loaded or committed by this session.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// Its state (`None`: the entity does not exist).
    pub state: Option<Payload>,
    /// Its record (de-duplication, lock, queue, outbox).
    pub record: EntityRecord,
    /// Its row with the ETag, if it has one.
    pub row: Option<InstanceRow>,
}
