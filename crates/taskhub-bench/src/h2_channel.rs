//! The stand-in SDK worker's transport: one plain HTTP/2 connection (hyper's `SendRequest`)
//! under the generated client. tonic's `Channel` puts a buffer task and a reconnecting layer in
//! front of its connection, an extra task and queue hop on every call; the stand-in shares the
//! server's two cores, so each microsecond it spends is taken from the server being measured.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use anyhow::Context as _;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use taskhub_grpc::tonic::body::Body;
use taskhub_grpc::tonic::codegen::{http, Service};

/// A cloneable handle to one HTTP/2 connection, usable as a tonic client's transport.
#[derive(Clone)]
pub struct H2Channel(SendRequest<Body>);

impl H2Channel {
    /// Connects to `addr` (`host:port`, plain TCP) and drives the connection on a task.
    pub async fn connect(addr: &str) -> anyhow::Result<Self> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        // As the server: a work item and an answer are small writes that must not wait for
        // the peer's delayed ACK.
        tcp.set_nodelay(true)?;
        let (send, connection) = http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(tcp))
            .await
            .context("HTTP/2 handshake")?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                eprintln!("sdk-worker: connection: {e}");
            }
        });
        Ok(Self(send))
    }
}

impl Service<http::Request<Body>> for H2Channel {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        Box::pin(self.0.send_request(req))
    }
}
