//! Serving the endpoint on a listener until a shutdown signal.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use taskhub::TaskHub;
use taskhub_listen::Limits;
use tokio::net::TcpListener;

use crate::auth::{check_bind, Auth};
use crate::error::GrpcError;
use crate::hub_name::HubName;
use crate::listen::serve_connections;
use crate::proto::task_hub_sidecar_service_server::TaskHubSidecarServiceServer;
use crate::route::Routed;
use crate::service::{RequestCaps, Sidecar, WorkerCalls};

/// The largest message accepted and sent (histories and inputs travel whole; gRPC's default
/// is 4 MiB).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What to serve.
#[derive(Clone, Debug)]
pub struct GrpcConfig {
    hub: TaskHub,
    token: Option<String>,
    /// The service: the client calls under their caps, and the worker calls if plugged in.
    sidecar: Sidecar,
    limits: Limits,
}

impl std::fmt::Debug for dyn WorkerCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerCalls")
    }
}

impl GrpcConfig {
    /// The client calls over `hub`, without a token (loopback only).
    #[must_use]
    pub fn new(hub: TaskHub) -> Self {
        Self {
            sidecar: Sidecar::new(&hub),
            hub,
            token: None,
            limits: Limits::default(),
        }
    }

    /// Refuses client calls over `caps` (default [`RequestCaps::default`]).
    #[must_use]
    pub fn with_caps(mut self, caps: RequestCaps) -> Self {
        self.sidecar = self.sidecar.with_caps(caps);
        self
    }

    /// Serves connections under `limits` (default [`Limits::default`]).
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Requires `token` (`None` or empty: no token) as `authorization: Bearer <token>`.
    #[must_use]
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.token = token.filter(|t| !t.is_empty());
        self
    }

    /// Serves the worker calls with `workers`.
    #[must_use]
    pub fn with_workers(mut self, workers: Arc<dyn WorkerCalls>) -> Self {
        self.sidecar = self.sidecar.with_workers(workers);
        self
    }

    /// Checks `addr` against the token rule (loopback, or a token).
    ///
    /// # Errors
    /// [`GrpcError::TokenRequired`].
    pub fn check_bind(&self, addr: SocketAddr) -> Result<(), GrpcError> {
        check_bind(addr, self.token.as_deref())
    }
}

/// Serves the endpoint on `listener` until `shutdown` completes, then lets the calls in flight
/// finish for at most [`SHUTDOWN_GRACE`](crate::SHUTDOWN_GRACE) (a wait for completion ends when
/// its client goes away or its deadline passes; one still waiting then has its connection
/// closed).
///
/// # Errors
/// [`GrpcError::TokenRequired`] if the listener is not on loopback and there is no token;
/// [`GrpcError::Limits`] for a connection limit of zero. A
/// failed accept or connection is logged (`debug`) and does not end the server.
pub async fn serve(
    listener: TcpListener,
    config: GrpcConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), GrpcError> {
    if let Ok(addr) = listener.local_addr() {
        config.check_bind(addr)?;
    }
    config.limits.check()?;
    let sidecar = config.sidecar;
    let auth = Auth::new(config.token.as_deref());
    let hub = HubName::new(&config.hub.settings().task_hub_name);
    let server = TaskHubSidecarServiceServer::new(sidecar.clone())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    // `GetWorkItems` is served by `Routed` with its own codec: a compression or message-size
    // setting added here must be set in `route.rs` too.
    let server = Routed::new(server, sidecar);
    let service = tonic::service::interceptor::InterceptedService::new(
        server,
        move |r: tonic::Request<()>| {
            let r = auth.check(r)?;
            hub.check(r.metadata())?;
            Ok(r)
        },
    );
    serve_connections(listener, service, config.limits, shutdown).await;
    Ok(())
}
