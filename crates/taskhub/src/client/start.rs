//! Starting and restarting instances, with an explicit instance-ID reuse policy.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use taskhub_core::{
    EventKind, ExecutionId, InstanceId, Message, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_storage::{
    CheckpointRequest, Expect, InstanceRow, OutboundMessage, QueueName, StorageError,
};

use super::TaskHubClient;
use crate::error::TaskhubError;

/// What a start does when the instance ID is already in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReusePolicy {
    /// Refuse if the instance is Pending, Running or Suspended; replace a finished one. Default.
    #[default]
    RejectActive,
    /// Refuse if the instance exists at all.
    RejectExisting,
    /// Terminate an active instance, then start the new execution; replace a finished one.
    TerminateActive,
}

/// Options of a start.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// The instance ID; a random one if `None`.
    pub instance_id: Option<InstanceId>,
    /// The orchestration version; the default version if `None`.
    pub version: Option<String>,
    /// What to do if the ID is in use.
    pub reuse: ReusePolicy,
    /// Do not run before this time.
    pub start_at: Option<SystemTime>,
}

impl TaskHubClient {
    /// Starts an orchestration with a random instance ID.
    ///
    /// # Errors
    /// An unserializable input, or a storage error.
    pub async fn start<I: Serialize>(
        &self,
        name: &str,
        input: I,
    ) -> Result<InstanceId, TaskhubError> {
        self.start_with(name, input, StartOptions::default()).await
    }

    /// Starts an orchestration with options. Two racing starts of one ID never both run: one
    /// wins, the other gets `AlreadyExists` (under the default policy).
    ///
    /// # Errors
    /// `AlreadyExists` if the reuse policy refuses, an unserializable input, or a storage error.
    pub async fn start_with<I: Serialize>(
        &self,
        name: &str,
        input: I,
        options: StartOptions,
    ) -> Result<InstanceId, TaskhubError> {
        let input = Payload::to_payload(&input, &format!("input of orchestration '{name}'"))?;
        self.start_payload(name, input, options).await
    }

    pub(crate) async fn start_payload(
        &self,
        name: &str,
        input: Payload,
        options: StartOptions,
    ) -> Result<InstanceId, TaskhubError> {
        let instance_id = options
            .instance_id
            .clone()
            .unwrap_or_else(InstanceId::random);
        let store = self.hub.store();
        let now = self.hub.clock().now();
        let existing = store.get_instance(&instance_id).await?;
        let count = self.hub.fresh_partition_count().await;
        let mut outbound = Vec::new();
        let (partition, expect, created_at) = match &existing {
            None => (instance_id.partition(count), Expect::Absent, now),
            Some(row) => {
                let refuse = match options.reuse {
                    ReusePolicy::RejectExisting => true,
                    ReusePolicy::RejectActive => row.status.is_active(),
                    ReusePolicy::TerminateActive => false,
                };
                if refuse {
                    return Err(TaskhubError::AlreadyExists {
                        instance_id,
                        status: row.status,
                    });
                }
                if row.status.is_active() {
                    let terminate = Message::from_client(
                        instance_id.clone(),
                        EventKind::ExecutionTerminated {
                            reason: "replaced by a new start".into(),
                        },
                        now,
                    );
                    outbound.push(
                        self.outbound(
                            QueueName::Control(row.partition),
                            &terminate,
                            Duration::ZERO,
                        )
                        .await?,
                    );
                }
                let etag = row
                    .etag
                    .clone()
                    .ok_or_else(|| StorageError::Backend("instance row without ETag".into()))?;
                (row.partition, Expect::ETag(etag), now)
            }
        };
        let execution_id = ExecutionId::random();
        let scheduled_start = options.start_at.map(Timestamp::from_system_time);
        let mut start = Message::from_client(
            instance_id.clone(),
            EventKind::ExecutionStarted {
                name: name.to_owned(),
                version: options.version.clone(),
                input: input.clone(),
                execution_id: execution_id.clone(),
                parent: None,
                scheduled_start,
            },
            now,
        );
        start.execution_id = Some(execution_id.clone());
        start.target_partition = Some(partition);
        let delay = scheduled_start.map_or(Duration::ZERO, |at| at.saturating_since(now));
        outbound.push(
            self.outbound(QueueName::Control(partition), &start, delay)
                .await?,
        );
        let row = InstanceRow {
            instance_id: instance_id.clone(),
            name: name.to_owned(),
            version: options.version,
            execution_id: execution_id.clone(),
            status: OrchestrationStatus::Pending,
            input,
            output: None,
            failure: None,
            custom_status: None,
            created_at,
            updated_at: now,
            completed_at: None,
            scheduled_start,
            partition,
            etag: None,
        };
        let request = CheckpointRequest {
            instance_id: instance_id.clone(),
            fence: None,
            history: None,
            instance: Some((row, expect)),
            outbound,
            consumed: Vec::new(),
        };
        match store.checkpoint(request).await {
            Ok(_) => {
                self.hub
                    .inner
                    .signals
                    .enqueued_after(QueueName::Control(partition), delay);
                Ok(instance_id)
            }
            Err(StorageError::Conflict { .. }) => {
                // Someone else wrote the row. If a worker already picked up our own start, the
                // row carries our execution ID: the start succeeded.
                self.hub
                    .inner
                    .signals
                    .enqueued(QueueName::Control(partition));
                match store.get_instance(&instance_id).await? {
                    Some(row) if row.execution_id == execution_id => Ok(instance_id),
                    Some(row) => Err(TaskhubError::AlreadyExists {
                        instance_id,
                        status: row.status,
                    }),
                    None => Err(StorageError::Conflict {
                        what: format!("instance '{instance_id}'"),
                    }
                    .into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Starts a finished (or running) instance again with its original name and input, under
    /// the same ID (terminating it first if active) or, with `new_instance_id`, under a new one.
    ///
    /// # Errors
    /// `NotFound` if the instance does not exist, or a storage error.
    pub async fn restart(
        &self,
        instance_id: &InstanceId,
        new_instance_id: bool,
    ) -> Result<InstanceId, TaskhubError> {
        let row = self
            .hub
            .store()
            .get_instance(instance_id)
            .await?
            .ok_or_else(|| TaskhubError::NotFound(instance_id.clone()))?;
        let options = StartOptions {
            instance_id: if new_instance_id {
                None
            } else {
                Some(instance_id.clone())
            },
            version: row.version.clone(),
            reuse: ReusePolicy::TerminateActive,
            start_at: None,
        };
        self.start_payload(&row.name, row.input.clone(), options)
            .await
    }

    pub(crate) async fn outbound(
        &self,
        queue: QueueName,
        message: &Message,
        delay: Duration,
    ) -> Result<OutboundMessage, StorageError> {
        self.hub.outbound(queue, message, delay).await
    }
}
