//! The Durable Functions entity routes: list entities (by name, `top` and
//! `x-ms-continuation-token` paging, `fetchState`, `lastOperationTimeFrom/To`), get one
//! entity's state, and signal an entity (`?op=`). Names are case-sensitive here (Durable
//! Functions lower-cases them).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use taskhub::EntityQuery;

use super::payload::json_of;
use crate::entity_input;
use crate::error::{ApiResult, HttpError};
use crate::state::AppState;
use crate::{isotime, token, validate};

type Params = Query<HashMap<String, String>>;

fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    q.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// `GET entities`: every entity with state.
pub(crate) async fn list_all(
    state: State<Arc<AppState>>,
    q: Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    list_of(state, None, q, headers).await
}

/// `GET entities/{entityName}`: 200 with an array of `{"entityId": {"name", "key"},
/// "lastOperationTime", "state"?}` (the state with `fetchState=true`); entities without state
/// are left out. `top` (default 100) pages, the next page's token in `x-ms-continuation-token`.
pub(crate) async fn list(
    state: State<Arc<AppState>>,
    Path(name): Path<String>,
    q: Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let name = entity_input::entity_name("entityName", &name)?;
    list_of(state, Some(name), q, headers).await
}

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
        continuation: headers
            .get(token::HEADER)
            .and_then(|h| h.to_str().ok())
            .filter(|t| !t.is_empty() && *t != "null")
            .map(token::decode)
            .transpose()?,
        ..EntityQuery::default()
    };
    let page = s.client.list_entities(&query).await?;
    let body: Vec<Value> = page
        .entities
        .iter()
        .map(|e| {
            let mut v = json!({
                "entityId": { "name": e.id.name(), "key": e.id.key() },
                "lastOperationTime": isotime::millis(e.last_modified),
            });
            if fetch_state {
                v["state"] = e.state.as_ref().map_or(Value::Null, json_of);
            }
            v
        })
        .collect();
    token::paged_json(body, page.continuation.as_deref())
}

/// `GET entities/{entityName}/{entityKey}`: 200 with the entity's state as the body; 404 if it
/// has none (never signalled, or deleted); 400 for an invalid name or key.
pub(crate) async fn get(
    State(s): State<Arc<AppState>>,
    Path((name, key)): Path<(String, String)>,
) -> ApiResult<Response> {
    let id = entity_input::entity_of(&name, &key)?;
    let state = s.client.get_entity(&id).await?.and_then(|e| e.state);
    match state {
        Some(state) => Ok(Json(json_of(&state)).into_response()),
        None => Err(HttpError::NotFound(format!("entity '{id}'"))),
    }
}

/// `POST entities/{entityName}/{entityKey}?op=NAME` with the input as the JSON body
/// (`Content-Type: application/json`; empty: `null`): 202 with no body; 400 for an invalid
/// name, key or operation, or content that is not JSON.
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
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !body.iter().all(u8::is_ascii_whitespace) && !json_type {
        return Err(HttpError::Invalid {
            field: "body",
            message: "Only application/json request content is supported".to_owned(),
        });
    }
    let input = validate::json_body(Ok(body), s.body_limit, "the operation input")?;
    s.client.signal_entity_payload(&id, &op, input).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}
