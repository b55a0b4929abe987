//! Instance list (with every filter) and one instance with its history and timeline.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::Value;
use taskhub::{EventKind, InstanceQuery, StatusOptions};

use crate::error::{ApiResult, HttpError};
use crate::responses::{
    Child, ErrorBody, ExecutionView, HistoryItem, InstanceDetail, InstancePage, InstanceView,
    Parent,
};
use crate::state::AppState;
use crate::{isotime, timeline, token, validate};

/// `GET /api/instances?runtimeStatus=&name=&instanceIdPrefix=&createdTimeFrom=&createdTimeTo=&completedTimeFrom=&completedTimeTo=&lastUpdatedTimeFrom=&lastUpdatedTimeTo=&tag=KEY=VALUE&includeEntities=&order=&top=&continuationToken=`:
/// `{"instances": [...], "continuationToken": ...}` ordered by instance ID, or by creation time
/// with `order=newest` or `order=oldest`; `tag` may repeat (every tag must match). Entities
/// (`@name@key`) are listed only with `includeEntities=true`.
#[utoipa::path(get, path = "/api/instances", tag = "taskhub",
    summary = "List instances with every filter",
    params(
        ("runtimeStatus" = Option<String>, Query, description = "Comma-separated statuses."),
        ("createdTimeFrom" = Option<String>, Query, description = "RFC 3339 or Unix ms, inclusive."),
        ("createdTimeTo" = Option<String>, Query, description = "RFC 3339 or Unix ms, exclusive."),
        ("instanceIdPrefix" = Option<String>, Query),
        ("name" = Option<String>, Query, description = "Orchestration name."),
        ("completedTimeFrom" = Option<String>, Query, description = "Finished at or after (RFC 3339 or Unix ms)."),
        ("completedTimeTo" = Option<String>, Query, description = "Finished before."),
        ("lastUpdatedTimeFrom" = Option<String>, Query, description = "Last updated at or after."),
        ("lastUpdatedTimeTo" = Option<String>, Query, description = "Last updated before."),
        ("tag" = Option<String>, Query, description = "KEY=VALUE: only instances carrying this tag with this value; repeatable (every tag must match)."),
        ("order" = Option<String>, Query, description = "id (default), newest or oldest (by creation time)."),
        ("top" = Option<String>, Query, description = "Page size, 1 to 1000 (default 100)."),
        ("continuationToken" = Option<String>, Query, description = "From the previous page."),
        ("includeEntities" = Option<String>, Query, description = "true to list entities (@name@key) too; default: orchestrations only.")
    ),
    responses((status = 200, description = "A page of instances", body = InstancePage)))]
pub(crate) async fn list(
    State(s): State<Arc<AppState>>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> ApiResult<Json<InstancePage>> {
    let tags = validate::tags(&pairs, &s.client.tag_caps())?;
    let q: HashMap<String, String> = pairs.into_iter().collect();
    let get = |k: &str| q.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let mut query = InstanceQuery {
        statuses: validate::statuses(
            &get("runtimeStatus")
                .map(str::to_owned)
                .into_iter()
                .collect::<Vec<_>>(),
        )?,
        name: get("name").map(str::to_owned),
        instance_id_prefix: get("instanceIdPrefix").map(str::to_owned),
        page_size: validate::page_size(get("top"))?,
        tags,
        include_entities: validate::flag("includeEntities", get("includeEntities"), false)?,
        ..InstanceQuery::default()
    };
    if let Some(t) = get("createdTimeFrom") {
        query.created_from = Some(validate::time("createdTimeFrom", t)?);
    }
    if let Some(t) = get("createdTimeTo") {
        query.created_to = Some(validate::time("createdTimeTo", t)?);
    }
    for (name, slot) in [
        ("completedTimeFrom", &mut query.completed_from),
        ("completedTimeTo", &mut query.completed_to),
        ("lastUpdatedTimeFrom", &mut query.updated_from),
        ("lastUpdatedTimeTo", &mut query.updated_to),
    ] {
        if let Some(t) = get(name) {
            *slot = Some(validate::time(name, t)?);
        }
    }
    if let Some(o) = get("order") {
        query.order = taskhub::ListOrder::parse(o).map_err(|_| HttpError::Invalid {
            field: "order",
            message: format!(
                "expected id, newest or oldest, got {:?}",
                o.chars().take(20).collect::<String>()
            ),
        })?;
    }
    let continuation = get("continuationToken")
        .or_else(|| headers.get(token::HEADER).and_then(|h| h.to_str().ok()));
    query.continuation = continuation.map(token::decode).transpose()?;
    let page = s.client.list(&query).await?;
    Ok(Json(InstancePage {
        instances: page.instances.iter().map(InstanceView::from).collect(),
        continuation_token: page
            .continuation
            .as_deref()
            .map(crate::df::payload::encode_segment),
    }))
}

/// `GET /api/instances/{id}`: the row, its parent and children, the history (one object per
/// event: `seq`, `time`, `eventType` and the event's fields) and the timeline.
#[utoipa::path(get, path = "/api/instances/{instanceId}", tag = "taskhub",
    summary = "One instance: row, parent, children, history, timeline",
    params(("instanceId" = String, Path, description = "The instance ID (1 to 256 bytes, no control characters, none of / \\ # ?).")),
    responses(
        (status = 200, description = "The instance", body = InstanceDetail),
        (status = 404, description = "Unknown instance", body = ErrorBody)
    ))]
