//! Serving the HTTP management API and the dashboard (`taskhub serve`, `taskhub worker
//! --http`): the address rule, the token, the listener and a clean stop.

use taskhub::admin::UnmatchedSource;
use taskhub::TaskHub;

use crate::own_settings::CliSettings;

use super::listen::Bind;
use taskhub_http::{HttpConfig, MetricsRender, StatsSource};

/// Where to listen, checked against the token rule before anything is opened.
pub struct Listen {
    bind: Bind,
}

impl Listen {
    /// Parses `addr` and checks it: loopback, or a token from `http_token` /
    /// `TASKHUB_HTTP_TOKEN`.
    pub fn check(addr: &str, settings: &CliSettings) -> anyhow::Result<Self> {
        let bind = Bind::parse(addr, "--addr/--http", "127.0.0.1:8080", settings)?;
        taskhub_http::check_bind(bind.addr, bind.token.as_deref())?;
        Ok(Self { bind })
    }

    /// Binds and serves in the background; prints the URL. `stats`: the in-process worker's
    /// counters; `unmatched`: the work its SDK workers' filters leave waiting (with `--grpc`).
    pub async fn start(
        self,
        hub: &TaskHub,
        stats: Option<StatsSource>,
        unmatched: Option<UnmatchedSource>,
        metrics: MetricsRender,
    ) -> anyhow::Result<Running> {
        let (listener, local) = self.bind.listen().await?;
        let mut config = HttpConfig::new(hub.clone())
            .with_token(self.bind.token.clone())
            .with_metrics(metrics);
        if let Some(s) = stats {
            config = config.with_worker_stats(s);
        }
        if let Some(u) = unmatched {
            config = config.with_unmatched(u);
        }
        let router = taskhub_http::router(config);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(taskhub_http::serve_with_limits(
            listener,
            router,
            self.bind.limits,
            async move {
                let _ = stopped.await;
            },
        ));
        crate::outln!(
            "dashboard and API on http://{local}/ (Durable Functions routes under /runtime/webhooks/durabletask/){}",
            if self.bind.token.is_some() { "; requests need Authorization: Bearer <token>" } else { "" }
        );
        Ok(Running { stop, task })
    }
}

/// A server running in the background.
pub struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), taskhub_http::HttpError>>,
}

impl Running {
    /// Stops accepting, finishes in-flight requests.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Err(e)) => eprintln!("warning: the HTTP server stopped with an error: {e}"),
            Err(e) => eprintln!("warning: the HTTP server task failed: {e}"),
            Ok(Ok(())) => {}
        }
    }
}
