//! Each durable sender's messages to an entity are applied in send order, and each once.
//!
//! Queues do not keep order: Azure queues are not FIFO, and on every backend a message given
//! back (a failed batch, a lease move) comes again after messages sent later. So requests from
//! orchestrations and entities carry a [`SendOrder`]: a number that grows with every message
//! the sender sends, and the number of its previous message to the same entity when that one
//! was sent within [`SEND_ORDER_WINDOW`]. The entity keeps a [`SenderLog`] per sender (the
//! highest number applied) and:
//!
//! * skips a message whose number it already applied (a redelivery, however late within
//!   [`SENDER_LOG_RETENTION`]);
//! * applies a message whose predecessor it applied (or that names none);
//! * keeps a message that came before its predecessor in its record ([`EarlyMessage`]) until
//!   the predecessor is applied — or, as a safety valve for a predecessor that never comes
//!   (dead-lettered), until it has waited [`REORDER_WINDOW`]; the numbers it then skipped are
//!   remembered as a [`Gap`], so a predecessor that still comes later is applied, not dropped.
//!
//! A sender is an orchestration execution (`instance#execution`) or an entity incarnation
//! (`@name@key#epoch`, a fresh epoch when its row is created again). Messages from clients
//! carry no order; a client's separate calls are unordered, as in Durable Functions.
//!
//! The windows nest so that a log is never forgotten while a message naming it may still
//! come: a sender names a predecessor only if it sent it within [`SEND_ORDER_WINDOW`], and a
//! message is delayed by at most about [`REORDER_WINDOW`] (a crashed worker's visibility
//! timeout and a lease takeover are minutes), both well inside [`SENDER_LOG_RETENTION`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::entity::protocol::EntityRequest;
use crate::ids::{InstanceId, MessageId};
use crate::message::SendOrder;
use crate::time::Timestamp;

/// A sender names its previous message to the same entity as the predecessor only if it sent
/// it at most this long ago.
pub const SEND_ORDER_WINDOW: Duration = Duration::from_secs(10 * 60);

/// How long a message waits for its predecessor before it is applied anyway.
pub const REORDER_WINDOW: Duration = Duration::from_secs(15 * 60);

/// How long an entity remembers a sender after its last message.
pub const SENDER_LOG_RETENTION: Duration = Duration::from_secs(60 * 60);

/// How early a waiting message may be taken for overdue: a backend rounds a wake-up's delay
/// down to its delay unit (Azure: whole seconds), and clocks of two workers differ a little.
pub const WAKE_TOLERANCE: Duration = Duration::from_secs(2);

/// Numbers a sender's log skipped when the reorder window ran out: those strictly between
/// `after` and `before` were not applied then; the ones in `arrived` came since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// The highest number applied before the skip.
    pub after: u64,
    /// The number applied over the gap.
    pub before: u64,
    /// Numbers inside the gap applied since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrived: Vec<u64>,
    /// When the gap was made.
    pub at: Timestamp,
}

/// What an entity knows of one sender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderLog {
    /// The highest number applied.
    pub last: u64,
    /// When its last message was applied.
    pub at: Timestamp,
    /// Numbers skipped by the reorder valve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
}

impl SenderLog {
    /// True if message `n` was applied.
    #[must_use]
    pub fn applied(&self, n: u64) -> bool {
        n <= self.last
            && !self
                .gaps
                .iter()
                .any(|g| g.after < n && n < g.before && !g.arrived.contains(&n))
    }

    fn mark(&mut self, order: SendOrder, now: Timestamp) {
        let n = order.n;
        if n > self.last {
            // A message that names no predecessor (its sender's previous one to this entity
            // is old, or it is the first) may still have earlier ones on their way: the
            // numbers it skips stay open, as the valve's do.
            if order.prev.is_none() && n > self.last + 1 {
                self.gaps.push(Gap {
                    after: self.last,
                    before: n,
                    arrived: Vec::new(),
                    at: now,
                });
            }
            self.last = n;
        } else {
            for g in self.gaps.iter_mut().filter(|g| g.after < n && n < g.before) {
                g.arrived.push(n);
            }
        }
        self.at = now;
    }
}

/// A message that came before its predecessor, kept in the entity's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlyMessage {
    /// The message ID.
    pub message_id: MessageId,
    /// The sending instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<InstanceId>,
    /// The sender's key (see the module docs).
    pub key: String,
    /// Its place in the sender's messages.
    pub order: SendOrder,
    /// The request.
    pub request: EntityRequest,
    /// When it arrived.
    pub since: Timestamp,
}

/// The receiving side: every sender's log and the messages waiting for a predecessor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Inbox {
    /// Per sender key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub senders: BTreeMap<String, SenderLog>,
    /// Messages waiting for their predecessor, in arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub early: Vec<EarlyMessage>,
    /// When the wake-up the entity last sent itself is due (see [`Inbox::wake_needed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_at: Option<Timestamp>,
}

