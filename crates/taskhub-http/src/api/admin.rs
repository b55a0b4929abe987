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

/// A `POST` handler that changes one partition or worker (`$key`, its path parameter) with
/// `$apply(&state, key, $arg)` and answers what that returns; documented for the OpenAPI
/// document.
macro_rules! admin_post {
    (
        $(#[doc = $doc:tt])* $handler:ident, $path:tt, $summary:tt,
        $key:tt ($key_doc:tt) -> $answer:ty, responses($($responses:tt)*),
        $apply:ident($arg:expr)
    ) => {
        $(#[doc = $doc])*
        #[utoipa::path(post, path = $path, tag = "taskhub",
            summary = $summary,
            params(($key = String, Path, description = $key_doc)),
            responses($($responses)*))]
        pub(crate) async fn $handler(
            State(s): State<Arc<AppState>>,
            Path(key): Path<String>,
        ) -> ApiResult<Json<$answer>> {
            Ok(Json($apply(&s, &key, $arg).await?))
        }
    };
}

/// A manual change's handler (`POST /api/partitions/{partition}/...`): the row after the
/// change, 404 for a partition the hub does not have.
macro_rules! partition_change {
    ($(#[doc = $doc:tt])* $handler:ident, $change:ident, $path:tt, $summary:tt) => {
        admin_post!(
            $(#[doc = $doc])* $handler, $path, $summary,
            "partition" ("Partition number.") -> PartitionChanged,
            responses(
                (status = 200, description = "The row after the change", body = PartitionChanged),
                (status = 404, description = "No such partition", body = ErrorBody)
            ),
            change(Change::$change)
        );
    };
}

partition_change!(
    /// `POST /api/partitions/{partition}/bump`: the row after the change; 404 for a partition
    /// the hub does not have.
    bump,
    Bump,
    "/api/partitions/{partition}/bump",
    "New epoch, no owner: the owner is fenced and any worker re-claims it"
);
partition_change!(
    /// `POST /api/partitions/{partition}/offline`: the row after the change.
    offline,
    Offline,
    "/api/partitions/{partition}/offline",
    "Take offline: the owner drains and releases it"
);
partition_change!(
    /// `POST /api/partitions/{partition}/online`: the row after the change.
    online,
    Online,
    "/api/partitions/{partition}/online",
    "Bring back online"
);

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

/// A change to the barred list's handler (`POST /api/workers/{name}/...`): the barred list
/// after the change.
macro_rules! worker_bar {
    ($(#[doc = $doc:tt])* $handler:ident, $barred:expr, $path:tt, $summary:tt) => {
        admin_post!(
            $(#[doc = $doc])* $handler, $path, $summary,
            "name" ("Worker name.") -> Prohibited,
            responses((status = 200, description = "The barred workers", body = Prohibited)),
            bar($barred)
        );
    };
}

worker_bar!(
    /// `POST /api/workers/{name}/prohibit`: the barred list after the change.
    prohibit,
    true,
    "/api/workers/{name}/prohibit",
    "Bar a worker from holding partitions"
);
worker_bar!(
    /// `POST /api/workers/{name}/allow`: the barred list after the change.
    allow,
    false,
    "/api/workers/{name}/allow",
    "Lift the bar"
);

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
