//! Taskhub: durable orchestrations for Rust.
//!
//! This crate is what users depend on: a curated surface over the runtime and the programming
//! model of [`taskhub_core`]. The replay engine (sessions, turns, actions, the message envelope
//! and its storage format) stays in `taskhub-core`; nothing here is needed to use it.
//!
//! * **Running**: [`TaskHub`] (a task hub opened on a storage backend: `taskhub-sqlite` by
//!   default, `taskhub-azure`, `taskhub-postgres`, or the memory backend of `taskhub-storage` for
//!   tests), [`Worker`] (runs registered orchestrations, activities and entities),
//!   [`Settings`] (the runtime's settings, [`settings`] for reading them from files and the
//!   environment).
//! * **Controlling**: [`TaskHubClient`] starts, queries, raises events at, suspends, terminates,
//!   rewinds and purges instances ([`StartOptions`], [`StatusOptions`], [`InstanceStatus`],
//!   [`InstanceRow`], [`InstanceQuery`], ...); [`TaskhubError`] is its error.
//! * **Writing code**: orchestrations take an [`OrchestrationContext`] (activities, timers,
//!   sub-orchestrations, external events, entities, [`RetryPolicy`], [`when_all`] /
//!   [`when_any`]) and return `Result<_, OrchestrationError>`; activities take an
//!   [`ActivityContext`]; entities an [`EntityContext`]. Register them by name in a
//!   [`Registry`], or through typed descriptors ([`ActivityRef`], [`OrchestrationRef`]).
//! * **Data**: [`Payload`] (JSON inputs and outputs), [`InstanceId`], [`ExecutionId`],
//!   [`EntityId`], [`OrchestrationStatus`], [`Timestamp`], and the history the client returns
//!   ([`HistoryEvent`], [`EventKind`], [`FailureDetails`]).
//! * **Extending**: [`executor`] (a [`Worker`] whose orchestrations run elsewhere, as the gRPC
//!   endpoint's SDK workers do), [`admin`] (partitions and unmatched work), [`telemetry`].
//!
//! ```no_run
//! use taskhub::{OrchestrationContext, OrchestrationError, Registry};
//!
//! async fn hello(ctx: OrchestrationContext, name: String) -> Result<String, OrchestrationError> {
//!     Ok(ctx.call_activity("SayHello", name).await?)
//! }
//!
//! let mut registry = Registry::new();
//! registry.orchestration("Hello", hello);
//! ```

pub mod admin;
pub mod client;
mod codec;
pub mod error;
pub mod executor;
pub mod hub;
#[doc(hidden)]
pub mod lease;
pub mod process;
mod retries;
mod rows;
pub mod settings;
mod signals;
mod startup;
pub mod telemetry;
pub mod time;
pub mod worker;

pub use client::{
    CleanEntities, CleanEntitiesResult, EntityMetadata, EntityPage, EntityQuery, ExecutionStatus,
    InstanceHandle, InstanceStatus, PurgeOutcome, RaiseOptions, ReusePolicy, StartOptions,
    StatusOptions, StatusSet, TaskHubClient,
};
pub use error::TaskhubError;
pub use hub::TaskHub;
pub use process::{Announced, ProcessRegistry};
pub use settings::Settings;
pub use signals::InstanceChanged;
pub use taskhub_core::{
    when_all, when_any, when_any2, ActivityContext, ActivityError, ActivityRef, CarriedEvent,
    ContinueAsNewOptions, CoreError, CriticalSection, Either, EntityContext, EntityError, EntityId,
    EntityType, EventFuture, EventKind, ExecutionId, FailureDetails, HistoryEvent, InstanceId,
    LogLevel, MessageId, OrchestrationContext, OrchestrationError, OrchestrationRef,
    OrchestrationStatus, ParentInstance, Payload, Registry, RetryPolicy, SubOrchestrationOptions,
    TaskError, TaskFuture, TimerFuture, Timestamp, MAX_EVENT_ID_BYTES,
};
pub use taskhub_storage::{
    Cleared, ExecutionRecord, InstancePage, InstanceQuery, InstanceRow, ListOrder, ProcessKind,
    ProcessRecord, Tags,
};
pub use worker::{Worker, WorkerHandle, WorkerStats};
