//! Status, list and purge.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use taskhub::{InstanceQuery, OrchestrationStatus, StatusOptions};

use super::payload;
use crate::error::{ApiResult, HttpError};
use crate::responses::{ErrorBody, InstanceStatus, Purged, Show};
use crate::state::AppState;
use crate::{token, validate};

type Params = Query<HashMap<String, String>>;

fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    q.get(name).map(String::as_str)
}

/// `GET instances/{instanceId}`: 200 finished (Failed too, or 500 with
/// `returnInternalServerErrorOnFailure=true`), 202 with `Location` and `Retry-After: 5` while
/// Pending, Running or Suspended, 404 unknown, 400 invalid ID.
#[utoipa::path(get, path = "/runtime/webhooks/durabletask/instances/{instanceId}", tag = "durable-functions",
    summary = "Instance status",
    params(
        ("instanceId" = String, Path, description = "The instance ID (1 to 256 bytes, no control characters, none of / \\ # ?)."),
        ("showHistory" = Option<bool>, Query, description = "Default false."),
        ("showHistoryOutput" = Option<bool>, Query, description = "Default false."),
        ("showInput" = Option<bool>, Query, description = "Default true."),
        ("returnInternalServerErrorOnFailure" = Option<bool>, Query, description = "Default false.")
    ),
    responses(
        (status = 200, description = "Completed, Failed or Terminated", body = InstanceStatus),
        (status = 202, description = "Pending, Running or Suspended; Location and Retry-After: 5", body = InstanceStatus),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 500, description = "Failed, with returnInternalServerErrorOnFailure=true", body = InstanceStatus)
    ))]
pub(crate) async fn status(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Params,
    headers: HeaderMap,
    OriginalUri(uri): OriginalUri,
) -> ApiResult<Response> {
    let id = validate::instance_id(&id)?;
    let show = Show {
        input: validate::flag("showInput", param(&q, "showInput"), true)?,
        history: validate::flag("showHistory", param(&q, "showHistory"), false)?,
        history_output: validate::flag("showHistoryOutput", param(&q, "showHistoryOutput"), false)?,
    };
    let fail_500 = validate::flag(
        "returnInternalServerErrorOnFailure",
        param(&q, "returnInternalServerErrorOnFailure"),
        false,
    )?;
    let st = s
        .client
        .get_status(
            &id,
            StatusOptions {
                history: show.history,
            },
        )
        .await?
        .ok_or_else(|| HttpError::NotFound(format!("instance '{id}'")))?;
    let body = InstanceStatus::new(&st.row, st.history.as_deref(), show);
    let code = match st.row.status {
        OrchestrationStatus::Failed if fail_500 => StatusCode::INTERNAL_SERVER_ERROR,
        s if s.is_terminal() => StatusCode::OK,
        _ => StatusCode::ACCEPTED,
    };
    let mut response = (code, Json(body)).into_response();
    if code == StatusCode::ACCEPTED {
        let location = format!("{}{uri}", payload::origin(&headers));
        if let Ok(v) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, v);
        }
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    Ok(response)
}

/// The filters shared by list and purge.
fn query(q: &HashMap<String, String>) -> ApiResult<InstanceQuery> {
    let mut query = InstanceQuery {
        statuses: validate::statuses(
            &q.get("runtimeStatus")
                .cloned()
                .into_iter()
                .collect::<Vec<_>>(),
        )?,
        instance_id_prefix: param(q, "instanceIdPrefix")
            .filter(|p| !p.is_empty())
            .map(str::to_owned),
        ..InstanceQuery::default()
    };
    if let Some(t) = param(q, "createdTimeFrom").filter(|t| !t.is_empty()) {
        query.created_from = Some(validate::time("createdTimeFrom", t)?);
    }
    if let Some(t) = param(q, "createdTimeTo").filter(|t| !t.is_empty()) {
        // Durable Functions' bound is inclusive; the store's is exclusive.
        let to = validate::time("createdTimeTo", t)?;
        query.created_to = Some(to.saturating_add(std::time::Duration::from_millis(1)));
    }
    Ok(query)
}

