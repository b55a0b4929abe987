//! Instance list (with every filter) and one instance with its history and timeline.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};
use taskhub::{EventKind, InstanceQuery, InstanceRow, StatusOptions};

use crate::df::payload::json_of;
use crate::error::{ApiResult, HttpError};
use crate::state::AppState;
use crate::{isotime, timeline, token, validate};

/// One instance row as the dashboard shows it.
pub(crate) fn row_json(row: &InstanceRow) -> Value {
    let opt_time =
        |t: Option<taskhub::Timestamp>| t.map_or(Value::Null, |t| isotime::millis(t).into());
    json!({
        "instanceId": row.instance_id.as_str(),
        "name": row.name,
        "version": row.version,
        "executionId": row.execution_id.as_str(),
        "runtimeStatus": row.status.as_str(),
        "input": json_of(&row.input),
        "output": if row.status == taskhub::OrchestrationStatus::Suspended { Value::Null } else { row.output.as_ref().map_or(Value::Null, json_of) },
        "suspendReason": taskhub::client::suspend_reason(row),
        "failure": row.failure.as_ref().map(|f| json!({"errorType": f.error_type, "message": f.message, "details": f.details})),
        "customStatus": row.custom_status.as_ref().map_or(Value::Null, json_of),
        "createdTime": isotime::millis(row.created_at),
        "lastUpdatedTime": isotime::millis(row.updated_at),
        "completedTime": opt_time(row.completed_at),
        "scheduledStartTime": opt_time(row.scheduled_start),
        "partition": row.partition,
        "tags": row.tags,
        "previousExecutions": row.executions.iter().map(|e| json!({
            "executionId": e.execution_id.as_str(),
            "runtimeStatus": e.status.as_str(),
            "completedTime": isotime::millis(e.completed_at),
        })).collect::<Vec<_>>(),
    })
}

/// `GET /api/instances?runtimeStatus=&name=&instanceIdPrefix=&createdTimeFrom=&createdTimeTo=&completedTimeFrom=&completedTimeTo=&lastUpdatedTimeFrom=&lastUpdatedTimeTo=&tag=KEY=VALUE&includeEntities=&order=&top=&continuationToken=`:
/// `{"instances": [...], "continuationToken": ...}` ordered by instance ID, or by creation time
/// with `order=newest` or `order=oldest`; `tag` may repeat (every tag must match). Entities
/// (`@name@key`) are listed only with `includeEntities=true`.
pub(crate) async fn list(
    State(s): State<Arc<AppState>>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> ApiResult<Json<Value>> {
    let tags = validate::tags(&pairs)?;
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
    Ok(Json(json!({
        "instances": page.instances.iter().map(row_json).collect::<Vec<_>>(),
        "continuationToken": page.continuation.as_deref().map(crate::df::payload::encode_segment),
    })))
}

/// `GET /api/instances/{id}`: the row, its parent and children, the history (one object per
/// event: `seq`, `time`, `eventType` and the event's fields) and the timeline.
pub(crate) async fn detail(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = validate::instance_id(&id)?;
    let st = s
        .client
        .get_status(&id, StatusOptions { history: true })
        .await?
        .ok_or_else(|| HttpError::NotFound(format!("instance '{id}'")))?;
    let events = st.history.unwrap_or_default();
    let mut parent = Value::Null;
    let mut children = Vec::new();
    let history: Vec<Value> = events
        .iter()
        .enumerate()
        .map(|(seq, e)| {
            match &e.event {
                EventKind::ExecutionStarted { parent: Some(p), .. } => {
                    parent = json!({"instanceId": p.instance_id.as_str(), "executionId": p.execution_id.as_str(), "taskId": p.task_id});
                }
                EventKind::SubOrchestrationCreated { instance_id, name, task_id, .. } => {
                    children.push(json!({"instanceId": instance_id.as_str(), "name": name, "taskId": task_id}));
                }
                _ => {}
            }
            let (kind, fields) = match serde_json::to_value(&e.event) {
                Ok(Value::Object(m)) if m.len() == 1 => m.into_iter().next().unwrap_or((String::new(), Value::Null)),
                Ok(Value::String(k)) => (k, json!({})),
                _ => (e.event.type_name().to_owned(), json!({})),
            };
            json!({"seq": seq, "time": isotime::millis(e.timestamp), "eventType": kind, "fields": fields})
        })
        .collect();
    Ok(Json(json!({
        "instance": row_json(&st.row),
        "parent": parent,
        "children": children,
        "history": history,
        "timeline": timeline::timeline(&events),
    })))
}

/// `GET /api/instances/{id}/executions/{executionId}`: one execution's status, input, output
/// and times: the current execution, or an earlier one that ended by continue-as-new (404
/// naming the execution if the instance has no such execution).
pub(crate) async fn execution(
    State(s): State<Arc<AppState>>,
    Path((id, execution)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let id = validate::instance_id(&id)?;
    let execution = taskhub::ExecutionId::new(execution).map_err(|e| HttpError::Invalid {
        field: "executionId",
        message: e.to_string(),
    })?;
    let e = s.client.get_execution(&id, &execution).await?;
    Ok(Json(json!({
        "instanceId": e.instance_id.as_str(),
        "executionId": e.execution_id.as_str(),
        "name": e.name,
        "runtimeStatus": e.status.as_str(),
        "current": e.current,
        "input": json_of(&e.input),
        "output": e.output.as_ref().map_or(Value::Null, json_of),
        "failure": e.failure.as_ref().map(|f| json!({"errorType": f.error_type, "message": f.message, "details": f.details})),
        "customStatus": e.custom_status.as_ref().map_or(Value::Null, json_of),
        "startedTime": isotime::millis(e.started_at),
        "completedTime": e.completed_at.map_or(Value::Null, |t| isotime::millis(t).into()),
    })))
}
