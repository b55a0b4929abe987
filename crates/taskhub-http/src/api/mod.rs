//! Taskhub's own routes under `/api/`, for what the Durable Functions API lacks: instance
//! details with history and timeline, durable entities (list, state, signal, delete,
//! clean-up), partitions and their manual control, workers, dead letters, the scale
//! recommendation, and live statistics.

pub(crate) mod admin;
pub(crate) mod dead_letters;
pub(crate) mod entities;
pub(crate) mod instances;
pub(crate) mod stats;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The routes, relative to `/api`.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/hub", get(stats::hub))
        .route("/stats", get(stats::stats))
        .route("/instances", get(instances::list))
        .route("/instances/{instance_id}", get(instances::detail))
        .route(
            "/instances/{instance_id}/executions/{execution_id}",
            get(instances::execution),
        )
        .route("/partitions", get(admin::partitions))
        .route("/partitions/{partition}/bump", post(admin::bump))
        .route("/partitions/{partition}/offline", post(admin::offline))
        .route("/partitions/{partition}/online", post(admin::online))
        .route("/workers", get(admin::workers))
        .route("/workers/{name}/prohibit", post(admin::prohibit))
        .route("/workers/{name}/allow", post(admin::allow))
        .route("/scale", get(admin::scale))
        .route("/entities", get(entities::list))
        .route("/entities/clean", post(entities::clean))
        .route(
            "/entities/{entity_id}",
            get(entities::detail).delete(entities::delete),
        )
        .route("/entities/{entity_id}/signal", post(entities::signal))
        .route("/dead-letters", get(dead_letters::list))
        .route("/dead-letters/{id}/replay", post(dead_letters::replay))
}
