//! The accept loop: every TCP connection is served as HTTP/2 (gRPC needs nothing else) by
//! hyper, straight into the endpoint's one service. tonic's `Server` would route each call
//! through an axum router and a stack of tower layers (error recovery, its deadline guard,
//! boxing) that a single service with its own routing (`route.rs`) and its own deadlines
//! (`service/deadline.rs`) does not need; the connection's addresses, which `auth.rs` reads, are
//! put into each request here. About a tenth of a work item's server CPU over gRPC
//! (bench/README.md, "Over gRPC": "The allocator, the accept loop, the stand-in").

use std::convert::Infallible;
use std::future::Future;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body as HttpBody, Incoming};
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tonic::body::Body;
use tonic::codegen::{http, Service};
use tonic::transport::server::TcpConnectInfo;

/// How long the loop pauses after a failed accept (out of file descriptors, say) before it
/// accepts again, instead of spinning on the error.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How long the calls in flight may run on after a shutdown before their connections are
/// closed (a wait for completion without a deadline could otherwise hold `serve` for a day).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves `service` on every connection `listener` accepts until `shutdown` completes; then
/// stops accepting (the listening socket closes), asks every connection to finish
/// (HTTP/2 `GOAWAY`: calls in flight run to their end, new ones are refused) and waits for them,
/// for at most [`SHUTDOWN_GRACE`]: then the connections still open are closed.
pub(crate) async fn serve_connections<S, B>(
    listener: TcpListener,
    service: S,
    shutdown: impl Future<Output = ()> + Send,
) where
    S: Service<http::Request<Body>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = http2::Builder::new(TokioExecutor::new());
    // As tonic's server: no limit on the calls in flight on one connection (an SDK worker
    // answers up to its declared concurrency at once), hyper's timer for its own timeouts.
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(None);
    let (stop, stopped) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        // Reap the connections that have ended.
        while connections.try_join_next().is_some() {}
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::debug!(error = %e, "gRPC endpoint: accept failed");
                // A shutdown during the pause still ends the loop.
                tokio::select! {
                    () = &mut shutdown => break,
                    () = accept_pause() => continue,
                }
            }
        };
        // A work item and an answer are small writes; with Nagle's algorithm each waits for
        // the peer's delayed ACK (about 40 ms), which capped SDK workers at a few hundred round
        // trips per second (tests/sdk_dispatch.rs measures it).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "gRPC endpoint: cannot set TCP_NODELAY");
        }
        // The connection's addresses go into every request, as tonic's server puts them:
        // `Request::remote_addr` reads them (`auth.rs` refuses a peer off this machine when
        // there is no token).
        let addresses = TcpConnectInfo {
            local_addr: tcp.local_addr().ok(),
            remote_addr: Some(peer),
        };
        let connection = builder.serve_connection(
            TokioIo::new(tcp),
            TowerToHyperService::new(TonicBody {
                inner: service.clone(),
                addresses,
            }),
        );
        let mut stopped = stopped.clone();
        connections.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                ended = connection.as_mut() => {
                    if let Err(e) = ended {
                        tracing::debug!(error = %e, "gRPC endpoint: connection ended");
                    }
                    return;
                }
                _ = stopped.wait_for(|stop| *stop) => connection.as_mut().graceful_shutdown(),
            }
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "gRPC endpoint: connection ended");
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            connections = connections.len(),
            "gRPC endpoint: calls still in flight {SHUTDOWN_GRACE:?} after the shutdown; \
             closing their connections"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
}

/// The pause after a failed accept (out of file descriptors, say).
#[expect(
    clippy::disallowed_methods,
    reason = "a socket's back-off in wall-clock time, not the hub's: a hub on a manual clock \
              must not stall its endpoint"
)]
fn accept_pause() -> tokio::time::Sleep {
    tokio::time::sleep(ACCEPT_ERROR_PAUSE)
}

/// `inner` taking hyper's request body, as tonic's services take tonic's, with the
/// connection's addresses in each request's extensions.
#[derive(Clone)]
struct TonicBody<S> {
    inner: S,
    addresses: TcpConnectInfo,
}

impl<S> Service<http::Request<Incoming>> for TonicBody<S>
where
    S: Service<http::Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Incoming>) -> Self::Future {
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(self.addresses.clone());
        self.inner.call(req)
    }
}
