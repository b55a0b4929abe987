//! Taskhub's HTTP management API and web dashboard, as an axum [`Router`] to serve on its own
//! (`taskhub serve`, `taskhub worker --http`) or to mount in an application:
//!
//! ```no_run
//! # async fn demo(hub: taskhub::TaskHub) -> Result<(), taskhub_http::HttpError> {
//! let app = taskhub_http::router(taskhub_http::HttpConfig::new(hub));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! taskhub_http::serve(listener, app, std::future::pending()).await?;
//! # Ok(()) }
//! ```
//!
//! * the Durable Functions HTTP API under `/runtime/webhooks/durabletask/` (start, status,
//!   list, raise event, terminate, suspend, resume, restart, purge; list, read and signal
//!   entities) with its shapes and status codes;
//! * Taskhub's own routes under `/api/` (instance details with history and timeline,
//!   entities with their lock and queue, signal, delete and clean-up, partitions and their manual control, workers, dead letters, scale, live stats);
//! * `GET /api/openapi.json` (the OpenAPI 3.1 document, generated from the response types and
//!   the handlers; tests check that it lists every route and that every answer fits it),
//!   `GET /metrics` (filled by [`HttpConfig::metrics`]), and the dashboard at `/`.
//!
//! Security: see [`check_bind`] and [`HttpConfig::token`]. State changes only on POST and
//! DELETE; request bodies are capped ([`HttpConfig::body_limit`], 413 beyond).
//!
//! Modules: `df/` the Durable Functions routes (`payload.rs`: management URLs, status and
//! history JSON); `api/` Taskhub's own (with `timeline.rs`); `auth` the guard (bearer token,
//! same-origin, a loopback `Host` without a token); `validate` and `entity_input` request
//! values with the CLI's rules, a 400 naming the field; `error` [`HttpError`] → status + JSON;
//! `responses/` the body of every answer, one module per resource (`Serialize` +
//! `utoipa::ToSchema`; a payload as its stored text, `JsonText` over `RawValue`); `openapi`
//! the document `utoipa` generates from them and each handler's `#[utoipa::path]`; `routes`
//! the route list the document is tested against; `dashboard/` the static HTML, JS and CSS
//! built in with `include_str!` (values set with `textContent` only); `isotime` times through
//! `taskhub::time`. Tests run a real server on 127.0.0.1; `tests/browser.rs` drives headless
//! Chromium; `benches/api.rs` reads statuses and list pages over 100,000 instances.

mod api;
mod auth;
mod config;
mod dashboard;
mod df;
mod entity_input;
mod error;
mod isotime;
mod openapi;
mod responses;
mod routes;
mod state;
mod timeline;
mod token;
mod validate;
mod watch;

use std::future::Future;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub use config::{check_bind, HttpConfig, MetricsRender, StatsSource, DEFAULT_BODY_LIMIT};
pub use error::HttpError;
pub use routes::ROUTES;
pub use taskhub_listen::Limits;
use taskhub_listen::Protocol;
pub use timeline::{timeline, TimelineItem};
pub use validate::MAX_EVENT_NAME_BYTES;

use state::AppState;

/// The router of the whole API and the dashboard.
pub fn router(config: HttpConfig) -> Router {
    let limit = config.body_limit;
    let state = Arc::new(AppState::new(config));
    Router::new()
        .nest(df::payload::BASE, df::routes())
        .nest("/api", api::routes())
        .route("/api/openapi.json", get(openapi::serve))
        .route("/metrics", get(metrics))
        .merge(dashboard::routes())
        .fallback(no_route)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            watch::note,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::guard,
        ))
        .with_state(state)
}

/// Serves `router` on `listener` until `shutdown` completes, under the default [`Limits`]
/// (see [`serve_with_limits`]).
///
/// # Errors
/// [`HttpError::InvalidLimits`] never for the defaults; see [`serve_with_limits`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    serve_with_limits(listener, router, Limits::default(), shutdown).await
}

/// Serves `router` on `listener` as HTTP/1.1 until `shutdown` completes, under `limits`
/// (`taskhub_listen`: the connection cap, the first request's deadline, the idle timeout; a
/// request refused for its credentials closes its connection after the answer). Each request
/// carries its connection's peer address (`ConnectInfo<SocketAddr>`), so a router without a
/// token answers only clients on loopback, whatever address the listener is bound to.
///
/// # Errors
/// [`HttpError::InvalidLimits`] for a limit of zero.
pub async fn serve_with_limits(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    limits
        .check()
        .map_err(|e| HttpError::InvalidLimits(e.to_string()))?;
    let make = |peer: taskhub_listen::Peer| WithPeer {
        router: router.clone(),
        peer: peer.remote,
    };
    taskhub_listen::serve(listener, Protocol::Http1, limits, make, shutdown).await;
    Ok(())
}

/// The router, with the connection's peer address put into each request.
#[derive(Clone)]
struct WithPeer {
    router: Router,
    peer: std::net::SocketAddr,
}

impl tower_service::Service<axum::http::Request<hyper::body::Incoming>> for WithPeer {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = axum::routing::future::RouteFuture<std::convert::Infallible>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower_service::Service::<axum::http::Request<axum::body::Body>>::poll_ready(
            &mut self.router,
            cx,
        )
    }

    fn call(&mut self, req: axum::http::Request<hyper::body::Incoming>) -> Self::Future {
        let mut req = req.map(axum::body::Body::new);
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        self.router.call(req)
    }
}

/// `GET /metrics`.
#[utoipa::path(get, path = "/metrics", tag = "taskhub",
    summary = "Metrics in Prometheus text format (404 when no recorder is installed)",
    responses(
        (status = 200, description = "The exposition", content_type = "text/plain", body = String),
        (status = 404, description = "No recorder", body = crate::responses::ErrorBody)
    ))]
async fn metrics(State(s): State<Arc<AppState>>) -> Response {
    match &s.metrics {
        Some(render) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            render(),
        )
            .into_response(),
        None => {
            HttpError::NotFound("metrics (no recorder is installed in this process)".to_owned())
                .into_response()
        }
    }
}

async fn no_route(method: Method, uri: Uri) -> Response {
    let e = HttpError::NoRoute(format!("{method} {}", uri.path()));
    let mut r = e.into_response();
    if r.status() != StatusCode::NOT_FOUND {
        *r.status_mut() = StatusCode::NOT_FOUND;
    }
    r
}
