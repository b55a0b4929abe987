//! The state every handler shares.

use taskhub::admin::{HubAdmin, UnmatchedSource};
use taskhub::{TaskHub, TaskHubClient};

use crate::config::{HttpConfig, MetricsRender, StatsSource};

/// Built once per router from the [`HttpConfig`].
pub(crate) struct AppState {
    pub hub: TaskHub,
    pub client: TaskHubClient,
    pub admin: HubAdmin,
    pub token: Option<String>,
    pub body_limit: usize,
    pub metrics: Option<MetricsRender>,
    pub worker_stats: Option<StatsSource>,
    pub unmatched: Option<UnmatchedSource>,
}

impl AppState {
    pub fn new(config: HttpConfig) -> Self {
        Self {
            client: config.hub.client(),
            admin: config.hub.admin(),
            hub: config.hub,
            token: config.token.filter(|t| !t.is_empty()),
            body_limit: config.body_limit,
            metrics: config.metrics,
            worker_stats: config.worker_stats,
            unmatched: config.unmatched,
        }
    }
}
