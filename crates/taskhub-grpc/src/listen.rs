//! The accept loop: every TCP connection is served as HTTP/2 (gRPC needs nothing else) by
//! hyper under `taskhub_listen`'s limits, straight into the endpoint's one service. tonic's `Server` would route each call
//! through an axum router and a stack of tower layers (error recovery, its deadline guard,
//! boxing) that a single service with its own routing (`route.rs`) and its own deadlines
//! (`service/deadline.rs`) does not need; the connection's addresses, which `auth.rs` reads, are
//! put into each request here. About a tenth of a work item's server CPU over gRPC
//! (bench/README.md, "Over gRPC": "The allocator, the accept loop, the stand-in").

use std::future::Future;
use std::task::{Context, Poll};

use hyper::body::Incoming;
use taskhub_listen::{ConnectionService, Limits, Protocol, ResponseBody};
use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::codegen::{http, Service};
use tonic::transport::server::TcpConnectInfo;

/// Serves `service` on every connection `listener` accepts, as HTTP/2 under `limits`
/// (`taskhub_listen`: the connection cap, the first request's deadline, the idle timeout,
/// keep-alive pings), until `shutdown` completes; then the shutdown of
/// [`taskhub_listen::serve`].
pub(crate) async fn serve_connections<S, B>(
    listener: TcpListener,
    service: S,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
) where
    S: ConnectionService<http::Request<Body>, B>,
    B: ResponseBody,
{
    // The connection's addresses go into every request, as tonic's server puts them:
    // `Request::remote_addr` reads them (`auth.rs` refuses a peer off this machine when there
    // is no token).
    let make = |peer: taskhub_listen::Peer| TonicBody {
        inner: service.clone(),
        addresses: TcpConnectInfo {
            local_addr: peer.local,
            remote_addr: Some(peer.remote),
        },
    };
    taskhub_listen::serve(listener, Protocol::Http2, limits, make, shutdown).await;
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
