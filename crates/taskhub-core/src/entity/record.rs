//! What an entity keeps besides its state, stored with it in one record (the instance row), so
//! that a batch of operations commits as one write: the IDs of recently applied messages
//! (de-duplication), the critical section holding it, the requests waiting for that section
//! to end, and the messages of its last batch that may not have been sent yet. It also keeps
//! each sender's order ([`Inbox`]), the entity's own numbering of what it sends
//! ([`Outgoing`]), and releases that came before their lock request (`released`: that request
//! is then ignored).

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::entity::order::{Inbox, Outgoing};
use crate::entity::protocol::{Caller, EntityRequest};
use crate::ids::{InstanceId, MessageId};
use crate::time::Timestamp;

/// How many applied message IDs an entity remembers beyond its last batch.
pub const RECENT_MESSAGE_IDS: usize = 128;

/// How long the IDs of messages that may come back (see [`EntityRecord::suspect`]) are kept:
/// far longer than a visibility timeout plus a lease takeover.
pub const SUSPECT_RETENTION: Duration = Duration::from_secs(60 * 60);

/// The orchestration whose critical section holds an entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// The orchestration (and its execution).
    pub owner: Caller,
    /// Its lock request ID.
    pub request_id: String,
}

/// A request that waits for a critical section to end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedRequest {
    /// The message it came in.
    pub message_id: MessageId,
    /// The instance that sent it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<InstanceId>,
    /// The request.
    pub request: EntityRequest,
}

/// A message the entity's last batch sends, kept until it is known to be sent (a loader
/// re-sends it otherwise; receivers de-duplicate by message ID).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// The control queue (partition) it goes to.
    pub partition: u32,
    /// The encoded queue message.
    pub body: String,
    /// Its delay in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero_usize(v: &usize) -> bool {
    *v == 0
}

/// An entity's bookkeeping, stored next to its state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EntityRecord {
    /// IDs of the messages applied by the last batches, newest last: a message delivered
    /// again (its batch committed, but the worker died before deleting it) is skipped.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub recent: VecDeque<MessageId>,
    /// The critical section that holds the entity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockHolder>,
    /// Requests waiting for the critical section to end, in arrival order.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub queue: VecDeque<QueuedRequest>,
    /// Messages of the last batch not yet known to be sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outbox: Vec<OutboxEntry>,
    /// On a backend whose checkpoints are not atomic: the newest this many IDs of `recent`
    /// were applied by a batch whose consumed messages may not all be deleted yet (deleting
    /// them is the checkpoint's last step). A session that continues knows they were; one
    /// that loads the record does not, and keeps them as [`suspect`](Self::suspect).
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub unconfirmed: usize,
    /// IDs of messages applied by a batch whose deletes were not seen to finish (a crash, a
    /// lease move), with when that was found: such a message comes back once its visibility
    /// timeout runs out, however many messages the entity applied meanwhile, and is skipped
    /// for [`SUSPECT_RETENTION`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspect: Vec<(MessageId, Timestamp)>,
    /// Lock requests released before they reached this entity (their owner gave them up
    /// while another entity of the lock set was passing them on), with when: such a request is
    /// ignored when it comes, for [`SUSPECT_RETENTION`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<(String, Timestamp)>,
    /// Per-sender order and de-duplication of requests from orchestrations and entities.
    #[serde(default, skip_serializing_if = "Inbox::is_empty")]
    pub inbox: Inbox,
    /// The numbering of the requests this entity sends.
    #[serde(default, skip_serializing_if = "Outgoing::is_unused")]
    pub outgoing: Outgoing,
}

impl EntityRecord {
    /// True if the row can be deleted once the entity has no state: no lock, no waiting
    /// request, nothing to send, and nothing still needed to tell a repeat or a late message
    /// (suspects, early releases, a sender heard from within
    /// [`SENDER_LOG_RETENTION`](crate::entity::order::SENDER_LOG_RETENTION)) at `now`.
    #[must_use]
    pub fn is_idle(&self, now: Timestamp) -> bool {
        self.lock.is_none()
            && self.queue.is_empty()
            && self.outbox.is_empty()
            && self.inbox.early.is_empty()
            && self.suspect.is_empty()
            && self.released.is_empty()
            && !self.inbox.remembers_recent_senders(now)
    }

    /// For a record just loaded from storage: the IDs its last batch applied whose deletes
    /// were not confirmed become suspects (found `now`).
    pub fn after_load(&mut self, now: Timestamp) {
        let skip = self.recent.len().saturating_sub(self.unconfirmed);
        let ids: Vec<MessageId> = self.recent.iter().skip(skip).cloned().collect();
        for id in ids {
            if !self.suspect.iter().any(|(s, _)| *s == id) {
                self.suspect.push((id, now));
            }
        }
        self.unconfirmed = 0;
    }

    /// Forgets suspects and early releases older than [`SUSPECT_RETENTION`].
    pub(crate) fn prune_suspects(&mut self, now: Timestamp) {
        self.suspect
            .retain(|(_, at)| now.saturating_since(*at) < SUSPECT_RETENTION);
        self.released
            .retain(|(_, at)| now.saturating_since(*at) < SUSPECT_RETENTION);
    }

    /// Remembers the IDs applied by a batch, keeping at least all of them and at most
    /// [`RECENT_MESSAGE_IDS`] more.
    pub(crate) fn remember(&mut self, ids: Vec<MessageId>) {
        self.remember_at_most(ids, RECENT_MESSAGE_IDS);
    }

    /// Keeps only the newest `keep` remembered IDs.
    pub fn forget_all_but(&mut self, keep: usize) {
        while self.recent.len() > keep {
            self.recent.pop_front();
        }
    }

    fn remember_at_most(&mut self, ids: Vec<MessageId>, extra: usize) {
        let keep = extra.max(ids.len());
        self.recent.extend(ids);
        while self.recent.len() > keep {
            self.recent.pop_front();
        }
    }
}
