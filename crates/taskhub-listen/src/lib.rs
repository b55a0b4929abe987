//! The accept loop that Taskhub's two network endpoints share — the HTTP API and dashboard
//! (HTTP/1.1) and the Durable Task gRPC endpoint (HTTP/2) — with the limits a port that anyone
//! may reach needs before any authentication can happen:
//!
//! * a **connection cap** ([`Limits::max_connections`]): a connection beyond it is closed as
//!   soon as it is accepted, so a flood of idle sockets cannot use up the process's file
//!   descriptors and starve real clients;
//! * a **deadline for the first request** ([`Limits::first_request_timeout`]): a connection
//!   that has not sent one complete request head by then (no HTTP/2 preface, half of one, a
//!   preface and nothing else, a slow header) is closed;
//! * an **idle timeout** ([`Limits::idle_timeout`]): a connection with no call in flight for
//!   that long is asked to finish (HTTP/2 `GOAWAY`, HTTP/1.1 close); clients reconnect on their
//!   next call. A long call (a gRPC work-item stream, a status wait) is never idle;
//! * **keep-alive pings** on HTTP/2 ([`Limits::keepalive_interval`]): a peer that stops
//!   answering them within the same interval is dropped, calls in flight or not;
//! * **authentication as early as the protocol allows**: the token travels with each request,
//!   so a service that refuses a request's credentials calls [`ConnectionHandle::close`] (the
//!   handle is in every request's extensions) and the connection is closed after that answer,
//!   instead of being kept for the next try;
//! * a **graceful shutdown**: the listening socket closes, every connection is asked to finish,
//!   calls in flight run on for at most [`SHUTDOWN_GRACE`], then the rest are closed.
//!
//! Socket timing is wall-clock time (tokio's timer), never the hub's `Clock`: a hub on a manual
//! clock must not stall its endpoint.

mod accept;
mod connection;
mod limits;
mod service;

pub use accept::{serve, Peer, Protocol};
pub use connection::ConnectionHandle;
pub use limits::{Limits, LimitsError};
pub use service::{ConnectionService, ResponseBody};

/// How long the calls in flight may run on after a shutdown before their connections are
/// closed (a wait for completion without a deadline could otherwise hold `serve` for a day).
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The socket's time: wall-clock, whatever clock the hub runs on.
#[expect(
    clippy::disallowed_methods,
    reason = "socket timeouts run in wall-clock time, not the hub's: a hub on a manual clock \
              must not stall its endpoint"
)]
pub(crate) fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}
