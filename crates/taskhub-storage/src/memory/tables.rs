//! The instances and partitions tables, the large-payload store and the dead-letter store.

use std::ops::Bound;

use async_trait::async_trait;
use taskhub_core::{InstanceId, Timestamp};

use super::state::State;
use super::{MemoryStore, Op};
use crate::dead_letters::{DeadLetter, DeadLetterStore};
use crate::error::{StorageError, StorageResult};
use crate::history::ETag;
use crate::instances::{Expect, InstancePage, InstanceQuery, InstanceRow, InstanceStore};
use crate::list_order::{page_sorted, ListOrder};
use crate::partitions::{HubInfo, PartitionRow, PartitionStore};
use crate::payloads::PayloadStore;
use crate::queue::{QueueName, Receipt};

/// The prefix of the memory backend's continuation tokens (the rest is the last ID returned).
const TOKEN_PREFIX: &str = "after:";

fn matches(row: &InstanceRow, q: &InstanceQuery) -> bool {
    (q.statuses.is_empty() || q.statuses.contains(&row.status))
        && q.name.as_ref().is_none_or(|n| *n == row.name)
        && q.created_from.is_none_or(|t| row.created_at >= t)
        && q.created_to.is_none_or(|t| row.created_at < t)
        && q.completed_from
            .is_none_or(|t| row.completed_at.is_some_and(|c| c >= t))
        && q.completed_to
            .is_none_or(|t| row.completed_at.is_some_and(|c| c < t))
        && q.updated_from.is_none_or(|t| row.updated_at >= t)
        && q.updated_to.is_none_or(|t| row.updated_at < t)
        && q.instance_id_prefix
            .as_ref()
            .is_none_or(|p| row.instance_id.as_str().starts_with(p.as_str()))
        && q.tags.iter().all(|(k, v)| row.tags.get(k) == Some(v))
        && (q.include_entities || !row.instance_id.as_str().starts_with('@'))
}

impl State {
    /// Writes an instance row under its condition.
    pub(super) fn put_instance(
        &mut self,
        row: &InstanceRow,
        expect: &Expect,
    ) -> StorageResult<ETag> {
        let stored = self.instances.get(row.instance_id.as_str());
        if !expect.allows(stored) {
            return Err(StorageError::Conflict {
                what: format!("instance '{}'", row.instance_id),
            });
        }
        let etag = self.new_etag();
        let mut row = row.clone();
        row.etag = Some(etag.clone());
        self.instances
            .insert(row.instance_id.as_str().to_owned(), row);
        Ok(etag)
    }

    fn list_instances(&self, q: &InstanceQuery) -> StorageResult<InstancePage> {
        let page_size = match q.page_size {
            0 => 100,
            n @ 1..=1000 => n,
            n => {
                return Err(StorageError::InvalidArgument(format!(
                    "page size {n}: use 1 to 1000 (0 means 100)"
                )))
            }
        };
        if q.order != ListOrder::InstanceId {
            let rows: Vec<InstanceRow> = self
                .instances
                .values()
                .filter(|row| matches(row, q))
                .cloned()
                .collect();
            return page_sorted(rows, q.order, q.continuation.as_deref(), page_size);
        }
        let start = match &q.continuation {
            None => Bound::Unbounded,
            Some(token) => Bound::Excluded(
                token
                    .strip_prefix(TOKEN_PREFIX)
                    .ok_or_else(|| {
                        StorageError::InvalidArgument(format!(
                            "continuation token {token:?} was not issued by this store"
                        ))
                    })?
                    .to_owned(),
            ),
        };
        let mut instances: Vec<InstanceRow> = self
            .instances
            .range((start, Bound::Unbounded))
            .map(|(_, row)| row)
            .filter(|row| matches(row, q))
            .take(page_size + 1)
            .cloned()
            .collect();
        let continuation = if instances.len() > page_size {
            instances.truncate(page_size);
            instances
                .last()
                .map(|r| format!("{TOKEN_PREFIX}{}", r.instance_id))
        } else {
            None
        };
        Ok(InstancePage {
            instances,
            continuation,
        })
    }

