//! One entity in a Durable Functions entity list.

use serde::Serialize;
use taskhub::EntityMetadata;
use utoipa::ToSchema;

use super::JsonText;
use crate::isotime;

/// An entity's name and key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DfEntityId {
    /// The entity name.
    pub name: String,
    /// The entity key.
    pub key: String,
}

/// An entity: its ID, last change and (with `fetchState=true`) its state.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DfEntity {
    /// Name and key.
    pub entity_id: DfEntityId,
    /// When its state last changed.
    pub last_operation_time: String,
    /// The state, with `fetchState=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<JsonText>,
}

impl DfEntity {
    /// `e`, with its state if `fetch_state`.
    pub fn of(e: &EntityMetadata, fetch_state: bool) -> Self {
        Self {
            entity_id: DfEntityId {
                name: e.id.name().to_owned(),
                key: e.id.key().to_owned(),
            },
            last_operation_time: isotime::millis(e.last_modified),
            state: fetch_state.then(|| JsonText::of_opt(e.state.as_ref())),
        }
    }
}
