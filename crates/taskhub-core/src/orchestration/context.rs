//! The API orchestration code is written against.

use std::future::Future;
use std::time::{Duration, SystemTime};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::descriptor::{ActivityRef, OrchestrationRef};
use crate::engine::Action;
use crate::history::Tags;
use crate::ids::{name_uuid, InstanceId};
use crate::orchestration::error::{OrchestrationError, TaskError};
use crate::orchestration::events::EventFuture;
use crate::orchestration::retry::RetryPolicy;
use crate::orchestration::state::{
    identity_accessors, lock, ContinueAsNewRequest, LogLevel, LogRecord, SharedState, TaskKind,
};
use crate::orchestration::task::{TaskFuture, TimerFuture};
use crate::payload::Payload;
use crate::time::Timestamp;

/// The handle orchestration code uses to schedule durable work. Cheap to clone.
///
/// Orchestration code must be deterministic: it may only wait on futures created through this
/// context (and the combinators in this crate), and must read time and randomness only through
/// [`now`](Self::now) and [`new_guid`](Self::new_guid).
///
/// An orchestration is a plain async function of a context and a typed input. Below, one waits
/// for an approval or a timeout, whichever comes first, then calls an activity; the pure engine
/// drives it turn by turn here, as a worker does (recording every step as history):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use taskhub_core::*;
///
/// async fn ship_when_approved(
///     ctx: OrchestrationContext,
///     order: String,
/// ) -> Result<String, OrchestrationError> {
///     ctx.set_custom_status("waiting for approval")?;
///     let approval = ctx.wait_for_event::<String>("approved");
///     let deadline = ctx.sleep(Duration::from_secs(24 * 3600));
///     match when_any2(approval, deadline).await {
///         Either::Left(approver) => {
///             let approver = approver?;
///             let receipt: String = ctx.call_activity("Ship", &order).await?;
///             Ok(format!("{receipt} (approved by {approver})"))
///         }
///         Either::Right(()) => Ok(format!("{order}: no approval within a day")),
///     }
/// }
///
/// let mut registry = Registry::new();
/// registry.orchestration("ShipWhenApproved", ship_when_approved);
/// let id = InstanceId::new("order-7")?;
/// let mut session = OrchestrationSession::new(Arc::new(registry), id.clone());
/// let at = |ms| Timestamp::from_millis(ms);
/// let message = |event| Message::from_client(id.clone(), event, at(0));
///
/// // Turn 1: the start; the code creates the timer and waits.
/// let start = message(EventKind::ExecutionStarted {
///     name: "ShipWhenApproved".into(), version: None,
///     input: Payload::to_payload("order 7", "input")?, execution_id: ExecutionId::random(),
///     parent: None, scheduled_start: None, applied_event_ids: Vec::new(), tags: Default::default(),
/// });
/// let turn = session.turn(TurnInput { now: at(0), messages: vec![start] });
/// assert!(matches!(turn.actions[..], [Action::CreateTimer { .. }]));
///
/// // Turn 2: the event arrives; the code schedules the activity.
/// let approved = message(EventKind::EventRaised {
///     name: "approved".into(), input: Payload::to_payload("ana", "event")?,
/// });
/// let turn = session.turn(TurnInput { now: at(5), messages: vec![approved] });
/// let Some(Action::ScheduleActivity { task_id, name, .. }) = turn.actions.first() else {
///     panic!("expected the activity: {:?}", turn.actions);
/// };
/// assert_eq!(name, "Ship");
///
/// // Turn 3: the activity's result; the orchestration completes.
/// let shipped = message(EventKind::TaskCompleted {
///     task_id: *task_id, result: Payload::to_payload("parcel 1", "result")?,
/// });
/// session.turn(TurnInput { now: at(9), messages: vec![shipped] });
/// assert_eq!(session.status(), OrchestrationStatus::Completed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OrchestrationContext {
    state: SharedState,
}

