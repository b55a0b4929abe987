//! Raising events, terminating, suspending and resuming instances.

use serde::Serialize;
use taskhub_core::{EventKind, InstanceId, Message, MessageId, OrchestrationStatus, Payload};
use taskhub_storage::{InstanceRow, QueueName};

use super::prestart::Outcome;
use super::TaskHubClient;
use crate::error::TaskhubError;

/// Options of [`TaskHubClient::raise_event_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaiseOptions {
    /// A caller-chosen ID (idempotency key, 1 to 256 bytes): raising again with the same ID
    /// on the same instance delivers the event once. `None` makes every raise a new event.
    pub event_id: Option<String>,
}

impl TaskHubClient {
    /// The row of an instance that must exist.
    ///
    /// # Errors
    /// `NotFound` for an unknown instance, or a storage error.
    pub(super) async fn existing(
        &self,
        instance_id: &InstanceId,
    ) -> Result<InstanceRow, TaskhubError> {
        self.hub
            .store()
            .get_instance(instance_id)
            .await?
            .ok_or_else(|| TaskhubError::NotFound(instance_id.clone()))
    }

    /// The row of an instance that must exist and not have finished, for `operation`.
    ///
    /// # Errors
    /// `NotFound`, `WrongStatus` for a finished instance, or a storage error.
    async fn unfinished(
        &self,
        instance_id: &InstanceId,
        operation: &'static str,
    ) -> Result<InstanceRow, TaskhubError> {
        let row = self.existing(instance_id).await?;
        if row.status.is_terminal() {
            return Err(TaskhubError::wrong_status(
                instance_id,
                row.status,
                operation,
            ));
        }
        Ok(row)
    }

    /// Sends `event` to the instance of `row` if it `applies` there, else fails with
    /// `WrongStatus` for `operation`.
    async fn send_if(
        &self,
        row: &InstanceRow,
        applies: bool,
        operation: &'static str,
        event: EventKind,
    ) -> Result<(), TaskhubError> {
        if !applies {
            return Err(TaskhubError::wrong_status(
                &row.instance_id,
                row.status,
                operation,
            ));
        }
        self.send_to(row, event).await
    }

    async fn send_to(&self, row: &InstanceRow, event: EventKind) -> Result<(), TaskhubError> {
        let m = Message::from_client(row.instance_id.clone(), event, self.hub.clock().now());
        self.send_message(row, m).await
    }

    async fn send_message(&self, row: &InstanceRow, mut m: Message) -> Result<(), TaskhubError> {
        m.target_partition = Some(row.partition);
        self.hub.send(QueueName::Control(row.partition), &m).await?;
        Ok(())
    }

    /// Raises an external event on an instance. Events raised before the orchestration waits
    /// for them are buffered.
    ///
    /// # Errors
    /// `NotFound` for an unknown instance, `WrongStatus` for a finished one.
    pub async fn raise_event<T: Serialize + ?Sized>(
        &self,
        instance_id: &InstanceId,
        name: &str,
        data: &T,
    ) -> Result<(), TaskhubError> {
        self.raise_event_with(instance_id, name, data, RaiseOptions::default())
            .await
    }

    /// Raises an external event with options. With an `event_id`, retrying the call (after a
    /// timeout, a lost reply, a crash of the caller) delivers the event once: the message ID
    /// is derived from the instance and the event ID, and the instance applies a message ID at
    /// most once (recorded in its history, so this holds across reloads and workers, and
    /// across continue-as-new for the most recent
    /// [`CARRIED_EVENT_IDS`](taskhub_core::engine::CARRIED_EVENT_IDS) events).
    ///
    /// # Errors
    /// `NotFound` for an unknown instance, `WrongStatus` for a finished one, `Invalid` for an
    /// empty or over-long event ID.
    pub async fn raise_event_with<T: Serialize + ?Sized>(
        &self,
        instance_id: &InstanceId,
        name: &str,
        data: &T,
        options: RaiseOptions,
    ) -> Result<(), TaskhubError> {
        let data = Payload::to_payload(data, &format!("data of event '{name}'"))?;
        self.raise_event_payload(instance_id, name, data, options)
            .await
    }

