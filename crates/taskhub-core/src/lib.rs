//! Taskhub core: the programming model of durable orchestrations and a pure replay engine.
//!
//! This crate has no I/O, no clock and no async runtime. It defines
//!
//! * identifiers ([`InstanceId`], [`ExecutionId`], [`MessageId`]),
//! * the history event types ([`HistoryEvent`], [`EventKind`]) and the message envelope
//!   ([`Message`]), with a versioned storage format ([`format`](mod@format)),
//! * the API orchestration and activity code is written against ([`OrchestrationContext`],
//!   [`ActivityContext`]), with typed descriptors ([`ActivityRef`], [`OrchestrationRef`]) that
//!   make a caller/callee type mismatch a compile error, and
//! * the replay engine ([`OrchestrationSession`]) that turns history plus new messages into new
//!   history events and [`Action`]s for the runtime to carry out.
//!
//! ```
//! use std::sync::Arc;
//! use taskhub_core::*;
//!
//! async fn hello(ctx: OrchestrationContext, name: String) -> Result<String, OrchestrationError> {
//!     let greeting: String = ctx.call_activity("SayHello", name).await?;
//!     Ok(greeting)
//! }
//!
//! let mut registry = Registry::new();
//! registry.orchestration("Hello", hello);
//! let id = InstanceId::new("hello-1").unwrap();
//! let mut session = OrchestrationSession::new(Arc::new(registry), id.clone());
//! let start = Message::from_client(id, EventKind::ExecutionStarted {
//!     name: "Hello".into(), version: None, input: Payload::to_payload("Tokyo", "input").unwrap(),
//!     execution_id: ExecutionId::random(), parent: None, scheduled_start: None,
//!     applied_event_ids: Vec::new(), tags: Default::default(),
//! }, Timestamp::from_millis(0));
//! let turn = session.turn(TurnInput { now: Timestamp::from_millis(0), messages: vec![start] });
//! assert!(matches!(&turn.actions[0], Action::ScheduleActivity { name, .. } if name == "SayHello"));
//! ```

pub mod activity;
pub mod descriptor;
pub mod engine;
pub mod entity;
pub mod error;
pub mod format;
pub mod history;
pub mod ids;
pub mod message;
pub mod orchestration;
pub mod payload;
pub mod registry;
pub mod status;
pub mod time;

pub use activity::{ActivityContext, ActivityError, ActivityInvocation};
pub use descriptor::{ActivityRef, OrchestrationRef};
pub use engine::{
    run_turn, Action, DecisionRule, DiscardReason, Discarded, OpenChild, OrchestrationSession,
    PendingTurn, RewindPlan, TurnInput, TurnResult, TurnStep,
};
pub use entity::{EntityContext, EntityError, EntityId, EntityType};
pub use error::CoreError;
pub use history::{CarriedEvent, EventKind, FailureDetails, HistoryEvent, ParentInstance, Tags};
pub use ids::{ExecutionId, InstanceId, MessageId, MAX_EVENT_ID_BYTES};
pub use message::{Message, SendOrder, Sender};
pub use orchestration::combinators::{when_all, when_any, when_any2, Either};
pub use orchestration::context::{
    ContinueAsNewOptions, OrchestrationContext, SubOrchestrationOptions,
};
pub use orchestration::entities::CriticalSection;
pub use orchestration::error::{OrchestrationError, TaskError};
pub use orchestration::events::EventFuture;
pub use orchestration::retry::RetryPolicy;
pub use orchestration::task::{TaskFuture, TimerFuture};
pub use orchestration::{LogLevel, LogRecord};
pub use payload::Payload;
pub use registry::{ActivityFuture, OrchestrationFuture, Registry};
pub use status::OrchestrationStatus;
pub use time::Timestamp;
