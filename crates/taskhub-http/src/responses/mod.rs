//! The JSON bodies of every response, one module per resource: each is a `Serialize` struct
//! that also derives `ToSchema`, so the OpenAPI document ([`crate::openapi`]) describes
//! exactly what the handlers send. The Durable Functions shapes (`df_*`) are those of the
//! extension's `HttpApiHandler`; Taskhub's own (`/api/`) are camelCase.

mod dead_letters;
mod df_entities;
mod df_management;
mod df_status;
mod entities;
mod error;
mod hub;
mod instances;
mod json_text;
mod partitions;

pub(crate) use dead_letters::{DeadLetterView, Replayed};
pub(crate) use df_entities::DfEntity;
pub(crate) use df_management::ManagementPayload;
pub(crate) use df_status::{InstanceStatus, Purged, Show};
pub(crate) use entities::{CleanResult, EntityDeleted, EntityPage, EntitySignalled, EntityView};
pub(crate) use error::ErrorBody;
pub(crate) use hub::{HubInfo, Stats, WorkerCounters};
pub(crate) use instances::{
    Child, ExecutionView, HistoryItem, InstanceDetail, InstancePage, InstanceView, Parent,
};
pub(crate) use json_text::JsonText;
pub(crate) use partitions::{
    PartitionChanged, PartitionView, Prohibited, Scale, UnmatchedView, WorkerView, Workers,
};