pub(crate) async fn detail(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<InstanceDetail>> {
    let id = validate::instance_id(&id)?;
    let st = s
        .client
        .get_status(&id, StatusOptions { history: true })
        .await?
        .ok_or_else(|| HttpError::NotFound(format!("instance '{id}'")))?;
    let events = st.history.unwrap_or_default();
    let mut parent = None;
    let mut children = Vec::new();
    let history: Vec<HistoryItem> = events
        .iter()
        .enumerate()
        .map(|(seq, e)| {
            match &e.event {
                EventKind::ExecutionStarted {
                    parent: Some(p), ..
                } => {
                    parent = Some(Parent {
                        instance_id: p.instance_id.as_str().to_owned(),
                        execution_id: p.execution_id.as_str().to_owned(),
                        task_id: p.task_id,
                    });
                }
                EventKind::SubOrchestrationCreated {
                    instance_id,
                    name,
                    task_id,
                    ..
                } => {
                    children.push(Child {
                        instance_id: instance_id.as_str().to_owned(),
                        name: name.clone(),
                        task_id: *task_id,
                    });
                }
                _ => {}
            }
            let (kind, fields) = match serde_json::to_value(&e.event) {
                Ok(Value::Object(m)) if m.len() == 1 => {
                    m.into_iter().next().unwrap_or((String::new(), Value::Null))
                }
                Ok(Value::String(k)) => (k, Value::Object(serde_json::Map::new())),
                _ => (
                    e.event.type_name().to_owned(),
                    Value::Object(serde_json::Map::new()),
                ),
            };
            HistoryItem {
                seq,
                time: isotime::millis(e.timestamp),
                event_type: kind,
                fields,
            }
        })
        .collect();
    Ok(Json(InstanceDetail {
        instance: InstanceView::from(&st.row),
        parent,
        children,
        history,
        timeline: timeline::timeline(&events),
    }))
}

/// `GET /api/instances/{id}/executions/{executionId}`: one execution's status, input, output
/// and times: the current execution, or an earlier one that ended by continue-as-new (404
/// naming the execution if the instance has no such execution).
#[utoipa::path(get, path = "/api/instances/{instanceId}/executions/{executionId}", tag = "taskhub",
    summary = "One execution of an instance: the current one, or an earlier one that ended by continue-as-new",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("executionId" = String, Path, description = "The execution ID (the instance's current one, or one of its last 32 that ended by continue-as-new).")
    ),
    responses(
        (status = 200, description = "The execution", body = ExecutionView),
        (status = 404, description = "Unknown instance or execution", body = ErrorBody)
    ))]
pub(crate) async fn execution(
    State(s): State<Arc<AppState>>,
    Path((id, execution)): Path<(String, String)>,
) -> ApiResult<Json<ExecutionView>> {
    let id = validate::instance_id(&id)?;
    let execution = taskhub::ExecutionId::new(execution).map_err(|e| HttpError::Invalid {
        field: "executionId",
        message: e.to_string(),
    })?;
    let e = s.client.get_execution(&id, &execution).await?;
    Ok(Json(ExecutionView::from(&e)))
}
