//! Entities from the client: signal, read state, list (paged), delete and clean up.

use std::time::{Duration, SystemTime};

use serde::de::DeserializeOwned;
use serde::Serialize;
use taskhub_core::entity::{EntityRecord, EntityRequest, ENTITY_REQUEST_EVENT};
use taskhub_core::{EntityId, EventKind, InstanceId, Message, Payload, Timestamp};
use taskhub_storage::{InstanceQuery, InstanceRow, NewQueueMessage, QueueName};

use super::TaskHubClient;
use crate::error::TaskhubError;

/// An entity as stored: its state and what it keeps besides.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityMetadata {
    /// The entity.
    pub id: EntityId,
    /// Its state as JSON; `None` if it has none (deleted, or only a lock or queued requests).
    pub state: Option<Payload>,
    /// When its last batch committed.
    pub last_modified: Timestamp,
    /// The orchestration whose critical section holds it, if any.
    pub locked_by: Option<InstanceId>,
    /// Requests waiting for that critical section to end.
    pub queued: usize,
}

/// A listing of entities (see [`TaskHubClient::list_entities`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntityQuery {
    /// Only entities of this name (`None`: every entity).
    pub name: Option<String>,
    /// Also list entities without state (kept for a lock or queued requests, or deleted and
    /// not cleaned up yet).
    pub include_stateless: bool,
    /// Only entities whose last batch committed at or after this time.
    pub last_modified_from: Option<Timestamp>,
    /// Only entities whose last batch committed before this time.
    pub last_modified_to: Option<Timestamp>,
    /// Rows read per page (1 to 1,000; 0 means 100). A page may hold fewer entities than
    /// this when stateless ones are left out.
    pub page_size: usize,
    /// The continuation token of the previous page.
    pub continuation: Option<String>,
}

/// One page of entities.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityPage {
    /// The entities, by ID.
    pub entities: Vec<EntityMetadata>,
    /// The token for the next page, if there may be more.
    pub continuation: Option<String>,
}

/// What [`TaskHubClient::clean_entities`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanEntities {
    /// Delete the rows of entities with no state, no lock, no queued request and nothing to
    /// send that have not changed for `min_idle`.
    pub remove_empty: bool,
    /// Release locks held by orchestrations that ended (finished, purged, or continued as
    /// new): their waiting requests then run.
    pub release_orphaned_locks: bool,
    /// How long an empty entity must have been unchanged before it is removed (a batch
    /// that commits while the row is deleted would be lost; give in-flight messages time).
    pub min_idle: Duration,
}

impl Default for CleanEntities {
    fn default() -> Self {
        Self {
            remove_empty: true,
            release_orphaned_locks: true,
            min_idle: Duration::from_secs(300),
        }
    }
}

/// What a clean-up did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanEntitiesResult {
    /// Empty entities removed.
    pub removed: usize,
    /// Orphaned locks released (a release request was sent to each).
    pub locks_released: usize,
}

impl TaskHubClient {
    /// Signals an entity: `op` runs there with `input`, nothing waits for it. Signals from one
    /// client run in the order they were sent.
    ///
    /// # Errors
    /// An unserializable input or a storage error.
    pub async fn signal_entity<I: Serialize + ?Sized>(
        &self,
        entity: &EntityId,
        op: &str,
        input: &I,
    ) -> Result<(), TaskhubError> {
        let input = Payload::to_payload(input, &format!("input of {entity}.{op}"))?;
        self.send_entity_request(entity, op, input, None).await
    }

    /// Signals an entity with an input that is JSON text already (a file, a request body):
    /// the text reaches the operation as it is, so integers beyond 64 bits and the digits of
    /// decimals stay exact. Otherwise as [`signal_entity`](Self::signal_entity).
    ///
    /// # Errors
    /// A storage error.
    pub async fn signal_entity_payload(
        &self,
        entity: &EntityId,
        op: &str,
        input: Payload,
    ) -> Result<(), TaskhubError> {
        self.send_entity_request(entity, op, input, None).await
    }

