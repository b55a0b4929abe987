//! Start, raise event, terminate, suspend, resume, restart, rewind.

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
use crate::responses::{ErrorBody, ManagementPayload};
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
        Json(ManagementPayload::new(&origin, id.as_str())),
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

/// `POST orchestrators/{functionName}[?tag=KEY=VALUE...]`: see [`start_with_id`].
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/orchestrators/{functionName}", tag = "durable-functions",
    summary = "Start an orchestration",
    params(
        ("functionName" = String, Path, description = "The orchestration name."),
        ("tag" = Option<String>, Query, description = "KEY=VALUE: a tag the new instance carries (Taskhub's extension); repeatable. 400 for a bad one."),
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the instance joins the caller's trace.")
    ),
    request_body(content = Option<serde_json::Value>, description = "The input", content_type = "application/json"),
    responses(
        (status = 202, description = "Scheduled; Location and Retry-After: 10 headers", body = ManagementPayload),
        (status = 409, description = "The instance ID is in use by an active instance", body = ErrorBody),
        (status = 413, description = "Body over the cap", body = ErrorBody)
    ))]
pub(crate) async fn start(
    state: State<Arc<AppState>>,
    path: Path<StartPath>,
    query: Query<Vec<(String, String)>>,
    headers: HeaderMap,
    original: OriginalUri,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    start_with_id(state, path, query, headers, original, body).await
}

/// `POST orchestrators/{functionName}[/{instanceId}][?tag=KEY=VALUE...]` with the input as the
/// JSON body: 202 with the management payload, 400 for a bad name, ID, tag or JSON, 409 if the
/// ID is in use by an active instance. A `traceparent` header makes the instance part of the
/// caller's trace. `tag` (Taskhub's extension, repeatable) sets the instance's tags.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/orchestrators/{functionName}/{instanceId}", tag = "durable-functions",
    summary = "Start an orchestration with an instance ID",
    params(
        ("functionName" = String, Path, description = "The orchestration name."),
        ("instanceId" = String, Path, description = "The instance ID (1 to 256 bytes, no control characters, none of / \\ # ?)."),
        ("tag" = Option<String>, Query, description = "KEY=VALUE: a tag the new instance carries (Taskhub's extension); repeatable. 400 for a bad one."),
        ("traceparent" = Option<String>, Header, description = "W3C trace context: the instance joins the caller's trace.")
    ),
    request_body(content = Option<serde_json::Value>, description = "The input", content_type = "application/json"),
    responses(
        (status = 202, description = "Scheduled; Location and Retry-After: 10 headers", body = ManagementPayload),
        (status = 409, description = "The instance ID is in use by an active instance", body = ErrorBody),
        (status = 413, description = "Body over the cap", body = ErrorBody)
    ))]
pub(crate) async fn start_with_id(
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
    let tags = validate::tags(&pairs, &s.client.tag_caps())?;
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
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/instances/{instanceId}/raiseEvent/{eventName}", tag = "durable-functions",
    summary = "Raise an event (Content-Type: application/json)",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("eventName" = String, Path, description = "1 to 256 bytes, no control characters."),
        ("eventId" = Option<String>, Query, description = "Idempotency key: a retry with the same ID is delivered once.")
    ),
    request_body(content = Option<serde_json::Value>, description = "The event data", content_type = "application/json"),
    responses(
        (status = 202, description = "Accepted (no body)"),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 410, description = "Finished instance", body = ErrorBody),
        (status = 413, description = "Body over the cap", body = ErrorBody)
    ))]
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

/// An operation on an instance.
#[derive(Debug, Clone, Copy)]
enum Operation {
    Terminate,
    Suspend,
    Resume,
    Restart,
    Rewind,
}

/// The arguments every operation takes.
type OperationArgs = (
    State<Arc<AppState>>,
    Path<String>,
    Query<HashMap<String, String>>,
    HeaderMap,
    OriginalUri,
);

/// `POST instances/{instanceId}/{operation}` for an operation named in another case
/// (`Terminate`), as Durable Functions matches them; an unknown one is no route.
pub(crate) async fn operate(
    State(s): State<Arc<AppState>>,
    Path((id, operation)): Path<(String, String)>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
    original: OriginalUri,
) -> ApiResult<Response> {
    let op = match operation.to_ascii_lowercase().as_str() {
        "terminate" => Operation::Terminate,
        "suspend" => Operation::Suspend,
        "resume" => Operation::Resume,
        "restart" => Operation::Restart,
        "rewind" => Operation::Rewind,
        _ => {
            return Err(HttpError::NoRoute(format!(
                "POST {}/instances/{{instanceId}}/{operation}",
                payload::BASE
            )))
        }
    };
    run((State(s), Path(id), q, headers, original), op).await
}

/// `POST instances/{instanceId}/terminate[?reason=..]`: 202, 404 unknown, 410 finished.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/instances/{instanceId}/terminate", tag = "durable-functions",
    summary = "Terminate an instance",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("reason" = Option<String>, Query, description = "Why (recorded in the history).")
    ),
    responses(
        (status = 202, description = "Accepted (no body)"),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 410, description = "Finished instance", body = ErrorBody)
    ))]