/// What to do with an arriving ordered message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Apply it now.
    Apply,
    /// Already applied (or already waiting): skip it.
    Duplicate,
    /// Its predecessor has not been applied: keep it until it is.
    Wait,
}

impl Inbox {
    /// True if nothing is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.senders.is_empty() && self.early.is_empty() && self.wake_at.is_none()
    }

    /// When the entity must send itself a wake-up, if it must: a message waits and no
    /// wake-up is pending for its deadline (none was sent, the one sent is due already — it
    /// came, or was lost — or it is due later than the oldest deadline). Records it as sent.
    pub fn wake_needed(&mut self, now: Timestamp) -> Option<Timestamp> {
        let Some(next) = self.next_overdue() else {
            self.wake_at = None;
            return None;
        };
        if self.wake_at.is_some_and(|w| w > now && w <= next) {
            return None;
        }
        self.wake_at = Some(next);
        Some(next)
    }

    /// True while the log of some sender must still be kept (see [`SENDER_LOG_RETENTION`]).
    #[must_use]
    pub fn remembers_recent_senders(&self, now: Timestamp) -> bool {
        self.senders
            .values()
            .any(|l| now.saturating_since(l.at) < SENDER_LOG_RETENTION)
    }

    /// The verdict on message `order` from `key` with ID `id`.
    #[must_use]
    pub fn verdict(&self, key: &str, id: &MessageId, order: SendOrder) -> Verdict {
        let log = self.senders.get(key);
        if log.is_some_and(|l| l.applied(order.n))
            || self
                .early
                .iter()
                .any(|e| e.message_id == *id || (e.key == key && e.order.n == order.n))
        {
            return Verdict::Duplicate;
        }
        match order.prev {
            Some(p) if !log.is_some_and(|l| l.applied(p)) => Verdict::Wait,
            _ => Verdict::Apply,
        }
    }

    /// Records message `order` from `key` as applied.
    pub fn mark(&mut self, key: &str, order: SendOrder, now: Timestamp) {
        self.senders
            .entry(key.to_owned())
            .or_insert(SenderLog {
                last: 0,
                at: now,
                gaps: Vec::new(),
            })
            .mark(order, now);
    }

    /// Takes the waiting messages whose predecessor has now been applied.
    pub fn take_ready(&mut self) -> Vec<EarlyMessage> {
        let senders = &self.senders;
        let (ready, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.early).into_iter().partition(|e| {
                e.order
                    .prev
                    .is_none_or(|p| senders.get(&e.key).is_some_and(|l| l.applied(p)))
            });
        self.early = waiting;
        ready
    }

    /// Takes the waiting messages whose reorder window ran out (or runs out within
    /// [`WAKE_TOLERANCE`]: a wake-up delivered early by the queue's delay rounding still
    /// counts), each sender's in number order, recording the numbers they skip as gaps.
    pub fn take_overdue(&mut self, now: Timestamp) -> Vec<EarlyMessage> {
        let due = now.saturating_add(WAKE_TOLERANCE);
        let (mut overdue, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
            .into_iter()
            .partition(|e| e.since.saturating_add(REORDER_WINDOW) <= due);
        self.early = waiting;
        overdue.sort_by(|a, b| a.key.cmp(&b.key).then(a.order.n.cmp(&b.order.n)));
        // Each skips what lies between it and the one before it (of its sender).
        let mut running: BTreeMap<String, u64> = BTreeMap::new();
        for e in &overdue {
            let log = self.senders.entry(e.key.clone()).or_insert(SenderLog {
                last: 0,
                at: now,
                gaps: Vec::new(),
            });
            let last = running.get(&e.key).copied().unwrap_or(log.last);
            if e.order.n > last + 1 {
                log.gaps.push(Gap {
                    after: last,
                    before: e.order.n,
                    arrived: Vec::new(),
                    at: now,
                });
            }
            running.insert(e.key.clone(), last.max(e.order.n));
        }
        overdue
    }

    /// When the oldest waiting message's reorder window runs out.
    #[must_use]
    pub fn next_overdue(&self) -> Option<Timestamp> {
        self.early
            .iter()
            .map(|e| e.since.saturating_add(REORDER_WINDOW))
            .min()
    }

    /// Forgets senders silent for [`SENDER_LOG_RETENTION`] (unless a message of theirs is
    /// waiting) and gaps that old.
    pub fn prune(&mut self, now: Timestamp) {
        let early = &self.early;
        self.senders.retain(|key, log| {
            log.gaps
                .retain(|g| now.saturating_since(g.at) < SENDER_LOG_RETENTION);
            now.saturating_since(log.at) < SENDER_LOG_RETENTION
                || early.iter().any(|e| e.key == *key)
        });
    }
}