/// Options for [`OrchestrationContext::call_sub_orchestration_with`].
#[derive(Debug, Clone, Default)]
pub struct SubOrchestrationOptions {
    /// The child's version; `None` runs the default version.
    pub version: Option<String>,
    /// The child's instance ID; `None` derives `{parent}:{task id}`.
    pub instance_id: Option<InstanceId>,
    /// Retry policy; each attempt is a new child instance unless `instance_id` is set.
    pub retry: Option<RetryPolicy>,
}

/// Options for [`OrchestrationContext::continue_as_new_with`].
#[derive(Debug, Clone)]
pub struct ContinueAsNewOptions {
    /// The version of the next execution; `None` keeps the current one.
    pub version: Option<String>,
    /// Carry external events that arrived but were not consumed into the next execution
    /// (default `true`). `false` drops them, and the `ContinuedAsNew` history event names
    /// what it dropped (`dropped_events`). Events that arrive after the execution ended are
    /// for the next execution either way.
    pub preserve_unprocessed_events: bool,
}

impl Default for ContinueAsNewOptions {
    fn default() -> Self {
        Self {
            version: None,
            preserve_unprocessed_events: true,
        }
    }
}

impl OrchestrationContext {
    pub(crate) fn new(state: SharedState) -> Self {
        Self { state }
    }

    pub(crate) fn shared_state(&self) -> &SharedState {
        &self.state
    }

    identity_accessors!();

    /// The deterministic current time: the start time of the current turn, identical on replay.
    #[must_use]
    pub fn now(&self) -> SystemTime {
        lock(&self.state).now.to_system_time()
    }

    /// True while the code is re-executing turns already recorded in history.
    #[must_use]
    pub fn is_replaying(&self) -> bool {
        lock(&self.state).replaying
    }

    /// A deterministic GUID: the same sequence of values on every replay of this execution.
    #[must_use]
    pub fn new_guid(&self) -> uuid::Uuid {
        let mut st = lock(&self.state);
        st.guid_counter += 1;
        name_uuid(&[
            st.instance_id.as_str().as_bytes(),
            st.execution_id.as_str().as_bytes(),
            &st.guid_counter.to_le_bytes(),
        ])
    }

    /// Sets the custom status shown by status queries.
    ///
    /// # Errors
    /// A payload error if `status` cannot be serialized.
    pub fn set_custom_status<T: Serialize + ?Sized>(&self, status: &T) -> Result<(), TaskError> {
        let payload = Payload::to_payload(status, "custom status")?;
        let mut st = lock(&self.state);
        st.custom_status = Some(payload);
        st.custom_status_changed = true;
        Ok(())
    }

