//! Starting and restarting instances, with an explicit instance-ID reuse policy.
//!
//! A start is one checkpoint with no history: the Pending row of the new execution and its
//! `ExecutionStarted` message (and, replacing an active execution, a terminate aimed at that
//! execution only), conditional on the row read. What it writes is decided once per attempt,
//! on that row, by the pure [`plan::plan_start`]; every front (the Rust API, HTTP, gRPC, the
//! CLI) comes through [`TaskHubClient::start_payload`], or [`TaskHubClient::restart_with`],
//! whose first attempt is decided on the row it read. If the row changed before the write
//! (a turn of the running execution, a racing start), the start is decided again, with a new
//! execution, on the row as it is then. `start_payload` stores JSON text as it is.
//!
//! A replaced active execution gets a terminate aimed at that execution only. On a backend
//! whose checkpoint sends the messages before it writes the row, a worker may take the start
//! before the row names its execution: it defers it until it does
//! (`worker::orchestration::start_accept`); if it already wrote the row of our execution when
//! our write conflicts, the start succeeded. A start that lost its race leaves its message
//! orphaned: the worker refuses it once it has waited long enough.

mod options;
pub(crate) mod plan;
mod policy;

use std::time::Duration;

use serde::Serialize;
use taskhub_core::{ExecutionId, InstanceId, Message, Payload};
use taskhub_storage::{CheckpointRequest, InstanceRow, OutboundMessage, QueueName, StorageError};

use self::plan::{plan_start, StartPlan, StartRequest, StartWrite};
use super::TaskHubClient;
use crate::error::TaskhubError;

pub use options::StartOptions;
pub use policy::{ReusePolicy, StatusSet};

/// How often a start decides again after its conditional write lost a race for the row.
const START_ATTEMPTS: u32 = 8;

/// A start being made: what every attempt decides on besides the row.
struct Start<'a> {
    instance_id: &'a InstanceId,
    name: &'a str,
    input: &'a Payload,
    options: &'a StartOptions,
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
        options: StartOptions,
    ) -> Result<InstanceId, TaskhubError> {
        self.start_on(name, input, options, None).await
    }

    /// A start whose first attempt is decided on `read`, the row under its ID if the caller
    /// read it already (a restart under the same ID); `None`: every attempt reads the row.
    async fn start_on(
        &self,
        name: &str,
        input: Payload,
        mut options: StartOptions,
        mut read: Option<InstanceRow>,
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
        let start = Start {
            instance_id: &instance_id,
            name,
            input: &input,
            options: &options,
        };
        // The row changed between the read and the write: decide again, a few times.
        let mut attempts = 0;
        loop {
            match self.try_start(&start, read.take()).await {
                Err(TaskhubError::Storage(StorageError::Conflict { .. }))
                    if attempts < START_ATTEMPTS =>
                {
                    attempts += 1;
                }
                other => return other.map(|()| instance_id),
            }
        }
    }

    /// One attempt of a start: read the row (unless `read` is it), decide on it
    /// ([`plan_start`]), and write.
    async fn try_start(
        &self,
        start: &Start<'_>,
        read: Option<InstanceRow>,
    ) -> Result<(), TaskhubError> {
        let now = self.hub.clock().now();
        let row = match read {
            Some(row) => Some(row),
            None => self.hub.store().get_instance(start.instance_id).await?,
        };
        let count = self.hub.fresh_partition_count().await;
        let execution_id = ExecutionId::random();
        let request = StartRequest {
            instance_id: start.instance_id,
            name: start.name,
            input: start.input,
            options: start.options,
            execution_id: &execution_id,
            new_partition: start.instance_id.partition(count),
            max_delay: self.hub.store().max_delay(),
        };
        match plan_start(row.as_ref(), &request, now)? {
            StartPlan::Keep => Ok(()),
            StartPlan::Write(write) => self.write_start(*write).await,
        }
    }

    /// Writes a planned start in one checkpoint conditional on the row it was decided on.
    async fn write_start(&self, write: StartWrite) -> Result<(), TaskhubError> {
        let StartWrite {
            row,
            expect,
            start,
            delay,
            terminate,
        } = write;
        let queue = QueueName::Control(row.partition);
        let mut outbound = Vec::new();
        if let Some(terminate) = &terminate {
            outbound.push(self.outbound(queue, terminate, Duration::ZERO).await?);
        }
        outbound.push(self.outbound(queue, &start, delay).await?);
        let instance_id = row.instance_id.clone();
        let execution_id = row.execution_id.clone();
        let request = CheckpointRequest {
            instance_id: instance_id.clone(),
            fence: None,
            history: None,
            instance: Some((row, expect)),
            outbound,
            consumed: Vec::new(),
        };
        let store = self.hub.store();
        match store.checkpoint(request).await {
            Ok(_) => {
                self.hub.inner.signals.enqueued_after(queue, delay);
                Ok(())
            }
            Err(StorageError::Conflict { what }) => {
                // Someone else wrote the row. If a worker already picked up our own start, the
                // row carries our execution ID: the start succeeded. Otherwise the caller
                // decides again on the row as it is now.
                self.hub.inner.signals.enqueued(queue);
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
        self.restart_with(instance_id, new_instance_id, ReusePolicy::TerminateActive)
            .await
    }

    /// As [`restart`](Self::restart), with `reuse` deciding what a restart under the same ID
    /// does with the instance (under a new ID the old instance is not touched). The row is read
    /// once: the start under the same ID is decided on the row its name and input come from.
    ///
    /// # Errors
    /// `NotFound` if the instance does not exist, `AlreadyExists` if `reuse` refuses it, or a
    /// storage error.
    pub async fn restart_with(
        &self,
        instance_id: &InstanceId,
        new_instance_id: bool,
        reuse: ReusePolicy,
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
            reuse,
            ..StartOptions::default()
        };
        let (name, input) = (row.name.clone(), row.input.clone());
        let read = (!new_instance_id).then_some(row);
        self.start_on(&name, input, options, read).await
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
