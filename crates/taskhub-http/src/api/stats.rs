//! The hub's identity and live statistics for the dashboard's chart.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use taskhub_storage::QueueName;

use crate::error::ApiResult;
use crate::state::AppState;

/// `GET /api/hub`: name, backend, partition count, whether a worker runs in this process.
pub(crate) async fn hub(State(s): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
    let settings = s.hub.settings();
    Ok(Json(json!({
        "taskHub": settings.task_hub_name,
        "backend": s.hub.store().backend_name(),
        "partitionCount": s.hub.partition_count(),
        "worker": s.worker_stats.is_some(),
        "metrics": s.metrics.is_some(),
        "version": env!("CARGO_PKG_VERSION"),
    })))
}

/// `GET /api/stats`: queue depths now, the turns every worker has committed (the sum of the
/// partitions' counts, which their owners add to at each lease renewal: the dashboard turns
/// its change into the hub's throughput) and, with a worker in this process, its counters.
pub(crate) async fn stats(State(s): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
    let store = s.hub.store();
    let now = s.hub.clock().now();
    let mut control = 0u64;
    let mut turns = 0u64;
    let mut oldest: Option<u64> = None;
    for row in store
        .list_partitions()
        .await
        .map_err(taskhub::TaskhubError::from)?
    {
        turns = turns.saturating_add(row.turns);
        let st = store
            .stats(QueueName::Control(row.partition))
            .await
            .map_err(taskhub::TaskhubError::from)?;
        control += st.length;
        if let Some(t) = st.oldest_enqueued_at {
            let age = u64::try_from(now.saturating_since(t).as_millis()).unwrap_or(u64::MAX);
            oldest = Some(oldest.map_or(age, |o| o.max(age)));
        }
    }
    let work = store
        .stats(QueueName::WorkItems)
        .await
        .map_err(taskhub::TaskhubError::from)?;
    let worker = s.worker_stats.as_ref().map(|f| {
        let w = f();
        json!({"turns": w.turns, "activities": w.activities, "deadLettered": w.dead_lettered})
    });
    Ok(Json(json!({
        "timeMs": now.as_millis(),
        "controlQueueLength": control,
        "workItemQueueLength": work.length,
        "oldestMessageAgeMs": oldest,
        "turns": turns,
        "worker": worker,
    })))
}
