//! `SignalEntity`, `GetEntity`, `QueryEntities`, `CleanEntityStorage` over the client's
//! entity calls. Entity IDs are `@name@key`.

use taskhub::{CleanEntities, EntityMetadata, EntityQuery, TaskHubClient};
use taskhub_storage::Clock;
use tonic::Status;

use super::fields;
use crate::convert::{payload_from_proto, payload_to_proto, timestamp_to_proto};
use crate::error::{invalid, invalid_value, status_of};
use crate::proto::{
    self, CleanEntityStorageRequest, CleanEntityStorageResponse, GetEntityRequest,
    GetEntityResponse, QueryEntitiesRequest, QueryEntitiesResponse, SignalEntityRequest,
    SignalEntityResponse,
};

/// A page's size when the call names none, and the largest answered.
const DEFAULT_PAGE: usize = 100;
const MAX_PAGE: usize = 1000;

pub(crate) async fn signal(
    client: &TaskHubClient,
    clock: &dyn Clock,
    r: SignalEntityRequest,
) -> Result<SignalEntityResponse, Status> {
    let entity = fields::entity_id(&r.instance_id, "instanceId")?;
    let op = fields::name(&r.name, "name")?;
    let input = payload_from_proto(r.input.as_deref(), "input").map_err(|e| invalid_value(&e))?;
    let at = fields::time(r.scheduled_time.as_ref(), "scheduledTime")?
        .filter(|at| *at > clock.now())
        .map(taskhub::Timestamp::to_system_time);
    let sent = match at {
        None => client.signal_entity_payload(&entity, op, input).await,
        // The text as it is (JSON or an SDK's opaque payload).
        Some(at) => {
            client
                .signal_entity_payload_at(&entity, op, input, at)
                .await
        }
    };
    sent.map_err(|e| status_of(&e))?;
    Ok(SignalEntityResponse {})
}

fn metadata(m: &EntityMetadata, include_state: bool) -> proto::EntityMetadata {
    proto::EntityMetadata {
        instance_id: m.id.to_string(),
        last_modified_time: Some(timestamp_to_proto(m.last_modified)),
        backlog_queue_size: i32::try_from(m.queued).unwrap_or(i32::MAX),
        // The orchestration instance that holds the lock.
        locked_by: m.locked_by.as_ref().map(ToString::to_string),
        serialized_state: include_state
            .then(|| m.state.as_ref().and_then(payload_to_proto))
            .flatten(),
    }
}

/// `GetEntity`: `exists: false` for an entity without state (never written, or deleted).
pub(crate) async fn get(
    client: &TaskHubClient,
    r: GetEntityRequest,
) -> Result<GetEntityResponse, Status> {
    let entity = fields::entity_id(&r.instance_id, "instanceId")?;
    let found = client
        .get_entity(&entity)
        .await
        .map_err(|e| status_of(&e))?
        .filter(|m| m.state.is_some());
    Ok(GetEntityResponse {
        exists: found.is_some(),
        entity: found.map(|m| metadata(&m, r.include_state)),
    })
}

/// The entity name a prefix `@name@…` names in full, if it does.
fn full_name(prefix: &str) -> Option<&str> {
    let rest = prefix.strip_prefix('@')?;
    let (name, _) = rest.split_once('@')?;
    (!name.is_empty()).then_some(name)
}

/// `QueryEntities`: entities whose ID starts with `instanceIdStartsWith`, by ID, paged. A
/// prefix that names a whole entity name is a name filter of the store; a shorter one is
/// matched on each page (a page may then hold fewer entities than asked for; follow the token).
pub(crate) async fn query(
    client: &TaskHubClient,
    r: QueryEntitiesRequest,
) -> Result<QueryEntitiesResponse, Status> {
    let q = r.query.unwrap_or_default();
    let prefix = q.instance_id_starts_with.filter(|p| !p.is_empty());
    if let Some(p) = &prefix {
        if !p.starts_with('@') {
            return Err(invalid(
                "query.instanceIdStartsWith",
                "entity IDs start with '@' (`@name@key`)",
            ));
        }
    }
    let query = EntityQuery {
        name: prefix.as_deref().and_then(full_name).map(str::to_owned),
        include_stateless: q.include_transient,
        last_modified_from: fields::time(q.last_modified_from.as_ref(), "query.lastModifiedFrom")?,
        last_modified_to: fields::time(q.last_modified_to.as_ref(), "query.lastModifiedTo")?,
        page_size: fields::page_size(q.page_size.unwrap_or(0), DEFAULT_PAGE, MAX_PAGE),
        continuation: q.continuation_token.filter(|t| !t.is_empty()),
    };
    let page = client
        .list_entities(&query)
        .await
        .map_err(|e| status_of(&e))?;
    Ok(QueryEntitiesResponse {
        entities: page
            .entities
            .iter()
            .filter(|m| {
                prefix
                    .as_deref()
                    .is_none_or(|p| m.id.instance_id().as_str().starts_with(p))
            })
            .map(|m| metadata(m, q.include_state))
            .collect(),
        continuation_token: page.continuation,
    })
}

/// `CleanEntityStorage`: one pass over every entity (no continuation is returned). Empty
/// entities are removed once unchanged for the client's default idle time (5 minutes), so an
/// entity a batch is writing right now is kept.
pub(crate) async fn clean(
    client: &TaskHubClient,
    r: CleanEntityStorageRequest,
) -> Result<CleanEntityStorageResponse, Status> {
    let request = CleanEntities {
        remove_empty: r.remove_empty_entities,
        release_orphaned_locks: r.release_orphaned_locks,
        ..CleanEntities::default()
    };
    let done = client
        .clean_entities(&request)
        .await
        .map_err(|e| status_of(&e))?;
    Ok(CleanEntityStorageResponse {
        continuation_token: None,
        empty_entities_removed: i32::try_from(done.removed).unwrap_or(i32::MAX),
        orphaned_locks_released: i32::try_from(done.locks_released).unwrap_or(i32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_names_an_entity_name_only_when_whole() {
        assert_eq!(full_name("@counter@"), Some("counter"));
        assert_eq!(full_name("@counter@ke"), Some("counter"));
        assert_eq!(full_name("@coun"), None);
        assert_eq!(full_name("@"), None);
        assert_eq!(full_name("@@x"), None);
    }
}
