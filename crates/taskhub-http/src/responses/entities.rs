//! Durable entities as the dashboard shows them, and the answers to signal, delete and
//! clean-up.

use serde::Serialize;
use taskhub::EntityMetadata;
use utoipa::ToSchema;

use super::JsonText;
use crate::isotime;

/// One entity: its state, last change, lock holder and queued requests.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntityView {
    /// `@name@key`.
    pub entity_id: String,
    /// The entity name.
    pub name: String,
    /// The entity key.
    pub key: String,
    /// The state (`null` without one).
    pub state: JsonText,
    /// True if it has state.
    pub has_state: bool,
    /// When its state last changed.
    pub last_modified_time: String,
    /// The orchestration that holds its lock.
    pub locked_by: Option<String>,
    /// Requests waiting for the lock.
    pub queued: usize,
}

impl From<&EntityMetadata> for EntityView {
    fn from(e: &EntityMetadata) -> Self {
        Self {
            entity_id: e.id.to_string(),
            name: e.id.name().to_owned(),
            key: e.id.key().to_owned(),
            state: JsonText::of_opt(e.state.as_ref()),
            has_state: e.state.is_some(),
            last_modified_time: isotime::millis(e.last_modified),
            locked_by: e.locked_by.as_ref().map(ToString::to_string),
            queued: e.queued,
        }
    }
}

/// A page of entities.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntityPage {
    /// The entities.
    pub entities: Vec<EntityView>,
    /// The next page's token; `null` on the last page.
    pub continuation_token: Option<String>,
}

/// A signal was queued.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntitySignalled {
    /// `@name@key`.
    pub entity_id: String,
    /// The operation.
    pub op: String,
}

/// A delete was queued.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntityDeleted {
    /// `@name@key`.
    pub entity_id: String,
}

/// What a clean-up did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CleanResult {
    /// Empty entities removed.
    pub removed: usize,
    /// Orphaned locks released.
    pub locks_released: usize,
}
