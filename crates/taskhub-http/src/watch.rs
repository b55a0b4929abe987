//! Tells the runtime that someone looks at the hub: a `/metrics` scrape or a dashboard request
//! (the dashboard's page or its `/api/` calls) lets the workers of this process sample queue
//! depths for the next minute, under `QueueSampling::WhileWatched` (see
//! [`taskhub::telemetry::watched`]); a hub nobody looks at costs no sampling calls. The
//! Durable Functions routes, used by applications rather than people, do not count.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

/// True for a request that shows someone looking at the hub.
pub(crate) fn is_look(path: &str) -> bool {
    matches!(path, "/" | "/index.html" | "/metrics") || path.starts_with("/api/")
}

/// Notes a look (for authorised requests: it runs behind the guard), then runs the route.
pub(crate) async fn note(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if is_look(req.uri().path()) {
        taskhub::telemetry::watched(&state.hub);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrapes_and_the_dashboard_are_looks() {
        assert!(is_look("/metrics"));
        assert!(is_look("/"));
        assert!(is_look("/index.html"));
        assert!(is_look("/api/stats"));
        assert!(!is_look("/runtime/webhooks/durabletask/instances/x"));
        assert!(!is_look("/app.js"));
    }
}