/// The sending side of an entity: its own numbering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    /// This incarnation's sender epoch (set by its first batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// Messages sent so far (the last number used).
    #[serde(default)]
    pub sent: u64,
    /// The last message sent to each entity within [`SEND_ORDER_WINDOW`]: number and time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub last_to: BTreeMap<String, (u64, Timestamp)>,
}

impl Outgoing {
    /// True before the entity sent anything.
    #[must_use]
    pub fn is_unused(&self) -> bool {
        self.epoch.is_none() && self.sent == 0 && self.last_to.is_empty()
    }

    /// The order of the next message to `target`.
    pub fn next(&mut self, target: &InstanceId, now: Timestamp) -> SendOrder {
        self.sent += 1;
        let n = self.sent;
        let prev = self
            .last_to
            .insert(target.as_str().to_owned(), (n, now))
            .filter(|(_, at)| now.saturating_since(*at) < SEND_ORDER_WINDOW)
            .map(|(p, _)| p);
        SendOrder { n, prev }
    }

    /// Forgets targets not sent to within [`SEND_ORDER_WINDOW`].
    pub fn prune(&mut self, now: Timestamp) {
        self.last_to
            .retain(|_, (_, at)| now.saturating_since(*at) < SEND_ORDER_WINDOW);
    }
}