    /// Writes a log line once: lines written while replaying are suppressed, so each appears
    /// exactly once however often the orchestration is replayed. The runtime forwards them to
    /// `tracing`.
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        let mut st = lock(&self.state);
        if !st.replaying {
            st.logs.push(LogRecord {
                level,
                message: message.into(),
            });
        }
    }

    /// [`log`](Self::log) at info level.
    pub fn log_info(&self, message: impl Into<String>) {
        self.log(LogLevel::Info, message);
    }

    /// [`log`](Self::log) at warn level.
    pub fn log_warn(&self, message: impl Into<String>) {
        self.log(LogLevel::Warn, message);
    }

    /// Schedules an activity and returns a future of its output.
    pub fn call_activity<I: Serialize, O: DeserializeOwned>(
        &self,
        name: &str,
        input: I,
    ) -> TaskFuture<O> {
        with_input("activity", name, &input, |input| {
            self.schedule_activity(name, input, 1)
        })
    }

    /// Schedules an activity with a retry policy; waits between attempts are durable timers.
    /// The first attempt is scheduled at the call, like [`call_activity`](Self::call_activity).
    pub fn call_activity_with_retry<I: Serialize, O: DeserializeOwned + Send + 'static>(
        &self,
        name: &str,
        input: I,
        policy: RetryPolicy,
    ) -> impl Future<Output = Result<O, TaskError>> + Send + 'static {
        self.retrying(
            "activity",
            name,
            input,
            Some(policy),
            |ctx, name, input, n| ctx.schedule_activity(name, input, n),
        )
    }

    /// Schedules the first attempt of a task of `what` kind now (`schedule(ctx, name, input,
    /// attempt)`) and returns the future of its output, which schedules the retries `policy`
    /// asks for.
    fn retrying<I: Serialize, O: DeserializeOwned + Send + 'static>(
        &self,
        what: &str,
        name: &str,
        input: I,
        policy: Option<RetryPolicy>,
        schedule: impl Fn(&Self, &str, Payload, u32) -> TaskFuture<O> + Send + Sync + 'static,
    ) -> impl Future<Output = Result<O, TaskError>> + Send + 'static {
        let ctx = self.clone();
        let name = name.to_owned();
        let scheduled =
            Payload::to_payload(&input, &format!("input of {what} '{name}'")).map(|input| {
                let first = schedule(&ctx, &name, input.clone(), 1);
                (input, first)
            });
        let first = ctx.now();
        async move {
            let (input, task) = scheduled?;
            let Some(policy) = policy else {
                return task.await;
            };
            ctx.with_retries(&policy, first, task, |attempt| {
                schedule(&ctx, &name, input.clone(), attempt)
            })
            .await
        }
    }

    /// Awaits `task`, the first attempt; while an attempt fails and `policy` retries it (after
    /// its back-off on a durable timer), awaits `next(attempt)`, the attempt numbered so.
    async fn with_retries<O>(
        &self,
        policy: &RetryPolicy,
        first: SystemTime,
        mut task: TaskFuture<O>,
        next: impl Fn(u32) -> TaskFuture<O>,
    ) -> Result<O, TaskError>
    where
        O: DeserializeOwned,
    {
        let mut attempt = 1;
        loop {
            match task.await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    if !self.should_retry(policy, &e, attempt, first).await {
                        return Err(e);
                    }
                    attempt += 1;
                    task = next(attempt);
                }
            }
        }
    }

    /// Decides whether to retry; if so, waits the back-off on a durable timer first.
    async fn should_retry(
        &self,
        policy: &RetryPolicy,
        err: &TaskError,
        attempt: u32,
        first: SystemTime,
    ) -> bool {
        if attempt >= policy.max_attempts() || err.is_non_retryable() || !policy.accepts(err) {
            return false;
        }
        let delay = policy.delay_after(attempt);
        let next = self.now() + delay;
        if let Some(timeout) = policy.retry_timeout() {
            if next.duration_since(first).unwrap_or(Duration::ZERO) > timeout {
                return false;
            }
        }
        self.create_timer(next).await;
        true
    }

    fn schedule_activity<O>(&self, name: &str, input: Payload, attempt: u32) -> TaskFuture<O> {
        let task_id = lock(&self.state).emit(
            |task_id| Action::ScheduleActivity {
                task_id,
                name: name.to_owned(),
                version: None,
                input,
                attempt,
                tags: Tags::new(),
                traceparent: None,
            },
            Some(TaskKind::Activity),
        );
        TaskFuture::scheduled(self.state.clone(), task_id, "activity", name.to_owned())
    }

    /// Starts a sub-orchestration (default version, derived instance ID) and returns a future
    /// of its output.
    pub fn call_sub_orchestration<I: Serialize, O: DeserializeOwned>(
        &self,
        name: &str,
        input: I,
    ) -> TaskFuture<O> {
        with_input("sub-orchestration", name, &input, |input| {
            self.start_sub(name, input, &SubOrchestrationOptions::default())
        })
    }

    /// Starts a sub-orchestration with options (version, instance ID, retry policy). The first
    /// attempt is scheduled at the call, like
    /// [`call_sub_orchestration`](Self::call_sub_orchestration).
    pub fn call_sub_orchestration_with<I: Serialize, O: DeserializeOwned + Send + 'static>(
        &self,
        name: &str,
        input: I,
        options: SubOrchestrationOptions,
    ) -> impl Future<Output = Result<O, TaskError>> + Send + 'static {
        let policy = options.retry.clone();
        self.retrying(
            "sub-orchestration",
            name,
            input,
            policy,
            move |ctx, name, input, _| ctx.start_sub(name, input, &options),
        )
    }

    fn start_sub<O>(
        &self,
        name: &str,
        input: Payload,
        options: &SubOrchestrationOptions,
    ) -> TaskFuture<O> {
        let mut st = lock(&self.state);
        let parent = st.instance_id.clone();
        let task_id = st.emit(
            |task_id| Action::StartSubOrchestration {
                task_id,
                name: name.to_owned(),
                version: options.version.clone(),
                instance_id: options
                    .instance_id
                    .clone()
                    .unwrap_or_else(|| child_id(&parent, task_id)),
                input,
                // A Rust retry starts under a new task ID.
                attempt: 1,
                tags: Tags::new(),
                traceparent: None,
            },
            Some(TaskKind::SubOrchestration),
        );
        drop(st);
        TaskFuture::scheduled(
            self.state.clone(),
            task_id,
            "sub-orchestration",
            name.to_owned(),
        )
    }

    /// Calls the activity a typed descriptor names: as
    /// [`call_activity`](Self::call_activity), with the input and output types taken from the
    /// descriptor, so a mismatch with the registered activity is a compile error.
    ///
    /// ```
    /// use taskhub_core::*;
    ///
    /// const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
    ///
    /// async fn hello(ctx: OrchestrationContext, name: String) -> Result<String, OrchestrationError> {
    ///     Ok(ctx.call(GREET, name).await?)
    /// }
    /// # let mut registry = Registry::new();
    /// # registry.orchestration("Hello", hello);
    /// ```
    pub fn call<I: Serialize, O: DeserializeOwned>(
        &self,
        activity: ActivityRef<I, O>,
        input: I,
    ) -> TaskFuture<O> {
        self.call_activity(activity.name(), input)
    }

    /// Calls the activity a typed descriptor names with a retry policy: as
    /// [`call_activity_with_retry`](Self::call_activity_with_retry), typed by the descriptor.
    pub fn call_with_retry<I: Serialize, O: DeserializeOwned + Send + 'static>(
        &self,
        activity: ActivityRef<I, O>,
        input: I,
        policy: RetryPolicy,
    ) -> impl Future<Output = Result<O, TaskError>> + Send + 'static {
        self.call_activity_with_retry(activity.name(), input, policy)
    }

    /// Runs the orchestration a typed descriptor names as a sub-orchestration (in the
    /// descriptor's version, derived instance ID): as
    /// [`call_sub_orchestration`](Self::call_sub_orchestration), typed by the descriptor.
    pub fn call_sub<I: Serialize, O: DeserializeOwned>(
        &self,
        orchestration: OrchestrationRef<I, O>,
        input: I,
    ) -> TaskFuture<O> {
        let name = orchestration.name();
        let options = SubOrchestrationOptions {
            version: orchestration.version().map(str::to_owned),
            ..SubOrchestrationOptions::default()
        };
        with_input("sub-orchestration", name, &input, |input| {
            self.start_sub(name, input, &options)
        })
    }

    /// Runs the orchestration a typed descriptor names as a sub-orchestration with options
    /// (instance ID, retry policy): as
    /// [`call_sub_orchestration_with`](Self::call_sub_orchestration_with), typed by the
    /// descriptor. Without a version in `options`, the descriptor's version runs.
    pub fn call_sub_with<I: Serialize, O: DeserializeOwned + Send + 'static>(
        &self,
        orchestration: OrchestrationRef<I, O>,
        input: I,
        mut options: SubOrchestrationOptions,
    ) -> impl Future<Output = Result<O, TaskError>> + Send + 'static {
        if options.version.is_none() {
            options.version = orchestration.version().map(str::to_owned);
        }
        self.call_sub_orchestration_with(orchestration.name(), input, options)
    }

    /// A durable timer that fires at `fire_at`.
    pub fn create_timer(&self, fire_at: SystemTime) -> TimerFuture {
        let fire_at = Timestamp::from_system_time(fire_at);
        let task_id = lock(&self.state).emit(
            |task_id| Action::CreateTimer { task_id, fire_at },
            Some(TaskKind::Timer),
        );
        TimerFuture::new(self.state.clone(), task_id)
    }

    /// A durable timer that fires `delay` after the current (deterministic) time.
    pub fn sleep(&self, delay: Duration) -> TimerFuture {
        let fire_at = lock(&self.state).now.saturating_add(delay);
        self.create_timer(fire_at.to_system_time())
    }

    /// Waits for an external event named `name` (buffered: see [`EventFuture`]).
    pub fn wait_for_event<T: DeserializeOwned>(&self, name: &str) -> EventFuture<T> {
        EventFuture::new(self.state.clone(), name)
    }

    /// Sends an external event to another instance (fire and forget).
    ///
    /// # Errors
    /// A payload error if `data` cannot be serialized; nothing is sent then.
    pub fn raise_event<T: Serialize + ?Sized>(
        &self,
        instance_id: &InstanceId,
        name: &str,
        data: &T,
    ) -> Result<(), TaskError> {
        let input = Payload::to_payload(data, &format!("data of event '{name}'"))?;
        let mut st = lock(&self.state);
        let task_id = st.next_task_id;
        let after = st.previous_send(instance_id, task_id);
        st.emit(
            |task_id| Action::SendEvent {
                task_id,
                instance_id: instance_id.clone(),
                name: name.to_owned(),
                input,
                after,
            },
            None,
        );
        Ok(())
    }

    /// Ends this execution and starts a new one with `input` and a fresh history. Await the
    /// returned future as the orchestration's last step: `return ctx.continue_as_new(x).await;`
    /// External events that arrived but were not consumed are carried over to the next
    /// execution (see [`ContinueAsNewOptions`]).
    pub fn continue_as_new<T: Serialize, R>(
        &self,
        input: T,
    ) -> impl Future<Output = Result<R, OrchestrationError>> {
        self.continue_as_new_with(input, ContinueAsNewOptions::default())
    }

    /// [`continue_as_new`](Self::continue_as_new) with options (version, carrying events).
    pub fn continue_as_new_with<T: Serialize, R>(
        &self,
        input: T,
        options: ContinueAsNewOptions,
    ) -> impl Future<Output = Result<R, OrchestrationError>> {
        let request = Payload::to_payload(&input, "input of continue-as-new").map(|input| {
            ContinueAsNewRequest {
                input,
                version: options.version,
                preserve_unprocessed_events: options.preserve_unprocessed_events,
            }
        });
        let state = self.state.clone();
        async move {
            match request {
                Ok(req) => {
                    lock(&state).continue_as_new = Some(req);
                    // The engine ends the execution after this poll; the future never resolves.
                    std::future::pending::<Result<R, OrchestrationError>>().await
                }
                Err(e) => Err(OrchestrationError::from(e)),
            }
        }
    }
}

/// The default instance ID of a sub-orchestration: `{parent}:{task id}`, truncated to a valid ID.
fn child_id(parent: &InstanceId, task_id: u64) -> InstanceId {
    let suffix = format!(":{task_id}");
    let mut base = parent.as_str().to_owned();
    while base.len() + suffix.len() > crate::ids::MAX_INSTANCE_ID_BYTES {
        base.pop();
    }
    InstanceId::new(base + &suffix).unwrap_or_else(|_| InstanceId::random())
}

/// `schedule(input)` with the input of a task of `what` kind serialized, or a task that fails
/// with the serialization error.
fn with_input<I: Serialize, O>(
    what: &str,
    name: &str,
    input: &I,
    schedule: impl FnOnce(Payload) -> TaskFuture<O>,
) -> TaskFuture<O> {
    match Payload::to_payload(input, &format!("input of {what} '{name}'")) {
        Ok(input) => schedule(input),
        Err(e) => TaskFuture::failed(e),
    }
}
