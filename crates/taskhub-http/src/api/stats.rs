//! The hub's identity and live statistics for the dashboard's chart.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use taskhub_storage::QueueName;

use crate::error::ApiResult;
use crate::responses::{HubInfo, Stats, WorkerCounters};
use crate::state::AppState;

/// `GET /api/hub`: name, backend, partition count, whether a worker runs in this process.
#[utoipa::path(get, path = "/api/hub", tag = "taskhub",
    summary = "Task hub name, backend, partition count, whether a worker runs here",
    responses((status = 200, description = "The hub", body = HubInfo)))]
pub(crate) async fn hub(State(s): State<Arc<AppState>>) -> ApiResult<Json<HubInfo>> {
    let settings = s.hub.settings();
    Ok(Json(HubInfo {
        task_hub: settings.task_hub_name.clone(),
        backend: s.hub.store().backend_name().to_owned(),
        partition_count: s.hub.partition_count(),
        worker: s.worker_stats.is_some(),
        metrics: s.metrics.is_some(),
        version: env!("CARGO_PKG_VERSION"),
    }))
}

/// `GET /api/stats`: queue depths now, the turns every worker has committed (the sum of the
/// partitions' counts, which their owners add to at each lease renewal: the dashboard turns
/// its change into the hub's throughput) and, with a worker in this process, its counters;
/// with SDK workers served here, the work waiting for one whose filters take it.
#[utoipa::path(get, path = "/api/stats", tag = "taskhub",
    summary = "Queue depths and in-process worker counters (for the live chart)",
    responses((status = 200, description = "The statistics", body = Stats)))]
pub(crate) async fn stats(State(s): State<Arc<AppState>>) -> ApiResult<Json<Stats>> {
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
        WorkerCounters {
            turns: w.turns,
            activities: w.activities,
            dead_lettered: w.dead_lettered,
        }
    });
    Ok(Json(Stats {
        time_ms: now.as_millis(),
        control_queue_length: control,
        work_item_queue_length: work.length,
        oldest_message_age_ms: oldest,
        turns,
        worker,
        unmatched: s.unmatched.as_ref().map(|f| f().into()),
    }))
}
