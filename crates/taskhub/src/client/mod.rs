//! The client: start and manage orchestration instances.

mod control;
mod dead_letters;
pub(crate) mod prestart;
mod purge;
mod query;
mod start;

pub use control::RaiseOptions;
pub use query::{suspend_reason, InstanceStatus, StatusOptions};
pub use start::{ReusePolicy, StartOptions};

use crate::hub::TaskHub;

/// Starts, queries and controls orchestration instances. Cheap to clone.
#[derive(Clone, Debug)]
pub struct TaskHubClient {
    hub: TaskHub,
}

impl TaskHubClient {
    pub(crate) fn new(hub: TaskHub) -> Self {
        Self { hub }
    }
}
