//! The state every handler shares.

use std::ops::Deref;

use taskhub::admin::HubAdmin;
use taskhub::TaskHubClient;

use crate::config::HttpConfig;

/// Built once per router from the [`HttpConfig`]: the configuration (its fields are read
/// through the state, which derefs to it) and the hub's client and admin handles.
pub(crate) struct AppState {
    config: HttpConfig,
    pub client: TaskHubClient,
    pub admin: HubAdmin,
}

impl AppState {
    pub fn new(mut config: HttpConfig) -> Self {
        // An empty token is no token.
        config.token = config.token.filter(|t| !t.is_empty());
        Self {
            client: config.hub.client(),
            admin: config.hub.admin(),
            config,
        }
    }
}

impl Deref for AppState {
    type Target = HttpConfig;

    fn deref(&self) -> &HttpConfig {
        &self.config
    }
}
