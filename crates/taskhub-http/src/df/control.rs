//! Start, raise event, terminate, suspend, resume, restart, rewind.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequestParts, OriginalUri, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
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

/// A start's handler, documented for the OpenAPI document: the routes with and without an
/// instance ID differ only in their path.
macro_rules! start_route {
    ($(#[doc = $doc:tt])* $handler:ident, $path:tt, $summary:tt, [$($id_param:tt)*]) => {
        $(#[doc = $doc])*
        #[utoipa::path(post, path = $path, tag = "durable-functions",
            summary = $summary,
            params(
                ("functionName" = String, Path, description = "The orchestration name."),
                $($id_param)*
                ("tag" = Option<String>, Query, description = "KEY=VALUE: a tag the new instance carries (Taskhub's extension); repeatable. 400 for a bad one."),
                ("traceparent" = Option<String>, Header, description = "W3C trace context: the instance joins the caller's trace.")
            ),
            request_body(content = Option<serde_json::Value>, description = "The input", content_type = "application/json"),
            responses(
                (status = 202, description = "Scheduled; Location and Retry-After: 10 headers", body = ManagementPayload),
                (status = 409, description = "The instance ID is in use by an active instance", body = ErrorBody),
                (status = 413, description = "Body over the cap", body = ErrorBody)
            ))]
        pub(crate) async fn $handler(
            state: State<Arc<AppState>>,
            path: Path<StartPath>,
            query: Query<Vec<(String, String)>>,
            headers: HeaderMap,
            original: OriginalUri,
            body: Result<Bytes, BytesRejection>,
        ) -> ApiResult<Response> {
            start_instance(state, path, query, headers, original, body).await
        }
    };
}

start_route!(
    /// `POST orchestrators/{functionName}[?tag=KEY=VALUE...]`: see [`start_with_id`].
    start,
    "/runtime/webhooks/durabletask/orchestrators/{functionName}",
    "Start an orchestration",
    []
);

start_route!(
    /// `POST orchestrators/{functionName}[/{instanceId}][?tag=KEY=VALUE...]` with the input as the
    /// JSON body: 202 with the management payload, 400 for a bad name, ID, tag or JSON, 409 if the
    /// ID is in use by an active instance. A `traceparent` header makes the instance part of the
    /// caller's trace. `tag` (Taskhub's extension, repeatable) sets the instance's tags.
    start_with_id,
    "/runtime/webhooks/durabletask/orchestrators/{functionName}/{instanceId}",
    "Start an orchestration with an instance ID",
    [("instanceId" = String, Path, description = "The instance ID (1 to 256 bytes, no control characters, none of / \\ # ?)."),]
);

/// Both start routes: the orchestration's name, the instance ID if given, tags, the input and
/// the caller's trace context become the client's start (`TaskHubClient::start_payload`).
async fn start_instance(
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
    if !payload::is_json(&headers) {
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

impl Operation {
    /// The operation named `name` in any case (`Terminate`), as Durable Functions matches them.
    fn named(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "terminate" => Self::Terminate,
            "suspend" => Self::Suspend,
            "resume" => Self::Resume,
            "restart" => Self::Restart,
            "rewind" => Self::Rewind,
            _ => return None,
        })
    }
}

/// What every operation on an instance is given: extracted, and refused, as the path, query,
/// headers and URI extractors would be in that order.
pub(crate) struct OperationArgs {
    state: Arc<AppState>,
    id: String,
    query: HashMap<String, String>,
    headers: HeaderMap,
    original: Uri,
}

impl FromRequestParts<Arc<AppState>> for OperationArgs {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Response> {
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Query(query) = Query::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Ok(OriginalUri(original)) = OriginalUri::from_request_parts(parts, state).await;
        Ok(Self {
            state: Arc::clone(state),
            id,
            query,
            headers: parts.headers.clone(),
            original,
        })
    }
}

/// `POST instances/{instanceId}/{operation}` for an operation named in another case
/// (`Terminate`), as Durable Functions matches them; an unknown one is no route.
pub(crate) async fn operate(
    State(state): State<Arc<AppState>>,
    Path((id, operation)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    OriginalUri(original): OriginalUri,
) -> ApiResult<Response> {
    let op = Operation::named(&operation).ok_or_else(|| {
        HttpError::NoRoute(format!(
            "POST {}/instances/{{instanceId}}/{operation}",
            payload::BASE
        ))
    })?;
    let args = OperationArgs {
        state,
        id,
        query,
        headers,
        original,
    };
    run(args, op).await
}

/// An operation that answers 202, 404 for an unknown instance and 410 for a finished one: its
/// handler, documented for the OpenAPI document.
macro_rules! stop_or_go {
    ($(#[doc = $doc:tt])* $handler:ident, $op:ident, $path:tt, $summary:tt) => {
        $(#[doc = $doc])*
        #[utoipa::path(post, path = $path, tag = "durable-functions",
            summary = $summary,
            params(
                ("instanceId" = String, Path, description = "The instance ID."),
                ("reason" = Option<String>, Query, description = "Why (recorded in the history).")
            ),
            responses(
                (status = 202, description = "Accepted (no body)"),
                (status = 404, description = "Unknown instance", body = ErrorBody),
                (status = 410, description = "Finished instance", body = ErrorBody)
            ))]
        pub(crate) async fn $handler(args: OperationArgs) -> ApiResult<Response> {
            run(args, Operation::$op).await
        }
    };
}

stop_or_go!(
    /// `POST instances/{instanceId}/terminate[?reason=..]`: 202, 404 unknown, 410 finished.
    terminate,
    Terminate,
    "/runtime/webhooks/durabletask/instances/{instanceId}/terminate",
    "Terminate an instance"
);
stop_or_go!(
    /// `POST instances/{instanceId}/suspend[?reason=..]`: 202, 404 unknown, 410 finished.
    suspend,
    Suspend,
    "/runtime/webhooks/durabletask/instances/{instanceId}/suspend",
    "Suspend an instance"
);
stop_or_go!(
    /// `POST instances/{instanceId}/resume[?reason=..]`: 202, 404 unknown, 410 finished.
    resume,
    Resume,
    "/runtime/webhooks/durabletask/instances/{instanceId}/resume",
    "Resume an instance"
);

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
pub(crate) async fn restart(args: OperationArgs) -> ApiResult<Response> {
    run(args, Operation::Restart).await
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
pub(crate) async fn rewind(args: OperationArgs) -> ApiResult<Response> {
    run(args, Operation::Rewind).await
}

/// Runs `op`: 202, 404 unknown, 410 finished (terminate, suspend, resume; rewind: 409 unless
/// Failed); `restart` answers like a start.
async fn run(args: OperationArgs, op: Operation) -> ApiResult<Response> {
    let OperationArgs {
        state: s,
        id,
        query: q,
        headers,
        original,
    } = args;
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