/// `GET instances`: 200 with an array of statuses; `x-ms-continuation-token` (request and
/// response header) pages. Orchestrations only, unless `includeEntities=true`.
#[utoipa::path(get, path = "/runtime/webhooks/durabletask/instances", tag = "durable-functions",
    summary = "List instances",
    params(
        ("runtimeStatus" = Option<String>, Query, description = "Comma-separated statuses."),
        ("createdTimeFrom" = Option<String>, Query, description = "RFC 3339 or Unix ms, inclusive."),
        ("createdTimeTo" = Option<String>, Query, description = "RFC 3339 or Unix ms, inclusive."),
        ("instanceIdPrefix" = Option<String>, Query),
        ("top" = Option<String>, Query, description = "Page size, 1 to 1000 (default 100)."),
        ("showInput" = Option<bool>, Query, description = "Default true."),
        ("includeEntities" = Option<bool>, Query, description = "true to list entities (@name@key) too; default: orchestrations only."),
        ("x-ms-continuation-token" = Option<String>, Header, description = "From the previous page's response header.")
    ),
    responses((status = 200, description = "Statuses; x-ms-continuation-token header when more may follow", body = Vec<InstanceStatus>)))]
pub(crate) async fn list(
    State(s): State<Arc<AppState>>,
    Query(q): Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let mut query = query(&q)?;
    query.page_size = validate::page_size(param(&q, "top"))?;
    // Entities are instance rows too; Durable Functions leaves them out of this list.
    query.include_entities =
        validate::flag("includeEntities", param(&q, "includeEntities"), false)?;
    query.continuation = payload::continuation(&headers)?;
    let show = Show {
        input: validate::flag("showInput", param(&q, "showInput"), true)?,
        history: false,
        history_output: false,
    };
    let page = s.client.list(&query).await?;
    let body: Vec<_> = page
        .instances
        .iter()
        .map(|r| InstanceStatus::new(r, None, show))
        .collect();
    token::paged_json(body, page.continuation.as_deref())
}

/// `DELETE instances/{instanceId}`: 200 `{"instancesDeleted": 1}`, 404 unknown, 409 if the
/// instance is still active.
#[utoipa::path(delete, path = "/runtime/webhooks/durabletask/instances/{instanceId}", tag = "durable-functions",
    summary = "Purge one finished instance",
    params(("instanceId" = String, Path, description = "The instance ID.")),
    responses(
        (status = 200, description = "Purged", body = Purged),
        (status = 404, description = "Unknown instance", body = ErrorBody),
        (status = 409, description = "Still active", body = ErrorBody)
    ))]
pub(crate) async fn purge(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = validate::instance_id(&id)?;
    if s.client.purge(&id).await? {
        Ok(Json(Purged {
            instances_deleted: 1,
        })
        .into_response())
    } else {
        Err(HttpError::NotFound(format!("instance '{id}'")))
    }
}

/// `DELETE instances?createdTimeFrom=..[&createdTimeTo=..][&runtimeStatus=..]`: purges the
/// finished instances matching; 200 `{"instancesDeleted": N}`, 404 when none matched, 400
/// without `createdTimeFrom` (as Durable Functions).
#[utoipa::path(delete, path = "/runtime/webhooks/durabletask/instances", tag = "durable-functions",
    summary = "Purge finished instances by filter",
    params(
        ("runtimeStatus" = Option<String>, Query, description = "Comma-separated statuses."),
        ("createdTimeFrom" = String, Query, description = "RFC 3339 or Unix ms, inclusive (required)."),
        ("createdTimeTo" = Option<String>, Query, description = "RFC 3339 or Unix ms, inclusive."),
        ("instanceIdPrefix" = Option<String>, Query)
    ),
    responses(
        (status = 200, description = "Purged", body = Purged),
        (status = 404, description = "None matched", body = ErrorBody)
    ))]
pub(crate) async fn purge_where(
    State(s): State<Arc<AppState>>,
    Query(q): Params,
) -> ApiResult<Response> {
    if param(&q, "createdTimeFrom").is_none_or(str::is_empty) {
        return Err(HttpError::Invalid {
            field: "createdTimeFrom",
            message: "Please provide value for 'createdTimeFrom' parameter.".to_owned(),
        });
    }
    let mut query = query(&q)?;
    query.page_size = 1000;
    let n = s.client.purge_where(&query).await?;
    if n == 0 {
        return Err(HttpError::NotFound(
            "no finished instance matching the filter".to_owned(),
        ));
    }
    Ok(Json(Purged {
        instances_deleted: n,
    })
    .into_response())
}