    fn put_partition(
        &mut self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag> {
        crate::partitions::check_partition(row.partition)?;
        let stored = self.partitions.get(&row.partition).map(|r| r.etag.as_ref());
        let allowed = match (stored, expected) {
            (None, None) => true,
            (Some(have), Some(want)) => have == Some(want),
            _ => false,
        };
        if !allowed {
            return Err(StorageError::Conflict {
                what: format!("partition {}", row.partition),
            });
        }
        let etag = self.new_etag();
        let mut row = row.clone();
        row.etag = Some(etag.clone());
        self.partitions.insert(row.partition, row);
        Ok(etag)
    }

    /// Changes the hub's info with `change`; `NotFound` if the hub was never created.
    fn change_hub(&mut self, change: impl FnOnce(&mut HubInfo)) -> StorageResult<()> {
        let hub = self.hub.as_mut().ok_or_else(|| StorageError::NotFound {
            what: "task hub".to_owned(),
        })?;
        change(hub);
        Ok(())
    }

    fn create_hub(&mut self, partition_count: u32, now: Timestamp) -> HubInfo {
        if let Some(hub) = &self.hub {
            return hub.clone();
        }
        let hub = HubInfo {
            partition_count,
            created_at: now,
            prohibited_workers: Vec::new(),
        };
        self.hub = Some(hub.clone());
        for partition in 0..partition_count {
            let etag = self.new_etag();
            self.partitions.insert(
                partition,
                PartitionRow {
                    etag: Some(etag),
                    ..PartitionRow::unowned(partition, now)
                },
            );
        }
        hub
    }
}

#[async_trait]
impl InstanceStore for MemoryStore {
    async fn get_instance(&self, instance: &InstanceId) -> StorageResult<Option<InstanceRow>> {
        let call = self.enter(Op::GetInstance).await?;
        let row = self.state().instances.get(instance.as_str()).cloned();
        call.finish(Ok(row))
    }

    async fn put_instance(&self, row: &InstanceRow, expect: Expect) -> StorageResult<ETag> {
        let call = self.enter(Op::PutInstance).await?;
        let result = self.state().put_instance(row, &expect);
        call.finish(result)
    }

    async fn list_instances(&self, query: &InstanceQuery) -> StorageResult<InstancePage> {
        let call = self.enter(Op::ListInstances).await?;
        let result = self.state().list_instances(query);
        call.finish(result)
    }

    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool> {
        let call = self.enter(Op::DeleteInstance).await?;
        let existed = self.state().instances.remove(instance.as_str()).is_some();
        call.finish(Ok(existed))
    }

    async fn delete_instance_if(&self, instance: &InstanceId, etag: &ETag) -> StorageResult<bool> {
        let call = self.enter(Op::DeleteInstanceIf).await?;
        let mut state = self.state();
        let current = state
            .instances
            .get(instance.as_str())
            .is_some_and(|row| row.etag.as_ref() == Some(etag));
        if current {
            state.instances.remove(instance.as_str());
        }
        drop(state);
        call.finish(Ok(current))
    }
}

#[async_trait]
impl PayloadStore for MemoryStore {
    async fn put_payload(
        &self,
        instance: &InstanceId,
        name: &str,
        data: Vec<u8>,
    ) -> StorageResult<()> {
        let call = self.enter(Op::PutPayload).await?;
        self.state()
            .payloads
            .insert((instance.as_str().to_owned(), name.to_owned()), data);
        call.finish(Ok(()))
    }

    async fn get_payload(
        &self,
        instance: &InstanceId,
        name: &str,
    ) -> StorageResult<Option<Vec<u8>>> {
        let call = self.enter(Op::GetPayload).await?;
        let key = (instance.as_str().to_owned(), name.to_owned());
        let data = self.state().payloads.get(&key).cloned();
        call.finish(Ok(data))
    }