/// The key of a sender: its instance and its execution (an entity's: its epoch).
#[must_use]
pub fn sender_key(instance: &InstanceId, execution: &str) -> String {
    // Instance IDs never contain '#', so the key is unambiguous.
    format!("{instance}#{execution}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> Timestamp {
        Timestamp::from_millis(s * 1000)
    }

    fn o(n: u64, prev: Option<u64>) -> SendOrder {
        SendOrder { n, prev }
    }

    fn early(inbox: &mut Inbox, key: &str, order: SendOrder, since: Timestamp) -> MessageId {
        let id = MessageId::random();
        inbox.early.push(EarlyMessage {
            message_id: id.clone(),
            sender: None,
            key: key.to_owned(),
            order,
            request: EntityRequest::DeleteState,
            since,
        });
        id
    }

    #[test]
    fn in_order_applies_out_of_order_waits_and_repeats_are_duplicates() {
        let mut inbox = Inbox::default();
        let id = MessageId::random();
        assert_eq!(inbox.verdict("s", &id, o(1, None)), Verdict::Apply);
        inbox.mark("s", o(1, Some(0)), t(0));
        assert_eq!(inbox.verdict("s", &id, o(1, None)), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(5, Some(3))), Verdict::Wait);
        assert_eq!(inbox.verdict("s", &id, o(3, Some(1))), Verdict::Apply);
        // Another sender's numbers are its own.
        assert_eq!(inbox.verdict("t", &id, o(1, None)), Verdict::Apply);
        assert_eq!(inbox.verdict("t", &id, o(2, Some(1))), Verdict::Wait);
    }

    #[test]
    fn a_waiting_message_runs_once_its_predecessor_did() {
        let mut inbox = Inbox::default();
        inbox.mark("s", o(1, Some(0)), t(0));
        let waiting = early(&mut inbox, "s", o(5, Some(3)), t(1));
        assert_eq!(
            inbox.verdict("s", &waiting, o(5, Some(3))),
            Verdict::Duplicate,
            "a redelivery of a waiting message"
        );
        assert!(inbox.take_ready().is_empty());
        inbox.mark("s", o(3, Some(0)), t(2));
        let ready = inbox.take_ready();
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].message_id, waiting);
        assert!(inbox.early.is_empty());
    }

    #[test]
    fn the_valve_applies_an_overdue_message_and_a_late_predecessor_still_counts() {
        let mut inbox = Inbox::default();
        inbox.mark("s", o(2, Some(0)), t(0));
        early(&mut inbox, "s", o(9, Some(7)), t(10));
        assert_eq!(
            inbox.next_overdue(),
            Some(t(10).saturating_add(REORDER_WINDOW))
        );
        assert!(inbox.take_overdue(t(11)).is_empty());
        let late = t(10).saturating_add(REORDER_WINDOW);
        let overdue = inbox.take_overdue(late);
        assert_eq!(overdue.len(), 1);
        inbox.mark("s", o(9, Some(0)), late);
        let id = MessageId::random();
        // 7 (and 3..8) never came: inside the gap they are not duplicates.
        assert_eq!(inbox.verdict("s", &id, o(7, Some(2))), Verdict::Apply);
        inbox.mark("s", o(7, Some(0)), late);
        assert_eq!(inbox.verdict("s", &id, o(7, Some(2))), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(2, None)), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(9, Some(7))), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(8, Some(7))), Verdict::Apply);
    }

    #[test]
    fn a_message_naming_no_predecessor_leaves_the_numbers_it_skips_open() {
        let mut inbox = Inbox::default();
        let id = MessageId::random();
        // The sender's message 3 is late; 50 came after the send window and names none.
        inbox.mark("s", o(50, None), t(700));
        assert_eq!(
            inbox.verdict("s", &id, o(3, None)),
            Verdict::Apply,
            "not a duplicate"
        );
        inbox.mark("s", o(3, None), t(701));
        assert_eq!(inbox.verdict("s", &id, o(3, None)), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(50, None)), Verdict::Duplicate);
        // A message that names its predecessor skips nothing of this entity's.
        inbox.mark("s", o(60, Some(50)), t(702));
        assert_eq!(inbox.senders["s"].gaps.len(), 1);
    }

    #[test]
    fn overdue_messages_of_one_sender_each_skip_only_what_lies_before_them() {
        let mut inbox = Inbox::default();
        early(&mut inbox, "s", o(4, Some(2)), t(0));
        early(&mut inbox, "s", o(6, Some(4)), t(0));
        let late = t(0).saturating_add(REORDER_WINDOW);
        for e in inbox.take_overdue(late) {
            inbox.mark(&e.key, e.order, late);
        }
        let id = MessageId::random();
        assert_eq!(inbox.verdict("s", &id, o(4, Some(2))), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(6, Some(4))), Verdict::Duplicate);
        assert_eq!(inbox.verdict("s", &id, o(2, None)), Verdict::Apply);
        assert_eq!(inbox.verdict("s", &id, o(5, None)), Verdict::Apply);
    }

    #[test]
    fn a_wake_up_is_sent_for_the_oldest_deadline_unless_one_is_pending() {
        let mut inbox = Inbox::default();
        assert_eq!(inbox.wake_needed(t(0)), None);
        early(&mut inbox, "a", o(5, Some(4)), t(10));
        let first = t(10).saturating_add(REORDER_WINDOW);
        assert_eq!(inbox.wake_needed(t(10)), Some(first));
        assert_eq!(inbox.wake_needed(t(11)), None, "pending");
        // Another message waits, with a later deadline: the pending wake-up comes first.
        early(&mut inbox, "b", o(9, Some(8)), t(20));
        assert_eq!(inbox.wake_needed(t(20)), None);
        // The first one's predecessor came; the wake-up for it is then too early for the
        // other, which gets its own once that one has come.
        inbox.early.retain(|e| e.key != "a");
        assert_eq!(inbox.wake_needed(t(21)), None, "the pending one is earlier");
        let second = t(20).saturating_add(REORDER_WINDOW);
        assert_eq!(inbox.wake_needed(first), Some(second));
        assert_eq!(inbox.take_overdue(second).len(), 1);
        assert_eq!(inbox.wake_needed(second), None);
        assert_eq!(inbox.wake_at, None);
    }

    #[test]
    fn a_wake_up_delivered_early_by_rounding_still_counts() {
        let mut inbox = Inbox::default();
        early(&mut inbox, "a", o(5, Some(4)), t(10));
        let deadline = t(10).saturating_add(REORDER_WINDOW);
        let early_by_a_second = Timestamp::from_millis(deadline.as_millis() - 1000);
        assert_eq!(inbox.take_overdue(early_by_a_second).len(), 1);
    }

    #[test]
    fn silent_senders_are_forgotten_but_not_while_one_of_theirs_waits() {
        let mut inbox = Inbox::default();
        inbox.mark("a", o(1, Some(0)), t(0));
        inbox.mark("b", o(1, Some(0)), t(0));
        early(&mut inbox, "b", o(4, Some(3)), t(1));
        inbox.prune(t(0).saturating_add(SENDER_LOG_RETENTION));
        assert!(!inbox.senders.contains_key("a"));
        assert!(inbox.senders.contains_key("b"));
    }

    #[test]
    fn an_entity_numbers_its_messages_and_names_a_recent_predecessor() {
        let a = InstanceId::new("@c@a").unwrap_or_else(|_| InstanceId::random());
        let b = InstanceId::new("@c@b").unwrap_or_else(|_| InstanceId::random());
        let mut out = Outgoing::default();
        assert_eq!(out.next(&a, t(0)), o(1, None));
        assert_eq!(out.next(&b, t(0)), o(2, None));
        assert_eq!(out.next(&a, t(1)), o(3, Some(1)));
        let later = t(1).saturating_add(SEND_ORDER_WINDOW);
        assert_eq!(out.next(&a, later), o(4, None), "too long ago to name");
        out.prune(later);
        assert_eq!(out.last_to.len(), 1);
    }
}
