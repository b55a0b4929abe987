//! The Durable Functions entity routes: list entities (by name, `top` and
//! `x-ms-continuation-token` paging, `fetchState`, `lastOperationTimeFrom/To`), get one
//! entity's state, and signal an entity (`?op=`). Names are case-sensitive here (Durable
//! Functions lower-cases them).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use taskhub::EntityQuery;

use super::payload;
use crate::entity_input;
use crate::error::{ApiResult, HttpError};
use crate::responses::{DfEntity, ErrorBody, JsonText};
use crate::state::AppState;
use crate::{token, validate};

type Params = Query<HashMap<String, String>>;

fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    q.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// An entity list's handler, documented for the OpenAPI document: the routes for every name
/// and for one name differ only in their path and its `entityName`.
macro_rules! list_route {
    (@name) => {
        None
    };
    (@name $name:ident) => {
        Some(entity_input::entity_name("entityName", &$name)?)
    };
    ($(#[doc = $doc:tt])* $handler:ident($($name:ident)?), $path:tt, $summary:tt, [$($name_param:tt)*]) => {
        $(#[doc = $doc])*
        #[utoipa::path(get, path = $path, tag = "durable-functions",
            summary = $summary,
            params(
                $($name_param)*
                ("fetchState" = Option<bool>, Query, description = "true to include each entity's state (default false)."),
                ("lastOperationTimeFrom" = Option<String>, Query, description = "RFC 3339 or Unix ms: last operation at or after."),
                ("lastOperationTimeTo" = Option<String>, Query, description = "RFC 3339 or Unix ms: last operation before."),
                ("top" = Option<String>, Query, description = "Page size, 1 to 1000 (default 100)."),
                ("x-ms-continuation-token" = Option<String>, Header, description = "From the previous page's response header.")
            ),
            responses((status = 200, description = "Entities; x-ms-continuation-token header when more may follow", body = Vec<DfEntity>)))]
        pub(crate) async fn $handler(
            state: State<Arc<AppState>>,
            $(Path($name): Path<String>,)?
            q: Params,
            headers: HeaderMap,
        ) -> ApiResult<Response> {
            list_of(state, list_route!(@name $($name)?), q, headers).await
        }
    };
}

list_route!(
    /// `GET entities`: every entity with state.
    list_all(),
    "/runtime/webhooks/durabletask/entities",
    "List entities (with state)",
    []
);

list_route!(
    /// `GET entities/{entityName}`: 200 with an array of `{"entityId": {"name", "key"},
    /// "lastOperationTime", "state"?}` (the state with `fetchState=true`); entities without state
    /// are left out. `top` (default 100) pages, the next page's token in `x-ms-continuation-token`.
    list(name),
    "/runtime/webhooks/durabletask/entities/{entityName}",
    "List entities of one name (with state)",
    [("entityName" = String, Path, description = "The entity name (case-sensitive)."),]
);

async fn list_of(
    State(s): State<Arc<AppState>>,
    name: Option<String>,
    Query(q): Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let fetch_state = validate::flag("fetchState", param(&q, "fetchState"), false)?;
    let time = |field: &'static str| {
        param(&q, field)
            .map(|t| validate::time(field, t))
            .transpose()
    };
    let query = EntityQuery {
        name,
        last_modified_from: time("lastOperationTimeFrom")?,
        last_modified_to: time("lastOperationTimeTo")?,
        page_size: validate::page_size(param(&q, "top"))?,
        continuation: payload::continuation(&headers)?,
        ..EntityQuery::default()
    };
    let page = s.client.list_entities(&query).await?;
    let body: Vec<DfEntity> = page
        .entities
        .iter()
        .map(|e| DfEntity::of(e, fetch_state))
        .collect();
    token::paged_json(body, page.continuation.as_deref())
}

/// `GET entities/{entityName}/{entityKey}`: 200 with the entity's state as the body; 404 if it
/// has none (never signalled, or deleted); 400 for an invalid name or key.
#[utoipa::path(get, path = "/runtime/webhooks/durabletask/entities/{entityName}/{entityKey}", tag = "durable-functions",
    summary = "Get an entity's state",
    params(("entityName" = String, Path), ("entityKey" = String, Path)),
    responses(
        (status = 200, description = "The state as JSON", body = JsonText),
        (status = 404, description = "The entity has no state", body = ErrorBody)
    ))]
pub(crate) async fn get(
    State(s): State<Arc<AppState>>,
    Path((name, key)): Path<(String, String)>,
) -> ApiResult<Response> {
    let id = entity_input::entity_of(&name, &key)?;
    let state = s.client.get_entity(&id).await?.and_then(|e| e.state);
    match state {
        Some(state) => Ok(Json(JsonText::of(&state)).into_response()),
        None => Err(HttpError::NotFound(format!("entity '{id}'"))),
    }
}

/// `POST entities/{entityName}/{entityKey}?op=NAME` with the input as the JSON body
/// (`Content-Type: application/json`; empty: `null`): 202 with no body; 400 for an invalid
/// name, key or operation, or content that is not JSON.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/entities/{entityName}/{entityKey}", tag = "durable-functions",
    summary = "Signal an entity",
    params(
        ("entityName" = String, Path),
        ("entityKey" = String, Path),
        ("op" = Option<String>, Query, description = "The operation name.")
    ),
    request_body(content = Option<serde_json::Value>, description = "The operation input (empty: null)", content_type = "application/json"),
    responses(
        (status = 202, description = "Accepted (no body)"),
        (status = 413, description = "Body over the limit", body = ErrorBody)
    ))]
pub(crate) async fn signal(
    State(s): State<Arc<AppState>>,
    Path((name, key)): Path<(String, String)>,
    Query(q): Params,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let id = entity_input::entity_of(&name, &key)?;
    let op = entity_input::operation(q.get("op").map(String::as_str))?;
    let body = validate::body_bytes(body, s.body_limit)?;
    if !body.iter().all(u8::is_ascii_whitespace) && !payload::is_json(&headers) {
        return Err(HttpError::Invalid {
            field: "body",
            message: "Only application/json request content is supported".to_owned(),
        });
    }
    let input = validate::json_body(Ok(body), s.body_limit, "the operation input")?;
    s.client.signal_entity_payload(&id, &op, input).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}
