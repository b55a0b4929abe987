//! The operations of the storage seam, named once.

use std::fmt;

/// One operation of the storage seam: what [`Instrumented`](crate::Instrumented) counts and
/// what the memory backend's fault plan aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Operation {
    /// `QueueStore::enqueue`.
    Enqueue,
    /// `QueueStore::dequeue`.
    Dequeue,
    /// `QueueStore::delete`.
    Delete,
    /// `QueueStore::abandon`.
    Abandon,
    /// `QueueStore::release`.
    Release,
    /// `QueueStore::extend`.
    Extend,
    /// `QueueStore::stats`.
    Stats,
    /// `HistoryStore::load_history`.
    LoadHistory,
    /// `HistoryStore::delete_history`.
    DeleteHistory,
    /// `InstanceStore::get_instance`.
    GetInstance,
    /// `InstanceStore::put_instance`.
    PutInstance,
    /// `InstanceStore::list_instances`.
    ListInstances,
    /// `InstanceStore::delete_instance`.
    DeleteInstance,
    /// `InstanceStore::delete_instance_if`.
    DeleteInstanceIf,
    /// `PayloadStore::put_payload`.
    PutPayload,
    /// `PayloadStore::get_payload`.
    GetPayload,
    /// `PayloadStore::delete_payloads`.
    DeletePayloads,
    /// `DeadLetterStore::add_dead_letter`.
    AddDeadLetter,
    /// `DeadLetterStore::list_dead_letters`.
    ListDeadLetters,
    /// `DeadLetterStore::take_dead_letter`.
    TakeDeadLetter,
    /// `DeadLetterStore::move_to_dead_letters`.
    MoveToDeadLetters,
    /// `PartitionStore::create_hub`.
    CreateHub,
    /// `PartitionStore::hub_info`.
    HubInfo,
    /// `PartitionStore::set_partition_count`.
    SetPartitionCount,
    /// `PartitionStore::set_prohibited_workers`.
    SetProhibitedWorkers,
    /// `PartitionStore::list_partitions`.
    ListPartitions,
    /// `PartitionStore::put_partition`.
    PutPartition,
    /// `PartitionStore::lease_table`.
    LeaseTable,
    /// `PartitionStore::renew_partitions`.
    RenewPartitions,
    /// `CheckpointStore::checkpoint`.
    Checkpoint,
    /// `ClearStore::clear_hub`.
    ClearHub,
    /// `ProcessStore::announce_process`.
    AnnounceProcess,
    /// `ProcessStore::heartbeat_process`.
    HeartbeatProcess,
    /// `ProcessStore::list_processes`.
    ListProcesses,
    /// `ProcessStore::forget_process`.
    ForgetProcess,
    /// `ProcessStore::stored_schema`.
    StoredSchema,
}

impl Operation {
    /// Every operation, in declaration order.
    pub const ALL: [Self; 36] = [
        Self::Enqueue,
        Self::Dequeue,
        Self::Delete,
        Self::Abandon,
        Self::Release,
        Self::Extend,
        Self::Stats,
        Self::LoadHistory,
        Self::DeleteHistory,
        Self::GetInstance,
        Self::PutInstance,
        Self::ListInstances,
        Self::DeleteInstance,
        Self::DeleteInstanceIf,
        Self::PutPayload,
        Self::GetPayload,
        Self::DeletePayloads,
        Self::AddDeadLetter,
        Self::ListDeadLetters,
        Self::TakeDeadLetter,
        Self::MoveToDeadLetters,
        Self::CreateHub,
        Self::HubInfo,
        Self::SetPartitionCount,
        Self::SetProhibitedWorkers,
        Self::ListPartitions,
        Self::PutPartition,
        Self::LeaseTable,
        Self::RenewPartitions,
        Self::Checkpoint,
        Self::ClearHub,
        Self::AnnounceProcess,
        Self::HeartbeatProcess,
        Self::ListProcesses,
        Self::ForgetProcess,
        Self::StoredSchema,
    ];

    /// The snake-case method name (`enqueue`, `load_history`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Enqueue => "enqueue",
            Self::Dequeue => "dequeue",
            Self::Delete => "delete",
            Self::Abandon => "abandon",
            Self::Release => "release",
            Self::Extend => "extend",
            Self::Stats => "stats",
            Self::LoadHistory => "load_history",
            Self::DeleteHistory => "delete_history",
            Self::GetInstance => "get_instance",
            Self::PutInstance => "put_instance",
            Self::ListInstances => "list_instances",
            Self::DeleteInstance => "delete_instance",
            Self::DeleteInstanceIf => "delete_instance_if",
            Self::PutPayload => "put_payload",
            Self::GetPayload => "get_payload",
            Self::DeletePayloads => "delete_payloads",
            Self::AddDeadLetter => "add_dead_letter",
            Self::ListDeadLetters => "list_dead_letters",
            Self::TakeDeadLetter => "take_dead_letter",
            Self::MoveToDeadLetters => "move_to_dead_letters",
            Self::CreateHub => "create_hub",
            Self::HubInfo => "hub_info",
            Self::SetPartitionCount => "set_partition_count",
            Self::SetProhibitedWorkers => "set_prohibited_workers",
            Self::ListPartitions => "list_partitions",
            Self::PutPartition => "put_partition",
            Self::LeaseTable => "lease_table",
            Self::RenewPartitions => "renew_partitions",
            Self::Checkpoint => "checkpoint",
            Self::ClearHub => "clear_hub",
            Self::AnnounceProcess => "announce_process",
            Self::HeartbeatProcess => "heartbeat_process",
            Self::ListProcesses => "list_processes",
            Self::ForgetProcess => "forget_process",
            Self::StoredSchema => "stored_schema",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
