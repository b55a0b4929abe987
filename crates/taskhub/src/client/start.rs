//! Starting and restarting instances, with an explicit instance-ID reuse policy.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use taskhub_core::{
    EventKind, ExecutionId, InstanceId, Message, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_storage::{
    CheckpointRequest, Expect, InstanceRow, OutboundMessage, QueueName, StorageError, Tags,
};

use super::TaskHubClient;
use crate::error::TaskhubError;
use crate::telemetry::TraceContext;

/// How often a start decides again after its conditional write lost a race for the row.
const START_ATTEMPTS: u32 = 8;

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
    /// Tags: string keys and values kept in the instance's status (and across
    /// continue-as-new), filtered on by listings (`InstanceQuery::tags`). At most `max_tags`
    /// (32); keys of 1 to `max_tag_key_chars` (64) ASCII letters, digits and `_ - . : /`;
    /// values of at most `max_tag_value_chars` (256) characters, no control characters (the
    /// hub's settings; else `TaskhubError::InvalidTag` naming the cap's setting, and nothing is
    /// started).
    pub tags: Tags,
    /// The trace the instance joins: its first turn's span becomes a child of this context
    /// (e.g. an incoming request's W3C `traceparent`). `None` starts a new trace.
    pub trace_parent: Option<TraceContext>,
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

    /// Starts an orchestration whose input is JSON text already (a file, a request body): the
    /// text is stored as it is, so what `serde_json::Value` would change — integers beyond
    /// 64 bits, the digits of a decimal, the order of keys — reaches the orchestration unchanged.
    ///
    /// # Errors
    /// As [`start_with`](Self::start_with).
    pub async fn start_payload(
        &self,
        name: &str,
        input: Payload,
        mut options: StartOptions,
    ) -> Result<InstanceId, TaskhubError> {
        // Without a version the hub's `default_version` (if set) is the instance's version.
        if options.version.is_none() {
            let default = &self.hub.settings().default_version;
            options.version = (!default.is_empty()).then(|| default.clone());
        }
        super::tags::validate_tags(&options.tags, &self.tag_caps())?;
        let instance_id = options
            .instance_id
            .clone()
            .unwrap_or_else(InstanceId::random);
        if taskhub_core::EntityId::is_entity_instance(&instance_id) {
            return Err(TaskhubError::Invalid(
                taskhub_core::CoreError::InvalidInstanceId {
                    id: instance_id.to_string(),
                    reason: "IDs starting with '@' are reserved for entities",
                },
            ));
        }
        // The row changed between the read and the write (a turn of the running execution,
        // a racing start): decide again on the row as it is now, a few times.
        let mut attempts = 0;
        loop {
            match self.try_start(name, &input, &options, &instance_id).await {
                Err(TaskhubError::Storage(StorageError::Conflict { .. }))
                    if attempts < START_ATTEMPTS =>
                {
                    attempts += 1;
                }
                other => return other.map(|()| instance_id),
            }
        }
    }

    /// One attempt of a start: read the row, apply the reuse policy, and write the Pending row
    /// with the start message (and, replacing an active execution, the terminate aimed at
    /// that execution) in one checkpoint conditional on the row read.
    async fn try_start(
        &self,
        name: &str,
        input: &Payload,
        options: &StartOptions,
        instance_id: &InstanceId,
    ) -> Result<(), TaskhubError> {
        let instance_id = instance_id.clone();
        let input = input.clone();
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
                    // Aimed at the execution being replaced only: applied after the new
                    // execution started, it is discarded as stale instead of ending it.
                    let mut terminate = Message::from_client(
                        instance_id.clone(),
                        EventKind::ExecutionTerminated {
                            reason: "replaced by a new start".into(),
                            output: None,
                        },
                        now,
                    );
                    terminate.execution_id = Some(row.execution_id.clone());
                    terminate.target_partition = Some(row.partition);
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
                applied_event_ids: Vec::new(),
                tags: Default::default(),
            },
            now,
        );
        start.execution_id = Some(execution_id.clone());
        start.target_partition = Some(partition);
        start.traceparent = options.trace_parent.map(|t| t.traceparent());
        // A start further ahead than the backend's longest delay comes early and goes round
        // again until its time (`worker::turn::start_accept::early_start`).
        let delay = scheduled_start.map_or(Duration::ZERO, |at| {
            at.saturating_since(now).min(store.max_delay())
        });
        outbound.push(
            self.outbound(QueueName::Control(partition), &start, delay)
                .await?,
        );
        let row = InstanceRow {
            instance_id: instance_id.clone(),
            name: name.to_owned(),
            version: options.version.clone(),
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
            tags: options.tags.clone(),
            executions: Vec::new(),
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
                Ok(())
            }
            Err(StorageError::Conflict { what }) => {
                // Someone else wrote the row. If a worker already picked up our own start, the
                // row carries our execution ID: the start succeeded. Otherwise the caller
                // decides again on the row as it is now.
                self.hub
                    .inner
                    .signals
                    .enqueued(QueueName::Control(partition));
                match store.get_instance(&instance_id).await? {
                    Some(row) if row.execution_id == execution_id => Ok(()),
                    _ => Err(StorageError::Conflict { what }.into()),
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
            tags: row.tags.clone(),
            reuse: ReusePolicy::TerminateActive,
            ..StartOptions::default()
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
