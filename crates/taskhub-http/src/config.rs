//! What the router is built from, and the rule for where it may listen.

use std::net::SocketAddr;
use std::sync::Arc;

use taskhub::admin::UnmatchedSource;
use taskhub::{TaskHub, WorkerStats};

use crate::error::HttpError;

/// Renders the metrics exposition served at `GET /metrics` (Prometheus text format), e.g. a
/// `metrics-exporter-prometheus` handle's `render`.
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

/// Reads the counters of a worker running in this process (for the dashboard's throughput
/// chart), e.g. `move || worker.stats()`.
pub type StatsSource = Arc<dyn Fn() -> WorkerStats + Send + Sync>;

/// The default request body cap: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// Everything [`crate::router`] needs.
#[derive(Clone)]
pub struct HttpConfig {
    /// The task hub to manage (its client and admin operations are used).
    pub hub: TaskHub,
    /// The bearer token every API request must carry; `None` (or empty) for none, which is
    /// only allowed on loopback ([`check_bind`]). Without a token the router also answers only
    /// requests whose `Host` is a loopback name (a DNS-rebinding guard).
    pub token: Option<String>,
    /// The largest request body accepted; larger ones get 413. Default 1 MiB.
    pub body_limit: usize,
    /// The `/metrics` route's content; `None` answers 404 there.
    pub metrics: Option<MetricsRender>,
    /// A worker in this process, for the throughput chart; `None` when only the API runs.
    pub worker_stats: Option<StatsSource>,
    /// The work that the SDK workers served in this process leave waiting because none of
    /// their work-item filters take it (`taskhub_grpc::Dispatcher::unmatched_source`): shown by
    /// `/api/stats`, `/api/scale` and the dashboard's partitions page; `None` when no SDK
    /// workers are served here.
    pub unmatched: Option<UnmatchedSource>,
}

impl HttpConfig {
    /// A configuration with no token, the default body cap, no metrics and no worker.
    #[must_use]
    pub fn new(hub: TaskHub) -> Self {
        Self {
            hub,
            token: None,
            body_limit: DEFAULT_BODY_LIMIT,
            metrics: None,
            worker_stats: None,
            unmatched: None,
        }
    }

    /// With this bearer token (an empty one means none).
    #[must_use]
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.token = token.filter(|t| !t.is_empty());
        self
    }

    /// With a renderer for `/metrics`.
    #[must_use]
    pub fn with_metrics(mut self, render: MetricsRender) -> Self {
        self.metrics = Some(render);
        self
    }

    /// With the counters of an in-process worker.
    #[must_use]
    pub fn with_worker_stats(mut self, stats: StatsSource) -> Self {
        self.worker_stats = Some(stats);
        self
    }

    /// With a reader of the work waiting for an SDK worker whose filters take it (see
    /// [`HttpConfig::unmatched`]).
    #[must_use]
    pub fn with_unmatched(mut self, unmatched: UnmatchedSource) -> Self {
        self.unmatched = Some(unmatched);
        self
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("body_limit", &self.body_limit)
            .field("metrics", &self.metrics.is_some())
            .field("worker_stats", &self.worker_stats.is_some())
            .field("unmatched", &self.unmatched.is_some())
            .finish_non_exhaustive()
    }
}

/// Checks that the server may listen on `addr`: any loopback address, or any other address
/// when a token is set.
///
/// # Errors
/// [`HttpError::TokenRequired`] for a non-loopback address without a token.
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<(), HttpError> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        Ok(())
    } else {
        Err(HttpError::TokenRequired { addr })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_a_token() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let lo6: SocketAddr = "[::1]:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_bind(lo, None).is_ok() && check_bind(lo6, None).is_ok());
        let e = check_bind(any, None).unwrap_err().to_string();
        assert!(
            e.contains("TASKHUB_HTTP_TOKEN") && e.contains("0.0.0.0:8080"),
            "{e}"
        );
        assert!(check_bind(any, Some("")).is_err());
        assert!(check_bind(any, Some("t0k")).is_ok());
    }
}