    /// Raises an external event whose data is JSON text already (a file, a request body): the
    /// text is delivered as it is, so integers beyond 64 bits and the digits of decimals stay
    /// exact. Otherwise as [`raise_event_with`](Self::raise_event_with).
    ///
    /// # Errors
    /// As [`raise_event_with`](Self::raise_event_with).
    pub async fn raise_event_payload(
        &self,
        instance_id: &InstanceId,
        name: &str,
        input: Payload,
        options: RaiseOptions,
    ) -> Result<(), TaskhubError> {
        let id = options
            .event_id
            .as_deref()
            .map(|e| MessageId::for_raised_event(instance_id, e))
            .transpose()?;
        let row = self.unfinished(instance_id, "raise an event").await?;
        let mut m = Message::from_client(
            row.instance_id.clone(),
            EventKind::EventRaised {
                name: name.to_owned(),
                input,
            },
            self.hub.clock().now(),
        );
        if let Some(id) = id {
            m.id = id;
        }
        self.send_message(&row, m).await
    }

    /// Terminates an active instance. A Pending instance whose start is scheduled in the
    /// future is Terminated at once, and never runs.
    ///
    /// # Errors
    /// `NotFound`, or `WrongStatus` if it already finished.
    pub async fn terminate(
        &self,
        instance_id: &InstanceId,
        reason: &str,
    ) -> Result<(), TaskhubError> {
        self.terminate_with(instance_id, reason, None).await
    }

    /// Terminates an active instance as [`terminate`](Self::terminate) does, with `output`
    /// (any payload: JSON or an SDK's opaque text) as the instance's output instead of the
    /// reason as a JSON string. The Durable Task SDKs' terminate sends an output this way.
    ///
    /// # Errors
    /// `NotFound`, or `WrongStatus` if it already finished.
    pub async fn terminate_with_output(
        &self,
        instance_id: &InstanceId,
        reason: &str,
        output: Payload,
    ) -> Result<(), TaskhubError> {
        self.terminate_with(instance_id, reason, Some(output)).await
    }

    async fn terminate_with(
        &self,
        instance_id: &InstanceId,
        reason: &str,
        output: Option<Payload>,
    ) -> Result<(), TaskhubError> {
        let row = match self
            .terminate_before_start(instance_id, reason, output.as_ref())
            .await?
        {
            Outcome::Done => return Ok(()),
            Outcome::NotWaiting(row) => *row,
        };
        let event = EventKind::ExecutionTerminated {
            reason: reason.to_owned(),
            output,
        };
        self.send_if(&row, !row.status.is_terminal(), "terminate", event)
            .await
    }

    /// Suspends a running instance: messages are kept until it is resumed. A Pending instance
    /// whose start is scheduled in the future is Suspended at once, and runs only after it is
    /// resumed (at its scheduled time, or at once if that has passed).
    ///
    /// # Errors
    /// `NotFound`, or `WrongStatus` unless it is Pending or Running.
    pub async fn suspend(
        &self,
        instance_id: &InstanceId,
        reason: Option<&str>,
    ) -> Result<(), TaskhubError> {
        let row = match self.suspend_before_start(instance_id, reason).await? {
            Outcome::Done => return Ok(()),
            Outcome::NotWaiting(row) => *row,
        };
        let applies = matches!(
            row.status,
            OrchestrationStatus::Pending | OrchestrationStatus::Running
        );
        let event = EventKind::ExecutionSuspended {
            reason: reason.map(str::to_owned),
        };
        self.send_if(&row, applies, "suspend", event).await
    }

    /// Resumes a suspended instance.
    ///
    /// # Errors
    /// `NotFound`, or `WrongStatus` if it is finished.
    pub async fn resume(
        &self,
        instance_id: &InstanceId,
        reason: Option<&str>,
    ) -> Result<(), TaskhubError> {
        let row = self.unfinished(instance_id, "resume").await?;
        if self.resume_before_start(&row).await? {
            return Ok(());
        }
        self.send_to(
            &row,
            EventKind::ExecutionResumed {
                reason: reason.map(str::to_owned),
            },
        )
        .await
    }
}
