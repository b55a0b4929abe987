//! Durable entities: list (by name, paged), one entity with its state, lock and queue, signal,
//! delete the state, and clean-up of empty entities and orphaned locks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use taskhub::{CleanEntities, EntityQuery};

use crate::df::payload::{encode_segment, json_of};
use crate::entity_input;
use crate::error::{ApiResult, HttpError};
use crate::responses::{
    CleanResult, EntityDeleted, EntityPage, EntitySignalled, EntityView, ErrorBody,
};
use crate::state::AppState;
use crate::{token, validate};

/// `GET /api/entities?name=&includeStateless=&top=&continuationToken=`: `{"entities": [...],
/// "continuationToken": ...}` by entity ID; entities without state only with
/// `includeStateless=true`.
#[utoipa::path(get, path = "/api/entities", tag = "taskhub",
    summary = "List entities",
    params(
        ("name" = Option<String>, Query, description = "Only entities of this name."),
        ("includeStateless" = Option<String>, Query, description = "true to list entities without state too."),
        ("top" = Option<String>, Query, description = "Page size, 1 to 1000 (default 100)."),
        ("continuationToken" = Option<String>, Query, description = "From the previous page.")
    ),
    responses((status = 200, description = "A page of entities", body = EntityPage)))]
pub(crate) async fn list(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult<Json<EntityPage>> {
    let get = |k: &str| q.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let name = get("name")
        .map(|n| entity_input::entity_name("name", n))
        .transpose()?;
    let continuation = get("continuationToken")
        .or_else(|| headers.get(token::HEADER).and_then(|h| h.to_str().ok()))
        .map(token::decode)
        .transpose()?;
    let page = s
        .client
        .list_entities(&EntityQuery {
            name,
            include_stateless: validate::flag("includeStateless", get("includeStateless"), false)?,
            page_size: validate::page_size(get("top"))?,
            continuation,
            ..EntityQuery::default()
        })
        .await?;
    Ok(Json(EntityPage {
        entities: page.entities.iter().map(EntityView::from).collect(),
        continuation_token: page.continuation.as_deref().map(encode_segment),
    }))
}

/// `GET /api/entities/{entityId}`: the entity (state, last change, lock holder, queued
/// requests); 404 if it has no row.
#[utoipa::path(get, path = "/api/entities/{entityId}", tag = "taskhub",
    summary = "One entity: state, lock holder, queued requests",
    params(("entityId" = String, Path, description = "@name@key (percent-encoded).")),
    responses(
        (status = 200, description = "The entity", body = EntityView),
        (status = 404, description = "The entity has no row", body = ErrorBody)
    ))]
pub(crate) async fn detail(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<EntityView>> {
    let id = entity_input::entity_id(&id)?;
    let e = s
        .client
        .get_entity(&id)
        .await?
        .ok_or_else(|| HttpError::NotFound(format!("entity '{id}'")))?;
    Ok(Json(EntityView::from(&e)))
}

/// `POST /api/entities/{entityId}/signal?op=NAME` with the input as the JSON body (empty:
/// `null`): 202 `{"entityId", "op"}`; the operation runs later, after the requests sent
/// before it.
#[utoipa::path(post, path = "/api/entities/{entityId}/signal", tag = "taskhub",
    summary = "Signal an entity",
    params(
        ("entityId" = String, Path, description = "@name@key (percent-encoded)."),
        ("op" = Option<String>, Query, description = "The operation name.")
    ),
    request_body(content = Option<serde_json::Value>, description = "The operation input (empty: null)", content_type = "application/json"),
    responses(
        (status = 202, description = "Queued", body = EntitySignalled),
        (status = 413, description = "Body over the limit", body = ErrorBody)
    ))]
pub(crate) async fn signal(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let id = entity_input::entity_id(&id)?;
    let op = entity_input::operation(q.get("op").map(String::as_str))?;
    let input = validate::json_body(body, s.body_limit, "the operation input")?;
    s.client.signal_entity_payload(&id, &op, input).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EntitySignalled {
            entity_id: id.to_string(),
            op,
        }),
    )
        .into_response())
}