    /// Signals an entity at a later time: `op` runs no earlier than `at`.
    ///
    /// # Errors
    /// As [`signal_entity`](Self::signal_entity).
    pub async fn signal_entity_at<I: Serialize + ?Sized>(
        &self,
        entity: &EntityId,
        op: &str,
        input: &I,
        at: SystemTime,
    ) -> Result<(), TaskhubError> {
        let input = Payload::to_payload(input, &format!("input of {entity}.{op}"))?;
        self.send_entity_request(entity, op, input, Some(Timestamp::from_system_time(at)))
            .await
    }

    /// Signals an entity at a later time with an input that is a payload already (JSON text
    /// kept as it is, or an SDK's payload that is not JSON): `op` runs no earlier than `at`.
    ///
    /// # Errors
    /// A storage error.
    pub async fn signal_entity_payload_at(
        &self,
        entity: &EntityId,
        op: &str,
        input: Payload,
        at: SystemTime,
    ) -> Result<(), TaskhubError> {
        self.send_entity_request(entity, op, input, Some(Timestamp::from_system_time(at)))
            .await
    }

    async fn send_entity_request(
        &self,
        entity: &EntityId,
        op: &str,
        input: Payload,
        at: Option<Timestamp>,
    ) -> Result<(), TaskhubError> {
        let message_id = taskhub_core::MessageId::random();
        let request = EntityRequest::Operation {
            id: message_id.to_string(),
            op: op.to_owned(),
            input,
            caller: None,
            at,
        };
        self.send_request(entity, &request, at).await
    }

    async fn send_request(
        &self,
        entity: &EntityId,
        request: &EntityRequest,
        at: Option<Timestamp>,
    ) -> Result<(), TaskhubError> {
        let now = self.hub.clock().now();
        let input = Payload::to_payload(request, "entity request")?;
        let target = entity.instance_id().clone();
        let mut m = Message::from_client(
            target.clone(),
            EventKind::EventRaised {
                name: ENTITY_REQUEST_EVENT.to_owned(),
                input,
            },
            now,
        );
        let partition = self.hub.partition_of(&target).await?;
        m.target_partition = Some(partition);
        let queue = QueueName::Control(partition);
        let delay = at.map_or(Duration::ZERO, |at| {
            let store = self.hub.store();
            at.saturating_since(now).min(store.max_delay())
        });
        if delay.is_zero() {
            self.hub.send(queue, &m).await?;
        } else {
            let body = self.hub.encode(&m).await?;
            self.hub
                .store()
                .enqueue(queue, vec![NewQueueMessage { body, delay }])
                .await?;
            self.hub.inner.signals.enqueued_after(queue, delay);
        }
        Ok(())
    }

    /// Deletes an entity's state: it runs as a request on the entity (after the requests sent
    /// before it, and after a critical section that holds it), so it never races an
    /// operation. The entity then no longer exists; [`clean_entities`](Self::clean_entities)
    /// removes its row later.
    ///
    /// # Errors
    /// A storage error.
    pub async fn delete_entity(&self, entity: &EntityId) -> Result<(), TaskhubError> {
        self.send_request(entity, &EntityRequest::DeleteState, None)
            .await
    }

    /// Reads an entity's state; `None` if it has none (never signalled, or deleted).
    ///
    /// # Errors
    /// A state that does not deserialize as `T`, a row that is not an entity's, or a storage
    /// error.
    pub async fn read_entity_state<T: DeserializeOwned>(
        &self,
        entity: &EntityId,
    ) -> Result<Option<T>, TaskhubError> {
        let Some(meta) = self.get_entity(entity).await? else {
            return Ok(None);
        };
        Ok(meta
            .state
            .map(|s| s.parse::<T>(&format!("state of entity {entity}")))
            .transpose()?)
    }

    /// Reads an entity's metadata (state, lock, queued requests); `None` if it has no row.
    ///
    /// # Errors
    /// A row that is not an entity's, or a storage error.
    pub async fn get_entity(
        &self,
        entity: &EntityId,
    ) -> Result<Option<EntityMetadata>, TaskhubError> {
        let row = self.hub.store().get_instance(entity.instance_id()).await?;
        row.map(|r| metadata(entity.clone(), &r)).transpose()
    }

