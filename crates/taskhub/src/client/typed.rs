//! Typed starts: an [`OrchestrationRef`] names the orchestration and its input and output
//! types, and the start returns an [`InstanceHandle`] whose output has that type.

use std::marker::PhantomData;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use taskhub_core::{InstanceId, OrchestrationRef, OrchestrationStatus, Payload};

use super::{InstanceStatus, StartOptions, StatusOptions, TaskHubClient};
use crate::error::TaskhubError;

/// An orchestration instance whose output type `O` is known from its descriptor: returned by
/// [`TaskHubClient::start_typed`], or made for an existing instance with
/// [`TaskHubClient::instance`]. Cheap to clone.
pub struct InstanceHandle<O> {
    client: TaskHubClient,
    id: InstanceId,
    output: PhantomData<fn() -> O>,
}

impl<O> Clone for InstanceHandle<O> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            id: self.id.clone(),
            output: PhantomData,
        }
    }
}

impl<O> std::fmt::Debug for InstanceHandle<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceHandle")
            .field("id", &self.id)
            .field("output", &std::any::type_name::<O>())
            .finish()
    }
}

impl<O> InstanceHandle<O> {
    /// The instance's ID.
    #[must_use]
    pub fn id(&self) -> &InstanceId {
        &self.id
    }

    /// The instance's ID, consuming the handle.
    #[must_use]
    pub fn into_id(self) -> InstanceId {
        self.id
    }
}

impl<O: DeserializeOwned> InstanceHandle<O> {
    /// The instance's status now, or `None` if it does not exist (any more).
    ///
    /// # Errors
    /// A storage error.
    pub async fn status(&self) -> Result<Option<InstanceStatus>, TaskhubError> {
        self.client
            .get_status(&self.id, StatusOptions::default())
            .await
    }

    /// Waits until the instance finishes (as [`TaskHubClient::wait_for_completion`]) and
    /// returns its output.
    ///
    /// # Errors
    /// [`TaskhubError::InstanceFailed`] with the failure if it failed,
    /// [`TaskhubError::InstanceTerminated`] with the reason if it was terminated, `Timeout`,
    /// `NotFound`, a payload error if the output is not an `O`, or a storage error.
    pub async fn wait_for_completion(&self, timeout: Duration) -> Result<O, TaskhubError> {
        let status = self.client.wait_for_completion(&self.id, timeout).await?;
        output_of(&status)
    }
}

/// The output of a finished instance as `O`, or the error that says how it ended instead.
fn output_of<O: DeserializeOwned>(status: &InstanceStatus) -> Result<O, TaskhubError> {
    let row = &status.row;
    let what = format!("output of instance '{}'", row.instance_id);
    match row.status {
        OrchestrationStatus::Completed => {
            let null = Payload::from_json("null")?;
            Ok(row.output.as_ref().unwrap_or(&null).parse(&what)?)
        }
        OrchestrationStatus::Terminated => Err(TaskhubError::InstanceTerminated {
            instance_id: row.instance_id.clone(),
            reason: status.output::<String>().ok().flatten().unwrap_or_default(),
        }),
        _ => Err(TaskhubError::InstanceFailed {
            instance_id: row.instance_id.clone(),
            failure: row.failure.clone().unwrap_or_else(|| {
                taskhub_core::FailureDetails::new(
                    "Unknown",
                    format!("the instance ended as {}", row.status),
                )
            }),
        }),
    }
}

impl TaskHubClient {
    /// Starts the orchestration a typed descriptor names (in its version, if it has one), with
    /// a random instance ID. The input must be the descriptor's input type; the handle's
    /// [`wait_for_completion`](InstanceHandle::wait_for_completion) returns its output type.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// use taskhub::*;
    ///
    /// const DOUBLE: OrchestrationRef<u64, u64> = OrchestrationRef::new("Double");
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let clock = Arc::new(taskhub_storage::SystemClock::new());
    /// # let store = Arc::new(taskhub_storage::memory::MemoryStore::new(clock));
    /// # let hub = TaskHub::open(store, Settings::default()).await?;
    /// let mut registry = Registry::new();
    /// registry.register_orchestration(DOUBLE, |_ctx, n: u64| async move {
    ///     Ok::<_, OrchestrationError>(n * 2)
    /// });
    /// let worker = Worker::start(&hub, registry).await?;
    ///
    /// let instance = hub.client().start_typed(&DOUBLE, 21).await?;
    /// let doubled: u64 = instance.wait_for_completion(Duration::from_secs(30)).await?;
    /// assert_eq!(doubled, 42);
    /// worker.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// An input of another type does not compile:
    ///
    /// ```compile_fail,E0308
    /// use taskhub::*;
    ///
    /// const DOUBLE: OrchestrationRef<u64, u64> = OrchestrationRef::new("Double");
    ///
    /// async fn start(client: &TaskHubClient) -> Result<u64, TaskhubError> {
    ///     let instance = client.start_typed(&DOUBLE, "21").await?; // DOUBLE takes a u64
    ///     instance.wait_for_completion(std::time::Duration::from_secs(30)).await
    /// }
    /// ```
    ///
    /// With a `u64` the same code compiles (so the example above fails for its type alone):
    ///
    /// ```
    /// use taskhub::*;
    ///
    /// const DOUBLE: OrchestrationRef<u64, u64> = OrchestrationRef::new("Double");
    ///
    /// async fn start(client: &TaskHubClient) -> Result<u64, TaskhubError> {
    ///     let instance = client.start_typed(&DOUBLE, 21).await?;
    ///     instance.wait_for_completion(std::time::Duration::from_secs(30)).await
    /// }
    /// ```
    ///
    /// # Errors
    /// An unserializable input, or a storage error.
    pub async fn start_typed<I: Serialize, O: DeserializeOwned>(
        &self,
        orchestration: &OrchestrationRef<I, O>,
        input: I,
    ) -> Result<InstanceHandle<O>, TaskhubError> {
        self.start_typed_with(orchestration, input, StartOptions::default())
            .await
    }

    /// [`start_typed`](Self::start_typed) with options (instance ID, reuse policy, start
    /// time). Without a version in `options`, the descriptor's version runs.
    ///
    /// # Errors
    /// As [`start_with`](Self::start_with).
    pub async fn start_typed_with<I: Serialize, O: DeserializeOwned>(
        &self,
        orchestration: &OrchestrationRef<I, O>,
        input: I,
        mut options: StartOptions,
    ) -> Result<InstanceHandle<O>, TaskhubError> {
        if options.version.is_none() {
            options.version = orchestration.version().map(str::to_owned);
        }
        let id = self
            .start_with(orchestration.name(), input, options)
            .await?;
        Ok(self.instance(orchestration, id))
    }

    /// A typed handle on an existing instance of the orchestration a descriptor names (one
    /// started elsewhere, e.g. by another process). Nothing is read until the handle is used.
    #[must_use]
    pub fn instance<I, O>(
        &self,
        _orchestration: &OrchestrationRef<I, O>,
        id: InstanceId,
    ) -> InstanceHandle<O> {
        InstanceHandle {
            client: self.clone(),
            id,
            output: PhantomData,
        }
    }
}