    async fn delete_payloads(&self, instance: &InstanceId) -> StorageResult<u64> {
        let call = self.enter(Op::DeletePayloads).await?;
        let mut state = self.state();
        let before = state.payloads.len();
        state
            .payloads
            .retain(|(owner, _), _| owner != instance.as_str());
        let deleted = (before - state.payloads.len()) as u64;
        drop(state);
        call.finish(Ok(deleted))
    }
}

#[async_trait]
impl DeadLetterStore for MemoryStore {
    async fn add_dead_letter(&self, mut letter: DeadLetter) -> StorageResult<String> {
        let call = self.enter(Op::AddDeadLetter).await?;
        let mut state = self.state();
        let id = state.new_dead_letter_id();
        letter.id.clone_from(&id);
        state.dead_letters.insert(id.clone(), letter);
        drop(state);
        call.finish(Ok(id))
    }

    async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StorageResult<Vec<DeadLetter>> {
        let call = self.enter(Op::ListDeadLetters).await?;
        let start = after.map_or(Bound::Unbounded, |a| Bound::Excluded(a.to_owned()));
        let letters = self
            .state()
            .dead_letters
            .range((start, Bound::Unbounded))
            .take(limit)
            .map(|(_, l)| l.clone())
            .collect();
        call.finish(Ok(letters))
    }

    async fn take_dead_letter(&self, id: &str) -> StorageResult<Option<DeadLetter>> {
        let call = self.enter(Op::TakeDeadLetter).await?;
        let letter = self.state().dead_letters.remove(id);
        call.finish(Ok(letter))
    }

    async fn move_to_dead_letters(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        mut letter: DeadLetter,
    ) -> StorageResult<String> {
        let call = self.enter(Op::MoveToDeadLetters).await?;
        let result = super::queues::check_queue(queue).and_then(|()| {
            // One lock: the message leaves its queue and the letter arrives together.
            let mut state = self.state();
            state.delete_message(queue, receipt)?;
            let id = state.new_dead_letter_id();
            letter.id.clone_from(&id);
            letter.queue = queue;
            state.dead_letters.insert(id.clone(), letter);
            Ok(id)
        });
        call.finish(result)
    }
}

#[async_trait]
impl PartitionStore for MemoryStore {
    async fn create_hub(&self, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo> {
        let call = self.enter(Op::CreateHub).await?;
        let result = crate::partitions::check_partition_count(partition_count)
            .map(|()| self.state().create_hub(partition_count, now));
        call.finish(result)
    }

    async fn hub_info(&self) -> StorageResult<Option<HubInfo>> {
        let call = self.enter(Op::HubInfo).await?;
        let hub = self.state().hub.clone();
        call.finish(Ok(hub))
    }

    async fn set_partition_count(&self, partition_count: u32) -> StorageResult<()> {
        let call = self.enter(Op::SetPartitionCount).await?;
        let result = crate::partitions::check_partition_count(partition_count).and_then(|()| {
            self.state()
                .change_hub(|hub| hub.partition_count = partition_count)
        });
        call.finish(result)
    }

    async fn set_prohibited_workers(&self, workers: Vec<String>) -> StorageResult<()> {
        let call = self.enter(Op::SetProhibitedWorkers).await?;
        let result = self
            .state()
            .change_hub(|hub| hub.prohibited_workers = workers);
        call.finish(result)
    }

    async fn list_partitions(&self) -> StorageResult<Vec<PartitionRow>> {
        let call = self.enter(Op::ListPartitions).await?;
        let rows = self.state().partitions.values().cloned().collect();
        call.finish(Ok(rows))
    }

    async fn put_partition(
        &self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag> {
        let call = self.enter(Op::PutPartition).await?;
        let result = self.state().put_partition(row, expected);
        call.finish(result)
    }
}
