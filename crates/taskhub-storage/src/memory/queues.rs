//! Queues with visibility timeouts.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use taskhub_core::Timestamp;

use super::state::{Now, State};
use super::{MemoryStore, Op};
use crate::error::StorageResult;
use crate::queue::{Dequeued, NewQueueMessage, QueueName, QueueStats, QueueStore, Receipt};

/// One queue: messages by sequence number (enqueue order).
#[derive(Debug, Default)]
pub(super) struct QueueState {
    next_seq: u64,
    messages: BTreeMap<u64, StoredMessage>,
}

impl QueueState {
    /// Removes every message (the sequence goes on, so no receipt is issued twice); returns
    /// how many.
    pub(super) fn clear(&mut self) -> u64 {
        let count = self.messages.len() as u64;
        self.messages.clear();
        count
    }
}

#[derive(Debug)]
struct StoredMessage {
    body: String,
    enqueued_at: Timestamp,
    /// Monotonic time from which the message may be dequeued.
    visible_at: Duration,
    dequeue_count: u32,
    /// The receipt of the current delivery; `None` when nobody holds the message.
    receipt: Option<Receipt>,
}

/// What happens to a held message's delivery when its visibility changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Still held, under a new receipt (`extend`).
    Keep,
    /// Given back; the delivery counts (`abandon`).
    Abandon,
    /// Given back; the delivery does not count (`release`).
    Release,
}

pub(super) use crate::queue::check_queue;

use crate::queue::receipt_expired as expired;

impl State {
    /// Appends messages (already checked) to a queue.
    pub(super) fn enqueue(&mut self, queue: QueueName, messages: Vec<NewQueueMessage>, now: Now) {
        let q = self.queues.entry(queue).or_default();
        for m in messages {
            q.next_seq += 1;
            q.messages.insert(
                q.next_seq,
                StoredMessage {
                    body: m.body,
                    enqueued_at: now.wall,
                    visible_at: now.mono + m.delay,
                    dequeue_count: 0,
                    receipt: None,
                },
            );
        }
    }

    /// Appends one message (already checked) hidden for `visibility` and returns the delivery
    /// that holds it, as if it had been dequeued at once (a claim).
    pub(super) fn enqueue_claimed(
        &mut self,
        queue: QueueName,
        message: NewQueueMessage,
        visibility: Duration,
        now: Now,
    ) -> Dequeued {
        let nonce = self.new_nonce();
        let q = self.queues.entry(queue).or_default();
        q.next_seq += 1;
        let receipt = Receipt(format!("{}.{nonce}", q.next_seq));
        q.messages.insert(
            q.next_seq,
            StoredMessage {
                body: message.body.clone(),
                enqueued_at: now.wall,
                visible_at: now.mono + visibility,
                dequeue_count: 1,
                receipt: Some(receipt.clone()),
            },
        );
        Dequeued {
            receipt,
            body: message.body,
            dequeue_count: 1,
            enqueued_at: now.wall,
        }
    }

    /// Takes up to `max` visible messages, oldest first (or newest first).
    fn dequeue(
        &mut self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
        now: Now,
        newest_first: bool,
    ) -> Vec<Dequeued> {
        let mut out = Vec::new();
        let mut seqs: Vec<u64> = match self.queues.get(&queue) {
            Some(q) => q
                .messages
                .iter()
                .filter(|(_, m)| m.visible_at <= now.mono)
                .map(|(seq, _)| *seq)
                .collect(),
            None => return out,
        };
        if newest_first {
            seqs.reverse();
        }
        seqs.truncate(max);
        for seq in seqs {
            let receipt = Receipt(format!("{seq}.{}", self.new_nonce()));
            let Some(m) = self
                .queues
                .get_mut(&queue)
                .and_then(|q| q.messages.get_mut(&seq))
            else {
                continue;
            };
            m.visible_at = now.mono + visibility;
            m.dequeue_count = m.dequeue_count.saturating_add(1);
            m.receipt = Some(receipt.clone());
            out.push(Dequeued {
                receipt,
                body: m.body.clone(),
                dequeue_count: m.dequeue_count,
                enqueued_at: m.enqueued_at,
            });
        }
        out
    }

