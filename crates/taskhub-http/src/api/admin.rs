//! Partitions (owner, next owner, epoch, state, queue length, oldest message age), their
//! manual control (bump, offline, online), workers (and barring them), the scale
//! recommendation.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Value};
use taskhub::admin::PartitionStatus;

use crate::error::{ApiResult, HttpError};
use crate::state::AppState;
use crate::{isotime, validate};

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn state_of(p: &PartitionStatus) -> &'static str {
    let r = &p.row;
    if r.retiring {
        "retiring"
    } else if r.offline {
        "offline"
    } else if r.draining {
        "draining"
    } else if r.owner.is_some() {
        "owned"
    } else {
        "free"
    }
}

fn partition_json(p: &PartitionStatus) -> Value {
    json!({
        "partition": p.row.partition,
        "owner": p.row.owner,
        "nextOwner": p.row.next_owner,
        "epoch": p.row.epoch,
        "state": state_of(p),
        "queueLength": p.queue_length,
        "oldestMessageAgeMs": p.oldest_message_age.map(ms),
        "leaseAgeMs": ms(p.lease_age),
        "updatedTime": isotime::millis(p.row.updated_at),
        "turns": p.row.turns,
    })
}

/// `GET /api/partitions`.
pub(crate) async fn partitions(State(s): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
    let parts = s.admin.partitions().await?;
    Ok(Json(Value::Array(
        parts.iter().map(partition_json).collect(),
    )))
}

/// `POST /api/partitions/{partition}/{bump|offline|online}`: the row after the change; 404
/// for a partition the hub does not have.
pub(crate) async fn partition_action(
    State(s): State<Arc<AppState>>,
    Path((partition, action)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let p: u32 = partition.parse().map_err(|_| HttpError::Invalid {
        field: "partition",
        message: format!(
            "expected a partition number, got {:?}",
            partition.chars().take(20).collect::<String>()
        ),
    })?;
    let row = match action.as_str() {
        "bump" => s.admin.bump(p).await?,
        "offline" => s.admin.set_offline(p, true).await?,
        "online" => s.admin.set_offline(p, false).await?,
        other => {
            return Err(HttpError::NoRoute(format!(
                "POST /api/partitions/{{partition}}/{other}"
            )))
        }
    };
    Ok(Json(json!({
        "partition": row.partition, "owner": row.owner, "nextOwner": row.next_owner,
        "epoch": row.epoch, "offline": row.offline,
    })))
}

/// `GET /api/workers`: the workers that hold partitions (with them) and the barred ones.
pub(crate) async fn workers(State(s): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
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
    let workers: Vec<Value> = by_worker
        .into_iter()
        .map(|(name, partitions)| {
            let barred = prohibited.contains(&name);
            json!({"name": name, "partitions": partitions, "prohibited": barred})
        })
        .collect();
    Ok(Json(
        json!({ "workers": workers, "prohibited": prohibited }),
    ))
}

/// `POST /api/workers/{name}/{prohibit|allow}`: the barred list after the change.
pub(crate) async fn worker_action(
    State(s): State<Arc<AppState>>,
    Path((name, action)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let name = validate::event_name(&name).map_err(|_| HttpError::Invalid {
        field: "name",
        message: "a worker name is 1 to 256 bytes without control characters".to_owned(),
    })?;
    let barred = match action.as_str() {
        "prohibit" => true,
        "allow" => false,
        other => {
            return Err(HttpError::NoRoute(format!(
                "POST /api/workers/{{name}}/{other}"
            )))
        }
    };
    let list = s.admin.set_prohibited(&name, barred).await?;
    Ok(Json(json!({ "prohibited": list })))
}

/// `GET /api/scale?samples=1&intervalMs=1000`: the recommendation (samples 1 to 10, interval
/// up to 10 s).
pub(crate) async fn scale(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<taskhub::admin::ScaleRecommendation>> {
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
    Ok(Json(s.admin.scale(samples, interval).await?))
}
