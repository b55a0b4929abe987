//! Work-item filters (`GetWorkItemsRequest.workItemFilters`): a worker that sends them gets
//! only the orchestrations, activities and entities they name (the Python SDK's
//! `use_work_item_filters`, the JavaScript SDK's, .NET's `UseWorkItemFilters`, built from what
//! the worker registered). The protocol's rules:
//! * no filters at all: everything;
//! * filters: an item goes to the worker only if its name is listed under its kind (an empty
//!   list for a kind: nothing of that kind); a listed name with versions takes only those
//!   versions, one without versions any version;
//! * entities are named by the `name` of `@name@key`, without regard to case (entity names
//!   are case-insensitive).
//!
//! An item no connected worker's filters take waits, as while no worker is connected
//! (`wait.rs`: after `no_worker_wait` the runtime gives its work back uncounted and asks again);
//! it is never failed for want of a worker.

use super::state::Kind;
use crate::proto::{work_item, WorkItemFilters};

/// What a filter looks at: an item's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct WorkName {
    /// The orchestration's or activity's name, or the entity's name.
    pub(crate) name: String,
    /// The version (`None` or empty: none).
    pub(crate) version: Option<String>,
}

impl WorkName {
    /// `name` at `version`.
    pub(crate) fn new(name: impl Into<String>, version: Option<String>) -> Self {
        Self {
            name: name.into(),
            version: version.filter(|v| !v.is_empty()),
        }
    }

    /// The name of an outgoing request, as far as it can be read from it (an orchestration
    /// turn's is read from the `executionStarted` among its new events; a later turn's is given
    /// by the caller, who has the history).
    pub(crate) fn of_request(request: &work_item::Request) -> Option<Self> {
        match request {
            work_item::Request::ActivityRequest(a) => {
                Some(Self::new(a.name.clone(), a.version.clone()))
            }
            work_item::Request::EntityRequest(e) => Some(Self::entity(&e.instance_id)),
            work_item::Request::EntityRequestV2(e) => Some(Self::entity(&e.instance_id)),
            work_item::Request::OrchestratorRequest(o) => {
                o.new_events.iter().find_map(|e| match &e.event_type {
                    Some(crate::proto::history_event::EventType::ExecutionStarted(s)) => {
                        Some(Self::new(s.name.clone(), s.version.clone()))
                    }
                    _ => None,
                })
            }
            work_item::Request::HealthPing(_) => None,
        }
    }

    /// The name part of entity instance ID `@name@key`.
    fn entity(instance_id: &str) -> Self {
        let name = instance_id
            .strip_prefix('@')
            .and_then(|rest| rest.split_once('@'))
            .map_or(instance_id, |(name, _)| name);
        Self::new(name, None)
    }
}

/// One kind's names, each with the versions it takes (none: any).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names(Vec<(String, Vec<String>)>);

impl Names {
    fn takes(&self, w: &WorkName, any_case: bool) -> bool {
        self.0.iter().any(|(name, versions)| {
            let same_name = if any_case {
                name.eq_ignore_ascii_case(&w.name)
            } else {
                *name == w.name
            };
            same_name
                && (versions.is_empty()
                    || versions
                        .iter()
                        .any(|v| Some(v.as_str()) == w.version.as_deref()))
        })
    }
}

/// The names each kind takes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lists {
    orchestrations: Names,
    activities: Names,
    entities: Names,
}

/// A worker's filters (`None`: it sent none and takes everything).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Filters(Option<Lists>);

impl Filters {
    /// The filters a worker sent.
    pub(crate) fn from_proto(f: Option<&WorkItemFilters>) -> Self {
        Self(f.map(|f| {
            Lists {
                orchestrations: Names(
                    f.orchestrations
                        .iter()
                        .map(|o| (o.name.clone(), o.versions.clone()))
                        .collect(),
                ),
                activities: Names(
                    f.activities
                        .iter()
                        .map(|a| (a.name.clone(), a.versions.clone()))
                        .collect(),
                ),
                entities: Names(
                    f.entities
                        .iter()
                        .map(|e| (e.name.clone(), Vec::new()))
                        .collect(),
                ),
            }
        }))
    }

    /// Whether the worker takes an item of `kind` named `name` (`None`: a name that could not
    /// be read, which only a worker without filters takes).
    pub(crate) fn take(&self, kind: Kind, name: Option<&WorkName>) -> bool {
        let Some(lists) = &self.0 else {
            return true;
        };
        let Some(name) = name else {
            return false;
        };
        let (names, any_case) = match kind {
            Kind::Orchestration => (&lists.orchestrations, false),
            Kind::Activity => (&lists.activities, false),
            Kind::Entity => (&lists.entities, true),
        };
        names.takes(name, any_case)
    }

    /// Whether the worker sent filters.
    pub(crate) fn any(&self) -> bool {
        self.0.is_some()
    }
}

#[cfg(test)]
#[path = "filters_tests.rs"]
mod tests;
