//! The whole in-memory task hub, as plain data behind the store's mutex.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use taskhub_core::Timestamp;

use super::history::HistoryRow;
use super::queues::QueueState;
use crate::dead_letters::DeadLetter;
use crate::history::ETag;
use crate::instances::InstanceRow;
use crate::partitions::{HubInfo, PartitionRow};
use crate::processes::ProcessRecord;
use crate::queue::QueueName;

/// A reading of the store's clock, taken once per operation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Now {
    /// Wall-clock time: what gets recorded (enqueue times).
    pub(super) wall: Timestamp,
    /// Monotonic time: what visibility timeouts are measured in.
    pub(super) mono: Duration,
}

/// Every table, queue and blob of the hub.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) queues: BTreeMap<QueueName, QueueState>,
    /// History rows by instance ID.
    pub(super) history: HashMap<String, HistoryRow>,
    /// Instance rows by instance ID (ordered, for listing).
    pub(super) instances: BTreeMap<String, InstanceRow>,
    /// Blobs by (instance ID, name).
    pub(super) payloads: BTreeMap<(String, String), Vec<u8>>,
    /// Dead letters by ID; IDs are zero-padded counters, so key order is insertion order.
    pub(super) dead_letters: BTreeMap<String, DeadLetter>,
    pub(super) hub: Option<HubInfo>,
    pub(super) partitions: BTreeMap<u32, PartitionRow>,
    /// Process records by ID.
    pub(super) processes: BTreeMap<String, ProcessRecord>,
    /// The schema version "stored" (tests set it to simulate a newer build's migration);
    /// `None`: the one this build writes.
    pub(super) stored_schema: Option<u32>,
    next_etag: u64,
    next_dead_letter: u64,
    next_nonce: u64,
}

impl State {
    /// A fresh ETag, never handed out before by this store (so a deleted and re-created row
    /// never gets an ETag a stale writer may still hold).
    pub(super) fn new_etag(&mut self) -> ETag {
        self.next_etag += 1;
        ETag(format!("m{}", self.next_etag))
    }

    /// A fresh dead-letter ID.
    pub(super) fn new_dead_letter_id(&mut self) -> String {
        self.next_dead_letter += 1;
        format!("{:020}", self.next_dead_letter)
    }

    /// A fresh number for receipts.
    pub(super) fn new_nonce(&mut self) -> u64 {
        self.next_nonce += 1;
        self.next_nonce
    }
}