pub(crate) async fn terminate(
    s: State<Arc<AppState>>,
    id: Path<String>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
    original: OriginalUri,
) -> ApiResult<Response> {
    run((s, id, q, headers, original), Operation::Terminate).await
}

/// `POST instances/{instanceId}/suspend[?reason=..]`: 202, 404 unknown, 410 finished.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/instances/{instanceId}/suspend", tag = "durable-functions",
    summary = "Suspend an instance",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("reason" = Option<String>, Query, description = "Why (recorded in the history).")
    ),
    responses(
        (status = 202, description = "Accepted (no body)"),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 410, description = "Finished instance", body = ErrorBody)
    ))]
pub(crate) async fn suspend(
    s: State<Arc<AppState>>,
    id: Path<String>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
    original: OriginalUri,
) -> ApiResult<Response> {
    run((s, id, q, headers, original), Operation::Suspend).await
}

/// `POST instances/{instanceId}/resume[?reason=..]`: 202, 404 unknown, 410 finished.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/instances/{instanceId}/resume", tag = "durable-functions",
    summary = "Resume an instance",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("reason" = Option<String>, Query, description = "Why (recorded in the history).")
    ),
    responses(
        (status = 202, description = "Accepted (no body)"),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 410, description = "Finished instance", body = ErrorBody)
    ))]
pub(crate) async fn resume(
    s: State<Arc<AppState>>,
    id: Path<String>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
    original: OriginalUri,
) -> ApiResult<Response> {
    run((s, id, q, headers, original), Operation::Resume).await
}

/// `POST instances/{instanceId}/restart[?restartWithNewInstanceId=..]` (default true): answers
/// like a start; an unknown instance is a 400, as in Durable Functions.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/instances/{instanceId}/restart", tag = "durable-functions",
    summary = "Restart an instance with its original input",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("restartWithNewInstanceId" = Option<bool>, Query, description = "Default true.")
    ),
    responses(
        (status = 202, description = "Scheduled (management payload of the new execution)", body = ManagementPayload),
        (status = 400, description = "Unknown instance (as Durable Functions)", body = ErrorBody)
    ))]
pub(crate) async fn restart(
    s: State<Arc<AppState>>,
    id: Path<String>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
    original: OriginalUri,
) -> ApiResult<Response> {
    run((s, id, q, headers, original), Operation::Restart).await
}

/// `POST instances/{instanceId}/rewind[?reason=..]`: a Failed instance runs again from where
/// it failed, keeping what succeeded (docs/REWIND.md). 202 with no body, as Durable Functions
/// (the instance is Running at once); 404 unknown, 409 any status but Failed, 400 an entity;
/// the error names the status.
#[utoipa::path(post, path = "/runtime/webhooks/durabletask/instances/{instanceId}/rewind", tag = "durable-functions",
    summary = "Rewind a Failed instance",
    params(
        ("instanceId" = String, Path, description = "The instance ID."),
        ("reason" = Option<String>, Query, description = "Why (recorded in the history's ExecutionRewound event).")
    ),
    responses(
        (status = 202, description = "Accepted (no body): the instance is Running again"),
        (status = 400, description = "An invalid instance ID, or an entity", body = ErrorBody),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 409, description = "Not Failed (the error names the status): only a Failed instance can be rewound", body = ErrorBody)
    ))]
pub(crate) async fn rewind(
    s: State<Arc<AppState>>,
    id: Path<String>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
    original: OriginalUri,
) -> ApiResult<Response> {
    run((s, id, q, headers, original), Operation::Rewind).await
}

/// Runs `op`: 202, 404 unknown, 410 finished (terminate, suspend, resume; rewind: 409 unless
/// Failed); `restart` answers like a start.
async fn run(args: OperationArgs, op: Operation) -> ApiResult<Response> {
    let (State(s), Path(id), Query(q), headers, OriginalUri(original)) = args;
    let id = validate::instance_id(&id)?;
    let reason = q.get("reason").filter(|r| !r.is_empty()).cloned();
    match op {
        Operation::Terminate => {
            gone(&row(&s, &id).await?, "terminate")?;
            let reason = reason.unwrap_or_else(|| "terminated through the HTTP API".to_owned());
            s.client.terminate(&id, &reason).await?;
        }
        Operation::Suspend => {
            let r = row(&s, &id).await?;
            gone(&r, "suspend")?;
            if r.status != OrchestrationStatus::Suspended {
                s.client.suspend(&id, reason.as_deref()).await?;
            }
        }
        Operation::Resume => {
            gone(&row(&s, &id).await?, "resume")?;
            s.client.resume(&id, reason.as_deref()).await?;
        }
        Operation::Restart => {
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
        Operation::Rewind => match s.client.rewind(&id, reason.as_deref()).await {
            // Only a Failed instance can be rewound: 409 naming the status, whatever it is.
            Err(e @ taskhub::TaskhubError::WrongStatus { .. }) => {
                return Err(HttpError::Conflict(e.to_string()))
            }
            other => other?,
        },
    }
    Ok(StatusCode::ACCEPTED.into_response())
}
