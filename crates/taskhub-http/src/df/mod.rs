//! The Durable Functions HTTP API under `/runtime/webhooks/durabletask/`, with its shapes and
//! status codes (as the extension's `HttpApiHandler` returns them), so that a client written
//! for Durable Functions works unchanged. The `taskHub`, `connection` and `code` query
//! parameters are accepted and ignored (one router serves one hub; the token replaces `code`).

pub(crate) mod control;
pub(crate) mod entities;
pub(crate) mod instances;
pub(crate) mod payload;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The routes, relative to [`payload::BASE`].
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/orchestrators/{function_name}", post(control::start))
        .route(
            "/orchestrators/{function_name}/{instance_id}",
            post(control::start_with_id),
        )
        .route(
            "/instances",
            get(instances::list).delete(instances::purge_where),
        )
        .route(
            "/instances/{instance_id}",
            get(instances::status).delete(instances::purge),
        )
        .route(
            "/instances/{instance_id}/raiseEvent/{event_name}",
            post(control::raise),
        )
        .route(
            "/instances/{instance_id}/terminate",
            post(control::terminate),
        )
        .route("/instances/{instance_id}/suspend", post(control::suspend))
        .route("/instances/{instance_id}/resume", post(control::resume))
        .route("/instances/{instance_id}/restart", post(control::restart))
        .route("/instances/{instance_id}/rewind", post(control::rewind))
        // The same operations named in another case (`Terminate`), as Durable Functions
        // accepts them; any other name is no route.
        .route(
            "/instances/{instance_id}/{operation}",
            post(control::operate),
        )
        .route("/entities", get(entities::list_all))
        .route("/entities/{entity_name}", get(entities::list))
        .route(
            "/entities/{entity_name}/{entity_key}",
            get(entities::get).post(entities::signal),
        )
}
