//! The loop: accept, cap, serve each connection under its watchdog, shut down gracefully.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::connection::{Activity, Tracked};
use crate::service::{ConnectionService, ResponseBody};
use crate::{Limits, SHUTDOWN_GRACE};

/// How long the loop pauses after a failed accept (out of file descriptors, say) before it
/// accepts again, instead of spinning on the error.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// The HTTP version an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// HTTP/1.1 (the API and the dashboard, for browsers and `curl`).
    Http1,
    /// HTTP/2 only (gRPC), with keep-alive pings and no cap on the calls of one connection
    /// (an SDK worker answers up to its declared concurrency at once).
    Http2,
}

/// The addresses of an accepted connection, for the service that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The address the connection came to (`None` if the socket cannot tell).
    pub local: Option<SocketAddr>,
    /// The address it came from.
    pub remote: SocketAddr,
}

/// Serves every connection `listener` accepts with the service `make` builds for it, under
/// `limits` (see the crate's docs), until `shutdown` completes; then stops accepting (the
/// listening socket closes), asks every connection to finish (calls in flight run to their end,
/// new ones are refused) and waits for them for at most [`SHUTDOWN_GRACE`]: then the
/// connections still open are closed. Failed accepts and connections are logged (`debug`).
pub async fn serve<M, S, B>(
    listener: TcpListener,
    protocol: Protocol,
    limits: Limits,
    mut make: M,
    shutdown: impl Future<Output = ()> + Send,
) where
    M: FnMut(Peer) -> S,
    S: ConnectionService<http::Request<Incoming>, B>,
    B: ResponseBody,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections));
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
        let (tcp, remote) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::debug!(error = %e, "endpoint: accept failed");
                tokio::select! {
                    () = &mut shutdown => break,
                    () = accept_pause() => continue,
                }
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::debug!(
                peer = %remote,
                max = limits.max_connections,
                "endpoint: connection refused, the cap of open connections is reached"
            );
            drop(tcp);
            continue;
        };
        let peer = Peer {
            local: tcp.local_addr().ok(),
            remote,
        };
        let service = make(peer);
        let stopped = stopped.clone();
        connections.spawn(async move {
            serve_one(
                Accepted {
                    tcp,
                    protocol,
                    limits,
                    stopped,
                },
                service,
            )
            .await;
            drop(slot);
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
            "endpoint: calls still in flight {SHUTDOWN_GRACE:?} after the shutdown; closing \
             their connections"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
}

/// One accepted connection and what it is served under.
struct Accepted {
    tcp: TcpStream,
    protocol: Protocol,
    limits: Limits,
    stopped: watch::Receiver<bool>,
}

async fn serve_one<S, B>(accepted: Accepted, service: S)
where
    S: ConnectionService<http::Request<Incoming>, B>,
    B: ResponseBody,
{
    let Accepted {
        tcp,
        protocol,
        limits,
        stopped,
    } = accepted;
    // A work item and an answer are small writes; with Nagle's algorithm each waits for the
    // peer's delayed ACK (about 40 ms).
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "endpoint: cannot set TCP_NODELAY");
    }
    let activity = Activity::new(crate::now());
    let service = TowerToHyperService::new(Tracked {
        inner: service,
        activity: Arc::clone(&activity),
    });
    let watchdog = Watchdog {
        activity,
        limits,
        accepted: crate::now(),
        stopped,
    };
    match protocol {
        Protocol::Http2 => {
            let mut builder = http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .max_concurrent_streams(None)
                .keep_alive_interval(Some(limits.keepalive_interval))
                .keep_alive_timeout(limits.keepalive_interval);
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(connection);
            watchdog.run(connection, |c| c.graceful_shutdown()).await;
        }
        Protocol::Http1 => {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.first_request_timeout);
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(connection);
            watchdog.run(connection, |c| c.graceful_shutdown()).await;
        }
    }
}

/// Watches one connection: closes it when it sends no request in time, asks it to finish when
/// it is idle too long, when its service asks, or at shutdown, and closes it when it has not
/// finished [`SHUTDOWN_GRACE`] after that.
struct Watchdog {
    activity: Arc<Activity>,
    limits: Limits,
    accepted: Instant,
    stopped: watch::Receiver<bool>,
}

impl Watchdog {
    async fn run<C>(self, mut connection: Pin<&mut C>, finish: impl Fn(Pin<&mut C>))
    where
        C: Future<Output = Result<(), hyper::Error>>,
    {
        let mut finishing: Option<Instant> = None;
        loop {
            let deadline = self.deadline(finishing);
            let stop = self.stopped.clone();
            tokio::select! {
                ended = connection.as_mut() => {
                    if let Err(e) = ended {
                        tracing::debug!(error = %e, "endpoint: connection ended");
                    }
                    return;
                }
                () = wait_stop(stop), if finishing.is_none() => {
                    finish(connection.as_mut());
                    finishing = Some(crate::now());
                    continue;
                }
                () = self.activity.changed() => {}
                () = sleep_until(deadline) => {}
            }
            let now = crate::now();
            match finishing {
                Some(since) if now >= since + SHUTDOWN_GRACE => {
                    tracing::debug!("endpoint: connection did not finish in time; closed");
                    return;
                }
                Some(_) => {}
                None if !self.activity.requested() => {
                    if now >= self.accepted + self.limits.first_request_timeout {
                        tracing::debug!(
                            timeout = ?self.limits.first_request_timeout,
                            "endpoint: no request on a new connection in time; closed"
                        );
                        return;
                    }
                }
                None => {
                    let idle = self
                        .activity
                        .idle_since()
                        .is_some_and(|t| now >= t + self.limits.idle_timeout);
                    if idle || self.activity.close_asked() {
                        finish(connection.as_mut());
                        finishing = Some(now);
                    }
                }
            }
        }
    }

    /// When to look again (a change of activity wakes the watchdog sooner).
    fn deadline(&self, finishing: Option<Instant>) -> Instant {
        if let Some(since) = finishing {
            return since + SHUTDOWN_GRACE;
        }
        if !self.activity.requested() {
            return self.accepted + self.limits.first_request_timeout;
        }
        if self.activity.close_asked() {
            return crate::now();
        }
        match self.activity.idle_since() {
            Some(t) => t + self.limits.idle_timeout,
            // A call in flight: its end wakes the watchdog.
            None => crate::now() + self.limits.idle_timeout,
        }
    }
}

async fn wait_stop(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

#[expect(
    clippy::disallowed_methods,
    reason = "a socket's timeout in wall-clock time, not the hub's: a hub on a manual clock \
              must not stall its endpoint"
)]
fn sleep_until(deadline: Instant) -> tokio::time::Sleep {
    tokio::time::sleep_until(deadline)
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