    /// The sequence number of the message `receipt` currently refers to.
    fn held(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<u64> {
        let seq = receipt
            .0
            .split_once('.')
            .and_then(|(seq, _)| seq.parse::<u64>().ok())
            .ok_or_else(|| expired(queue))?;
        let m = self
            .queues
            .get(&queue)
            .and_then(|q| q.messages.get(&seq))
            .ok_or_else(|| expired(queue))?;
        if m.receipt.as_ref() == Some(receipt) {
            Ok(seq)
        } else {
            Err(expired(queue))
        }
    }

    /// Deletes the message a receipt holds.
    pub(super) fn delete_message(
        &mut self,
        queue: QueueName,
        receipt: &Receipt,
    ) -> StorageResult<()> {
        let seq = self.held(queue, receipt)?;
        if let Some(q) = self.queues.get_mut(&queue) {
            q.messages.remove(&seq);
        }
        Ok(())
    }

    /// Sets the visibility of a held message and gives it a new receipt (or none).
    fn rehide(
        &mut self,
        queue: QueueName,
        receipt: &Receipt,
        visible_at: Duration,
        hold: Hold,
    ) -> StorageResult<Option<Receipt>> {
        let seq = self.held(queue, receipt)?;
        let new = (hold == Hold::Keep).then(|| Receipt(format!("{seq}.{}", self.new_nonce())));
        if let Some(m) = self
            .queues
            .get_mut(&queue)
            .and_then(|q| q.messages.get_mut(&seq))
        {
            m.visible_at = visible_at;
            m.receipt.clone_from(&new);
            if hold == Hold::Release {
                m.dequeue_count = m.dequeue_count.saturating_sub(1);
            }
        }
        Ok(new)
    }

    fn stats(&self, queue: QueueName) -> QueueStats {
        let Some(q) = self.queues.get(&queue) else {
            return QueueStats::default();
        };
        QueueStats {
            length: q.messages.len() as u64,
            oldest_enqueued_at: q.messages.values().map(|m| m.enqueued_at).min(),
        }
    }
}

impl MemoryStore {
    pub(super) fn now(&self) -> Now {
        let clock = &self.shared.clock;
        Now {
            wall: clock.now(),
            mono: clock.monotonic(),
        }
    }

    fn enqueue_now(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()> {
        crate::queue::check_messages(self, queue, &messages)?;
        let now = self.now();
        self.state().enqueue(queue, messages, now);
        Ok(())
    }

    fn dequeue_now(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>> {
        crate::queue::check_dequeue(self, queue, max)?;
        let now = self.now();
        let newest_first = self.shared.newest_first;
        Ok(self
            .state()
            .dequeue(queue, max, visibility, now, newest_first))
    }

    fn rehide_now(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        after: Duration,
        hold: Hold,
    ) -> StorageResult<Option<Receipt>> {
        check_queue(queue)?;
        let now = self.now();
        self.state().rehide(queue, receipt, now.mono + after, hold)
    }
}

#[async_trait]
impl QueueStore for MemoryStore {
    async fn enqueue(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()> {
        let call = self.enter(Op::Enqueue).await?;
        call.finish(self.enqueue_now(queue, messages))
    }

    async fn dequeue(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>> {
        let call = self.enter(Op::Dequeue).await?;
        call.finish(self.dequeue_now(queue, max, visibility))
    }

    async fn delete(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        let call = self.enter(Op::Delete).await?;
        let result = check_queue(queue).and_then(|()| self.state().delete_message(queue, receipt));
        call.finish(result)
    }

    async fn abandon(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        let call = self.enter(Op::Abandon).await?;
        call.finish(
            self.rehide_now(queue, receipt, delay, Hold::Abandon)
                .map(|_| ()),
        )
    }

    async fn release(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        let call = self.enter(Op::Release).await?;
        call.finish(
            self.rehide_now(queue, receipt, delay, Hold::Release)
                .map(|_| ()),
        )
    }

    async fn extend(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<Receipt> {
        let call = self.enter(Op::Extend).await?;
        let result = self
            .rehide_now(queue, receipt, visibility, Hold::Keep)
            .and_then(|r| r.ok_or_else(|| expired(queue)));
        call.finish(result)
    }

    async fn stats(&self, queue: QueueName) -> StorageResult<QueueStats> {
        let call = self.enter(Op::Stats).await?;
        let result = check_queue(queue).map(|()| self.state().stats(queue));
        call.finish(result)
    }

    fn max_message_bytes(&self) -> usize {
        self.shared.max_message_bytes
    }

    fn max_dequeue_batch(&self) -> usize {
        self.shared.max_dequeue_batch
    }
}
