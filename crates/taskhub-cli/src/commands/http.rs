//! Serving the HTTP management API and the dashboard (`taskhub serve`, `taskhub worker
//! --http`): the address rule, the token, the listener and a clean stop.

use std::net::SocketAddr;

use anyhow::Context as _;
use taskhub::admin::UnmatchedSource;
use taskhub::TaskHub;

use crate::own_settings::CliSettings;
use taskhub_http::{HttpConfig, Limits, MetricsRender, StatsSource};

/// Where to listen, checked against the token rule before anything is opened.
pub struct Listen {
    addr: SocketAddr,
    token: Option<String>,
    limits: Limits,
}

impl Listen {
    /// Parses `addr` and checks it: loopback, or a token from `http_token` /
    /// `TASKHUB_HTTP_TOKEN`.
    pub fn check(addr: &str, settings: &CliSettings) -> anyhow::Result<Self> {
        let addr: SocketAddr = addr.parse().with_context(|| {
            format!("--addr/--http expects IP:PORT such as 127.0.0.1:8080, got {addr:?}")
        })?;
        let token = Some(settings.http_token.expose().to_owned()).filter(|t| !t.is_empty());
        taskhub_http::check_bind(addr, token.as_deref())?;
        Ok(Self {
            addr,
            token,
            limits: settings.limits(),
        })
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
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .with_context(|| format!("cannot listen on {}", self.addr))?;
        let local = listener
            .local_addr()
            .context("cannot read the bound address")?;
        let mut config = HttpConfig::new(hub.clone())
            .with_token(self.token.clone())
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
            self.limits,
            async move {
                let _ = stopped.await;
            },
        ));
        crate::outln!(
            "dashboard and API on http://{local}/ (Durable Functions routes under /runtime/webhooks/durabletask/){}",
            if self.token.is_some() { "; requests need Authorization: Bearer <token>" } else { "" }
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
