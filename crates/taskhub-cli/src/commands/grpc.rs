//! Serving the Durable Task gRPC endpoint (`taskhub serve --grpc`, `taskhub worker --grpc`):
//! the client calls of the Durable Task SDKs and, on a worker, their worker calls (through a
//! [`Dispatcher`]), with the HTTP API's rules (loopback, or the `http_token` off loopback,
//! sent as `authorization: Bearer <token>` metadata).

use taskhub::TaskHub;

use crate::own_settings::CliSettings;

use super::listen::Bind;
use taskhub_grpc::{Dispatcher, GrpcConfig, RequestCaps};

/// Where to listen, checked against the token rule before anything is opened.
pub struct GrpcListen {
    bind: Bind,
    caps: RequestCaps,
}

impl GrpcListen {
    /// Parses `addr` and checks it: loopback, or a token from `http_token` /
    /// `TASKHUB_HTTP_TOKEN` (the gRPC endpoint shares the HTTP API's token).
    pub fn check(addr: &str, settings: &CliSettings) -> anyhow::Result<Self> {
        let bind = Bind::parse(addr, "--grpc", "127.0.0.1:4001", settings)?;
        taskhub_grpc::check_bind(bind.addr, bind.token.as_deref())?;
        Ok(Self {
            bind,
            caps: settings.request_caps(),
        })
    }

    /// Binds and serves in the background; prints the address. With `workers`, SDK workers
    /// are served too (`GetWorkItems` and the completions).
    pub async fn start(
        self,
        hub: &TaskHub,
        workers: Option<Dispatcher>,
    ) -> anyhow::Result<GrpcRunning> {
        let (listener, local) = self.bind.listen().await?;
        let mut config = GrpcConfig::new(hub.clone())
            .with_token(self.bind.token.clone())
            .with_limits(self.bind.limits)
            .with_caps(self.caps);
        let what = if workers.is_some() {
            "SDK clients and SDK workers"
        } else {
            "SDK client calls; SDK workers connect to `taskhub worker --grpc`"
        };
        if let Some(d) = &workers {
            config = config.with_workers(std::sync::Arc::new(d.clone()));
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(taskhub_grpc::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        crate::outln!(
            "Durable Task gRPC endpoint on {local} ({what}){}",
            if self.bind.token.is_some() {
                "; calls need the metadata authorization: Bearer <token>"
            } else {
                ""
            }
        );
        Ok(GrpcRunning {
            stop,
            task,
            workers,
        })
    }
}

/// The endpoint running in the background.
pub struct GrpcRunning {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), taskhub_grpc::GrpcError>>,
    workers: Option<Dispatcher>,
}

impl GrpcRunning {
    /// Stops accepting and finishes the calls in flight (the endpoint closes the connections
    /// of those still running after `taskhub_grpc::SHUTDOWN_GRACE`).
    pub async fn stop(self) {
        // The SDK workers' streams end first: the graceful stop waits for open streams.
        if let Some(d) = &self.workers {
            d.close();
        }
        let _ = self.stop.send(());
        let backstop = taskhub_grpc::SHUTDOWN_GRACE + std::time::Duration::from_secs(5);
        match tokio::time::timeout(backstop, self.task).await {
            Ok(Ok(Err(e))) => eprintln!("warning: the gRPC endpoint stopped with an error: {e}"),
            Ok(Err(e)) => eprintln!("warning: the gRPC endpoint task failed: {e}"),
            Ok(Ok(Ok(()))) => {}
            Err(_) => {
                eprintln!("warning: calls to the gRPC endpoint were still waiting at shutdown")
            }
        }
    }
}
