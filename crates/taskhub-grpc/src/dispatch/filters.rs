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
//! * an activity scheduled without a version is matched by the version of the orchestration
//!   that scheduled it (the SDKs put a worker's orchestration version on its activity filters
//!   too: Python 1.12.0 `WorkItemFilters._from_registry`, JavaScript 0.4.0
//!   `generateWorkItemFiltersFromRegistry`, .NET `FromDurableTaskRegistry`; but schedule
//!   activities without one: Python's `call_activity`, JavaScript's `callActivity` without
//!   `options.version`), so a version 1 orchestration's activity runs where version 1 runs.
//!   That version is known here when the orchestration's turn went out from this process
//!   ([`OrchestrationVersions`]); when it is not (another process scheduled it), the activity
//!   matches a listed name whatever versions are listed, rather than wait for ever.
//!
//! An item no connected worker's filters take waits, as while no worker is connected
//! (`wait.rs`: after `no_worker_wait` the runtime gives its work back uncounted and asks again);
//! it is never failed for want of a worker.

use std::collections::HashMap;

use super::state::{Kind, Outgoing};
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

/// The version of each orchestration instance whose turn went out from here (bounded: past
/// [`OrchestrationVersions::MAX`] instances, one is forgotten for each new one).
#[derive(Debug, Default)]
pub(crate) struct OrchestrationVersions(HashMap<String, String>);

impl OrchestrationVersions {
    /// The most instances remembered.
    const MAX: usize = 100_000;

    /// The name (and version) of an item of `kind` going out as `request`; an orchestration's
    /// version is noted for its activities, and an activity without a version takes its
    /// orchestration's.
    pub(crate) fn name_of(&mut self, kind: Kind, request: &Outgoing) -> Option<WorkName> {
        let mut name = request.name.clone()?;
        match (&request.request, kind) {
            (work_item::Request::OrchestratorRequest(r), Kind::Orchestration) => {
                // A turn without a version (a later execution, a re-created instance) leaves
                // none behind for its activities.
                if name.version.is_none() {
                    self.0.remove(&r.instance_id);
                }
                if let Some(v) = &name.version {
                    if self.0.len() >= Self::MAX && !self.0.contains_key(&r.instance_id) {
                        let forget = self.0.keys().next().cloned();
                        if let Some(k) = forget {
                            self.0.remove(&k);
                        }
                    }
                    self.0.insert(r.instance_id.clone(), v.clone());
                }
            }
            (work_item::Request::ActivityRequest(a), Kind::Activity) if name.version.is_none() => {
                let instance = a
                    .orchestration_instance
                    .as_ref()
                    .map(|i| i.instance_id.as_str());
                name.version = instance.and_then(|i| self.0.get(i)).cloned();
            }
            _ => {}
        }
        Some(name)
    }
}

/// One kind's names, each with the versions it takes (none: any).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names(Vec<(String, Vec<String>)>);

impl Names {
    /// Whether a listed name takes `w`: `any_case` compares names without regard to case;
    /// `unversioned_any` lets an item without a version match whatever versions are listed.
    fn takes(&self, w: &WorkName, (any_case, unversioned_any): (bool, bool)) -> bool {
        self.0.iter().any(|(name, versions)| {
            let same_name = if any_case {
                name.eq_ignore_ascii_case(&w.name)
            } else {
                *name == w.name
            };
            same_name
                && (versions.is_empty()
                    || (unversioned_any && w.version.is_none())
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
        let (names, rules) = match kind {
            Kind::Orchestration => (&lists.orchestrations, (false, false)),
            Kind::Activity => (&lists.activities, (false, true)),
            Kind::Entity => (&lists.entities, (true, false)),
        };
        names.takes(name, rules)
    }

    /// Whether the worker sent filters.
    pub(crate) fn any(&self) -> bool {
        self.0.is_some()
    }
}

#[cfg(test)]
#[path = "filters_tests.rs"]
mod tests;
