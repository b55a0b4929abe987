//! Start, raise event, terminate, suspend, resume, restart.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use taskhub::{InstanceId, InstanceRow, OrchestrationStatus, RaiseOptions, StartOptions};

use super::payload;
use crate::error::{ApiResult, HttpError};
use crate::state::AppState;
use crate::validate;

/// The path of a start.
#[derive(Debug, Deserialize)]
pub(crate) struct StartPath {
    function_name: String,
    instance_id: Option<String>,
}

/// 202 with the management payload, `Location` and `Retry-After: 10`; the URLs point at this
/// router wherever it is mounted (`prefix`).
fn check_status_response(headers: &HeaderMap, prefix: &str, id: &InstanceId) -> Response {
    let origin = format!("{}{prefix}", payload::origin(headers));
    let mut response = (
        StatusCode::ACCEPTED,
        Json(payload::management(&origin, id.as_str())),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&payload::status_url(&origin, id.as_str())) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
    response
}

/// `POST orchestrators/{functionName}[/{instanceId}][?tag=KEY=VALUE...]` with the input as the
/// JSON body: 202 with the management payload, 400 for a bad name, ID, tag or JSON, 409 if the
/// ID is in use by an active instance. A `traceparent` header makes the instance part of the
/// caller's trace. `tag` (Taskhub's extension, repeatable) sets the instance's tags.
pub(crate) async fn start(
    State(s): State<Arc<AppState>>,
    Path(path): Path<StartPath>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    OriginalUri(original): OriginalUri,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let name = validate::orchestration_name(&path.function_name)?;
    let instance_id = path
        .instance_id
        .as_deref()
        .map(validate::instance_id)
        .transpose()?;
    let tags = validate::tags(&pairs)?;
    let input = validate::json_body(body, s.body_limit, "the orchestration input")?;
    // The caller's W3C trace context, if it sent one: the instance's turns and activities
    // join the caller's trace. A malformed header is ignored, as W3C asks.
    let trace_parent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(taskhub::telemetry::TraceContext::parse);
    let options = StartOptions {
        instance_id,
        trace_parent,
        tags,
        ..StartOptions::default()
    };
    let id = s.client.start_payload(&name, input, options).await?;
    Ok(check_status_response(
        &headers,
        payload::mount_prefix(&original),
        &id,
    ))
}

async fn row(s: &AppState, id: &InstanceId) -> ApiResult<InstanceRow> {
    Ok(s.client
        .get_status(id, taskhub::StatusOptions::default())
        .await?
        .ok_or_else(|| HttpError::NotFound(format!("instance '{id}'")))?
        .row)
}

fn gone(row: &InstanceRow, operation: &'static str) -> ApiResult<()> {
    if row.status.is_terminal() {
        return Err(HttpError::Gone {
            instance_id: row.instance_id.clone(),
            status: row.status,
            operation,
        });
    }
    Ok(())
}

/// `POST instances/{instanceId}/raiseEvent/{eventName}` with a JSON body (`Content-Type:
/// application/json`); optional `eventId` makes retries deliver once. 202, 400 bad
/// name/ID/content, 404 unknown, 410 finished.
pub(crate) async fn raise(
    State(s): State<Arc<AppState>>,
    Path((id, event)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let id = validate::instance_id(&id)?;
    let event = validate::event_name(&event)?;
    let row = row(&s, &id).await?;
    gone(&row, "raise an event")?;
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json_type {
        return Err(HttpError::Invalid {
            field: "body",
            message: "Only application/json request content is supported".to_owned(),
        });
    }
    let data = validate::json_body(body, s.body_limit, "the event data")?;
    let event_id = q.get("eventId").filter(|e| !e.is_empty()).cloned();
    if let Some(e) = &event_id {
        taskhub::MessageId::for_raised_event(&id, e).map_err(|err| HttpError::Invalid {
            field: "eventId",
            message: err.to_string(),
        })?;
    }
    let options = RaiseOptions { event_id };
    s.client
        .raise_event_payload(&id, &event, data, options)
        .await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// `POST instances/{instanceId}/{terminate|suspend|resume|restart}[?reason=..]`: 202, 404
/// unknown, 410 finished (terminate, suspend, resume). `restart` (optional
/// `restartWithNewInstanceId`, default true) answers like a start; an unknown instance is a
/// 400, as in Durable Functions. `rewind` is 501.
pub(crate) async fn operate(
    State(s): State<Arc<AppState>>,
    Path((id, operation)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    OriginalUri(original): OriginalUri,
) -> ApiResult<Response> {
    let id = validate::instance_id(&id)?;
    let reason = q.get("reason").filter(|r| !r.is_empty()).cloned();
    let op = operation.to_ascii_lowercase();
    match op.as_str() {
        "terminate" => {
            gone(&row(&s, &id).await?, "terminate")?;
            let reason = reason.unwrap_or_else(|| "terminated through the HTTP API".to_owned());
            s.client.terminate(&id, &reason).await?;
        }
        "suspend" => {
            let r = row(&s, &id).await?;
            gone(&r, "suspend")?;
            if r.status != OrchestrationStatus::Suspended {
                s.client.suspend(&id, reason.as_deref()).await?;
            }
        }
        "resume" => {
            gone(&row(&s, &id).await?, "resume")?;
            s.client.resume(&id, reason.as_deref()).await?;
        }
        "restart" => {
            let new_id = validate::flag(
                "restartWithNewInstanceId",
                q.get("restartWithNewInstanceId").map(String::as_str),
                true,
            )?;
            let new = match s.client.restart(&id, new_id).await {
                Err(taskhub::TaskhubError::NotFound(_)) => {
                    return Err(HttpError::Invalid {
                        field: "instanceId",
                        message: "InstanceId does not match a valid orchestration instance."
                            .to_owned(),
                    })
                }
                other => other?,
            };
            let prefix = payload::mount_prefix(&original);
            return Ok(check_status_response(&headers, prefix, &new));
        }
        "rewind" => {
            return Err(HttpError::NotImplemented(
                "rewind is not supported by Taskhub: restart the instance instead".to_owned(),
            ))
        }
        _ => {
            return Err(HttpError::NoRoute(format!(
                "POST {}/instances/{{instanceId}}/{operation}",
                payload::BASE
            )))
        }
    }
    Ok(StatusCode::ACCEPTED.into_response())
}
