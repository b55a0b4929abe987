//! Work that waits for a remote worker whose filters take it: SDK workers connected over gRPC
//! may send work-item filters (`taskhub-grpc`, `dispatch/filters.rs`), and an orchestration,
//! activity or entity batch that none of the connected workers' filters take waits, Pending,
//! for one that does. The executor that holds such work counts it ([`UnmatchedWork`]); the
//! serving process hands a reader of it ([`UnmatchedSource`]) to its HTTP API, whose partitions
//! page, stats and scale recommendation show it ([`HubAdmin::scale_seeing`](super::HubAdmin::scale_seeing)).

use std::sync::Arc;

use serde::Serialize;

/// The kinds of work an executor holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    /// An orchestration turn.
    Orchestration,
    /// An activity.
    Activity,
    /// An entity batch.
    Entity,
}

impl WorkKind {
    /// Its name in messages (`orchestration`, `activity`, `entity`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Orchestration => "orchestration",
            Self::Activity => "activity",
            Self::Entity => "entity",
        }
    }
}

/// A name (and version) that work waits for a worker to take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnmatchedName {
    /// What kind of work.
    pub kind: WorkKind,
    /// The orchestration's or activity's name, or the entity's name (`name` of `@name@key`).
    pub name: String,
    /// Its version, if it has one.
    pub version: Option<String>,
    /// How many items of it wait.
    pub items: usize,
}

/// The work an executor holds now because none of its connected workers' filters take it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnmatchedWork {
    /// The remote workers connected now (0: the work waits for any worker).
    pub workers: usize,
    /// Orchestration turns waiting.
    pub orchestrations: usize,
    /// Activities waiting.
    pub activities: usize,
    /// Entity batches waiting.
    pub entities: usize,
    /// What they wait for, most items first, at most [`UnmatchedWork::MAX_NAMES`].
    pub names: Vec<UnmatchedName>,
    /// How many more names wait than `names` lists.
    pub omitted: usize,
}

impl UnmatchedWork {
    /// The most names listed.
    pub const MAX_NAMES: usize = 20;

    /// Every item waiting.
    #[must_use]
    pub fn total(&self) -> usize {
        self.orchestrations
            .saturating_add(self.activities)
            .saturating_add(self.entities)
    }

    /// In words, e.g. `2 orchestration(s), 0 activity(ies), 0 entity batch(es) wait for an SDK
    /// worker whose filters take them (none of the 1 connected does): orchestration 'B' (2)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let who = if self.workers == 0 {
            "no SDK worker is connected".to_owned()
        } else {
            format!(
                "none of the {} connected SDK worker(s) has filters that take them",
                self.workers
            )
        };
        let mut names: Vec<String> = self
            .names
            .iter()
            .map(|n| {
                let version = n
                    .version
                    .as_deref()
                    .map_or_else(String::new, |v| format!(" version '{v}'"));
                format!("{} '{}'{version} ({})", n.kind.as_str(), n.name, n.items)
            })
            .collect();
        if self.omitted > 0 {
            names.push(format!("{} more", self.omitted));
        }
        format!(
            "{} orchestration(s), {} activity(ies) and {} entity batch(es) wait for an SDK \
             worker whose filters take them ({who}): {}",
            self.orchestrations,
            self.activities,
            self.entities,
            names.join(", ")
        )
    }
}

/// Reads the work waiting for a matching worker in this process (e.g.
/// `move || dispatcher.unmatched()` for a `taskhub-grpc` dispatcher).
pub type UnmatchedSource = Arc<dyn Fn() -> UnmatchedWork + Send + Sync>;