    /// Lists entities by ID, one page at a time (follow `continuation`).
    ///
    /// # Errors
    /// An invalid entity name or token, or a storage error.
    pub async fn list_entities(&self, query: &EntityQuery) -> Result<EntityPage, TaskhubError> {
        let prefix = match &query.name {
            Some(name) => {
                // Validates the name.
                EntityId::new(name.clone(), "x")?;
                EntityId::name_prefix(name)
            }
            None => "@".to_owned(),
        };
        let page = self
            .hub
            .store()
            .list_instances(&InstanceQuery {
                instance_id_prefix: Some(prefix),
                include_entities: true,
                updated_from: query.last_modified_from,
                updated_to: query.last_modified_to,
                page_size: query.page_size,
                continuation: query.continuation.clone(),
                ..InstanceQuery::default()
            })
            .await?;
        let mut entities = Vec::with_capacity(page.instances.len());
        for row in &page.instances {
            let Ok(id) = EntityId::from_instance_id(&row.instance_id) else {
                continue;
            };
            let meta = metadata(id, row)?;
            if meta.state.is_some() || query.include_stateless {
                entities.push(meta);
            }
        }
        Ok(EntityPage {
            entities,
            continuation: page.continuation,
        })
    }

    /// Cleans up entities: removes empty ones and releases locks held by orchestrations that
    /// ended (see [`CleanEntities`]). Visits every entity once.
    ///
    /// # Errors
    /// A storage error (what was done before it stays done).
    pub async fn clean_entities(
        &self,
        request: &CleanEntities,
    ) -> Result<CleanEntitiesResult, TaskhubError> {
        let store = self.hub.store();
        let now = self.hub.clock().now();
        let mut result = CleanEntitiesResult::default();
        let mut continuation = None;
        loop {
            let page = store
                .list_instances(&InstanceQuery {
                    instance_id_prefix: Some("@".to_owned()),
                    include_entities: true,
                    page_size: 500,
                    continuation: continuation.take(),
                    ..InstanceQuery::default()
                })
                .await?;
            for row in &page.instances {
                let Ok(id) = EntityId::from_instance_id(&row.instance_id) else {
                    continue;
                };
                let Ok(record) = row.input.parse::<EntityRecord>("entity record") else {
                    continue;
                };
                if request.release_orphaned_locks {
                    if let Some(lock) = &record.lock {
                        if self.ended(&lock.owner).await? {
                            let release = EntityRequest::Release {
                                id: lock.request_id.clone(),
                                owner: lock.owner.instance_id.clone(),
                            };
                            self.send_request(&id, &release, None).await?;
                            result.locks_released += 1;
                        }
                    }
                }
                let idle_for = now.saturating_since(row.updated_at);
                if request.remove_empty
                    && row.custom_status.is_none()
                    && record.is_idle(now)
                    && idle_for >= request.min_idle
                    && self.delete_unchanged(row).await?
                {
                    result.removed += 1;
                }
            }
            match page.continuation {
                Some(c) => continuation = Some(c),
                None => return Ok(result),
            }
        }
    }

    /// Deletes an entity's row only if it is still the version this clean-up read: a batch
    /// that committed since (a signal applied, a lock taken) keeps the row.
    async fn delete_unchanged(&self, row: &InstanceRow) -> Result<bool, TaskhubError> {
        let Some(etag) = &row.etag else {
            return Ok(false);
        };
        Ok(self
            .hub
            .store()
            .delete_instance_if(&row.instance_id, etag)
            .await?)
    }

    /// True if the execution that holds a lock has ended (finished, purged, or replaced by a
    /// newer execution).
    async fn ended(&self, owner: &taskhub_core::entity::Caller) -> Result<bool, TaskhubError> {
        Ok(
            match self.hub.store().get_instance(&owner.instance_id).await? {
                None => true,
                Some(row) => row.execution_id != owner.execution_id || row.status.is_terminal(),
            },
        )
    }
}

fn metadata(id: EntityId, row: &InstanceRow) -> Result<EntityMetadata, TaskhubError> {
    let record: EntityRecord = row.input.parse("entity record").map_err(|e| {
        TaskhubError::Storage(taskhub_storage::StorageError::Corrupt {
            what: format!("entity row of {id}"),
            detail: e.to_string(),
        })
    })?;
    Ok(EntityMetadata {
        id,
        state: row.custom_status.clone(),
        last_modified: row.updated_at,
        locked_by: record.lock.map(|l| l.owner.instance_id),
        queued: record.queue.len(),
    })
}