/// `DELETE /api/entities/{entityId}`: deletes the entity's state, as a request that runs
/// after the ones sent before it: 202 `{"entityId"}`; 404 if the entity has no row.
#[utoipa::path(delete, path = "/api/entities/{entityId}", tag = "taskhub",
    summary = "Delete an entity's state (after the requests sent before)",
    params(("entityId" = String, Path, description = "@name@key (percent-encoded).")),
    responses(
        (status = 202, description = "Queued", body = EntityDeleted),
        (status = 404, description = "The entity has no row", body = ErrorBody)
    ))]
pub(crate) async fn delete(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = entity_input::entity_id(&id)?;
    if s.client.get_entity(&id).await?.is_none() {
        return Err(HttpError::NotFound(format!("entity '{id}'")));
    }
    s.client.delete_entity(&id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EntityDeleted {
            entity_id: id.to_string(),
        }),
    )
        .into_response())
}

/// `POST /api/entities/clean` with an optional JSON body `{"removeEmpty": bool,
/// "releaseOrphanedLocks": bool, "minIdleSeconds": n}` (defaults: true, true, 300): removes
/// empty entities unchanged for that long (never one that changed meanwhile) and releases
/// locks held by orchestrations that ended; 200 `{"removed", "locksReleased"}`.
#[utoipa::path(post, path = "/api/entities/clean", tag = "taskhub",
    summary = "Remove empty entities and release orphaned locks",
    request_body(content = Option<Object>, content_type = "application/json",
        description = "`{\"removeEmpty\": bool, \"releaseOrphanedLocks\": bool, \"minIdleSeconds\": n}` (defaults: true, true, 300)"),
    responses((status = 200, description = "What was done", body = CleanResult)))]
pub(crate) async fn clean(
    State(s): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<CleanResult>> {
    let body = json_of(&validate::json_body(body, s.body_limit, "the request")?);
    let request = clean_request(&body)?;
    let done = s.client.clean_entities(&request).await?;
    Ok(Json(CleanResult {
        removed: done.removed,
        locks_released: done.locks_released,
    }))
}

fn clean_request(body: &Value) -> ApiResult<CleanEntities> {
    let mut request = CleanEntities::default();
    let fields = match body {
        Value::Null => return Ok(request),
        Value::Object(fields) => fields,
        _ => {
            return Err(HttpError::Invalid {
                field: "body",
                message: "expected a JSON object or an empty body".to_owned(),
            })
        }
    };
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("removeEmpty", Value::Bool(b)) => request.remove_empty = *b,
            ("releaseOrphanedLocks", Value::Bool(b)) => request.release_orphaned_locks = *b,
            ("minIdleSeconds", v) if v.as_u64().is_some() => {
                request.min_idle = Duration::from_secs(v.as_u64().unwrap_or_default());
            }
            ("removeEmpty" | "releaseOrphanedLocks", _) => {
                return Err(HttpError::Invalid {
                    field: "body",
                    message: format!("{key} must be true or false"),
                })
            }
            ("minIdleSeconds", _) => {
                return Err(HttpError::Invalid {
                    field: "body",
                    message: "minIdleSeconds must be a whole number of seconds".to_owned(),
                })
            }
            (other, _) => {
                return Err(HttpError::Invalid {
                    field: "body",
                    message: format!(
                    "unknown field {other:?} (removeEmpty, releaseOrphanedLocks, minIdleSeconds)"
                ),
                })
            }
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn clean_requests_are_read_from_json_with_typed_errors() {
        assert_eq!(
            clean_request(&Value::Null).unwrap(),
            CleanEntities::default()
        );
        let r = clean_request(&json!({"removeEmpty": false, "minIdleSeconds": 0})).unwrap();
        assert!(!r.remove_empty && r.release_orphaned_locks && r.min_idle.is_zero());
        for bad in [
            json!([]),
            json!({"minIdleSeconds": -1}),
            json!({"removeEmpty": "yes"}),
            json!({"purge": true}),
        ] {
            assert!(
                matches!(
                    clean_request(&bad),
                    Err(HttpError::Invalid { field: "body", .. })
                ),
                "{bad}"
            );
        }
    }
}
