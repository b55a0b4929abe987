//! Taskhub: durable orchestrations for Rust.
//!
//! This crate is what users depend on. It re-exports the programming model of
//! [`taskhub_core`] and adds the worker runtime and the client:
//!
//! * [`TaskHub`]: a task hub opened on a storage backend (`taskhub-sqlite` by default,
//!   `taskhub-azure` for Azure Storage, or the memory backend of `taskhub-storage` for tests);
//! * [`Worker`]: runs registered orchestrations and activities;
//! * [`TaskHubClient`]: starts, queries and controls instances.

pub mod admin;
pub mod client;
mod codec;
pub mod error;
pub mod executor;
pub mod hub;
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
pub use taskhub_core::*;
pub use taskhub_storage::{
    Cleared, ExecutionRecord, InstancePage, InstanceQuery, InstanceRow, ListOrder, ProcessKind,
    ProcessRecord, Tags,
};
pub use worker::{Worker, WorkerHandle, WorkerStats};
