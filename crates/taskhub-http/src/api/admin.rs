//! Partitions (owner, next owner, epoch, state, queue length, oldest message age), their
//! manual control (bump, offline, online), workers (and barring them), the scale
//! recommendation.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::Json;

use crate::error::{ApiResult, HttpError};
use crate::responses::{
    ErrorBody, PartitionChanged, PartitionView, Prohibited, Scale, WorkerView, Workers,
};
use crate::state::AppState;
use crate::validate;

/// `GET /api/partitions`.
#[utoipa::path(get, path = "/api/partitions", tag = "taskhub",
    summary = "Partitions: owner, next owner, epoch, state, queue length, oldest message age, lease age",
    responses((status = 200, description = "The partitions", body = Vec<PartitionView>)))]
pub(crate) async fn partitions(
    State(s): State<Arc<AppState>>,
) -> ApiResult<Json<Vec<PartitionView>>> {
    let parts = s.admin.partitions().await?;
    Ok(Json(parts.iter().map(PartitionView::from).collect()))
}

/// A manual change to a partition.
#[derive(Debug, Clone, Copy)]
enum Change {
    Bump,
    Offline,
    Online,
}

async fn change(s: &AppState, partition: &str, change: Change) -> ApiResult<PartitionChanged> {
    let p: u32 = partition.parse().map_err(|_| HttpError::Invalid {
        field: "partition",
        message: format!(
            "expected a partition number, got {:?}",
            partition.chars().take(20).collect::<String>()
        ),
    })?;
    let row = match change {
        Change::Bump => s.admin.bump(p).await?,
        Change::Offline => s.admin.set_offline(p, true).await?,
        Change::Online => s.admin.set_offline(p, false).await?,
    };
    Ok(PartitionChanged::from(&row))
}

/// `POST /api/partitions/{partition}/bump`: the row after the change; 404 for a partition the
/// hub does not have.
#[utoipa::path(post, path = "/api/partitions/{partition}/bump", tag = "taskhub",
    summary = "New epoch, no owner: the owner is fenced and any worker re-claims it",
    params(("partition" = String, Path, description = "Partition number.")),
    responses(
        (status = 200, description = "The row after the change", body = PartitionChanged),
        (status = 404, description = "No such partition", body = ErrorBody)
    ))]
pub(crate) async fn bump(
    State(s): State<Arc<AppState>>,
    Path(partition): Path<String>,
) -> ApiResult<Json<PartitionChanged>> {
    Ok(Json(change(&s, &partition, Change::Bump).await?))
}

/// `POST /api/partitions/{partition}/offline`: the row after the change.
#[utoipa::path(post, path = "/api/partitions/{partition}/offline", tag = "taskhub",
    summary = "Take offline: the owner drains and releases it",
    params(("partition" = String, Path, description = "Partition number.")),
    responses(
        (status = 200, description = "The row after the change", body = PartitionChanged),
        (status = 404, description = "No such partition", body = ErrorBody)
    ))]
pub(crate) async fn offline(
    State(s): State<Arc<AppState>>,
    Path(partition): Path<String>,
) -> ApiResult<Json<PartitionChanged>> {
    Ok(Json(change(&s, &partition, Change::Offline).await?))
}

/// `POST /api/partitions/{partition}/online`: the row after the change.
#[utoipa::path(post, path = "/api/partitions/{partition}/online", tag = "taskhub",
    summary = "Bring back online",
    params(("partition" = String, Path, description = "Partition number.")),
    responses(
        (status = 200, description = "The row after the change", body = PartitionChanged),
        (status = 404, description = "No such partition", body = ErrorBody)
    ))]
pub(crate) async fn online(
    State(s): State<Arc<AppState>>,
    Path(partition): Path<String>,
) -> ApiResult<Json<PartitionChanged>> {
    Ok(Json(change(&s, &partition, Change::Online).await?))
}

/// `GET /api/workers`: the workers that hold partitions (with them) and the barred ones.
#[utoipa::path(get, path = "/api/workers", tag = "taskhub",
    summary = "Workers holding partitions, and barred workers",
    responses((status = 200, description = "The workers", body = Workers)))]
pub(crate) async fn workers(State(s): State<Arc<AppState>>) -> ApiResult<Json<Workers>> {
    let parts = s.admin.partitions().await?;
    let prohibited = s.admin.prohibited().await?;
    let mut by_worker: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for p in &parts {
        if let Some(o) = &p.row.owner {
            by_worker
                .entry(o.clone())
                .or_default()
                .push(p.row.partition);
        }
    }
    for w in &prohibited {
        by_worker.entry(w.clone()).or_default();
    }
    let workers = by_worker
        .into_iter()
        .map(|(name, partitions)| WorkerView {
            prohibited: prohibited.contains(&name),
            name,
            partitions,
        })
        .collect();
    Ok(Json(Workers {
        workers,
        prohibited,
    }))
}

async fn bar(s: &AppState, name: &str, barred: bool) -> ApiResult<Prohibited> {
    let name = validate::event_name(name).map_err(|_| HttpError::Invalid {
        field: "name",
        message: "a worker name is 1 to 256 bytes without control characters".to_owned(),
    })?;
    let list = s.admin.set_prohibited(&name, barred).await?;
    Ok(Prohibited { prohibited: list })
}

/// `POST /api/workers/{name}/prohibit`: the barred list after the change.
#[utoipa::path(post, path = "/api/workers/{name}/prohibit", tag = "taskhub",
    summary = "Bar a worker from holding partitions",
    params(("name" = String, Path, description = "Worker name.")),
    responses((status = 200, description = "The barred workers", body = Prohibited)))]
pub(crate) async fn prohibit(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> ApiResult<Json<Prohibited>> {
    Ok(Json(bar(&s, &name, true).await?))
}

/// `POST /api/workers/{name}/allow`: the barred list after the change.
#[utoipa::path(post, path = "/api/workers/{name}/allow", tag = "taskhub",
    summary = "Lift the bar",
    params(("name" = String, Path, description = "Worker name.")),
    responses((status = 200, description = "The barred workers", body = Prohibited)))]
pub(crate) async fn allow(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> ApiResult<Json<Prohibited>> {
    Ok(Json(bar(&s, &name, false).await?))
}

/// `GET /api/scale?samples=1&intervalMs=1000`: the recommendation (samples 1 to 10, interval
/// up to 10 s); with SDK workers served in this process, it sees the work waiting for one
/// whose filters take it (no scaling in while any waits).
#[utoipa::path(get, path = "/api/scale", tag = "taskhub",
    summary = "Scale recommendation",
    params(
        ("samples" = Option<String>, Query, description = "1 to 10 (default 1)."),
        ("intervalMs" = Option<String>, Query, description = "Up to 10000 (default 1000).")
    ),
    responses((status = 200, description = "The recommendation", body = Scale)))]
pub(crate) async fn scale(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Scale>> {
    let num = |field: &'static str, default: u64, max: u64| -> ApiResult<u64> {
        match q.get(field).map(String::as_str).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| *n <= max)
                    .ok_or_else(|| HttpError::Invalid {
                        field,
                        message: format!(
                            "expected a whole number up to {max}, got {:?}",
                            v.chars().take(20).collect::<String>()
                        ),
                    })
            }
        }
    };
    let samples = usize::try_from(num("samples", 1, 10)?.max(1)).unwrap_or(1);
    let interval = Duration::from_millis(num("intervalMs", 1000, 10_000)?);
    Ok(Json(
        s.admin
            .scale_seeing(samples, interval, s.unmatched.as_ref())
            .await?
            .into(),
    ))
}
