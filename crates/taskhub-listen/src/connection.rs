//! One connection's activity, as its watchdog (`accept.rs`) reads it: whether a request has
//! come, how many calls are in flight, since when none is, and whether the service asked for
//! the connection to be closed. The service is wrapped ([`Tracked`]) so that a call counts from
//! its request until its response body is dropped (sent or abandoned).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::Notify;
use tokio::time::Instant;
use tower_service::Service;

/// What the watchdog and the calls share.
#[derive(Debug)]
pub(crate) struct Activity {
    /// The connection's number in this process (see [`ConnectionHandle::id`]).
    id: u64,
    requested: AtomicBool,
    in_flight: AtomicUsize,
    idle_since: Mutex<Instant>,
    close: AtomicBool,
    changed: Notify,
}

impl Activity {
    pub(crate) fn new(now: Instant) -> Arc<Self> {
        /// The next connection's number: unique for the life of the process.
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Arc::new(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            requested: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(now),
            close: AtomicBool::new(false),
            changed: Notify::new(),
        })
    }

    /// Whether a request head has arrived.
    pub(crate) fn requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// Since when no call is in flight (`None` while one is).
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(
            *self
                .idle_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Whether the service asked for the connection to be closed.
    pub(crate) fn close_asked(&self) -> bool {
        self.close.load(Ordering::Acquire)
    }

    /// Completes when something the watchdog reads changes.
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    fn begin(self: &Arc<Self>) -> CallGuard {
        self.requested.store(true, Ordering::Release);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_one();
        CallGuard(Arc::clone(self))
    }
}

/// A call in flight: dropped with its response body (or its future, if the call is given up).
#[derive(Debug)]
struct CallGuard(Arc<Activity>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        // The stamp first: the watchdog reads the count, then the stamp.
        *self
            .0
            .idle_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = crate::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_one();
    }
}

/// The handle to its connection that every request carries in its extensions.
#[derive(Debug, Clone)]
pub struct ConnectionHandle(Arc<Activity>);

impl ConnectionHandle {
    pub(crate) fn new(activity: &Arc<Activity>) -> Self {
        Self(Arc::clone(activity))
    }

    /// The connection's number, unique among the connections this process accepted: calls
    /// that carry the same number came on the same connection (the gRPC endpoint matches an
    /// SDK worker's completions that carry no token to the work items its stream on that
    /// connection was given).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Closes the connection once the calls in flight have their answers (a request with wrong
    /// credentials: the peer gets its refusal, then has to connect again to try anew).
    pub fn close(&self) {
        self.0.close.store(true, Ordering::Release);
        self.0.changed.notify_one();
    }
}

/// `inner`, with each call counted and the connection's handle in each request.
#[derive(Debug, Clone)]
pub(crate) struct Tracked<S> {
    pub(crate) inner: S,
    pub(crate) activity: Arc<Activity>,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Tracked<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<TrackedBody<ResBody>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<ReqBody>) -> Self::Future {
        let guard = self.activity.begin();
        req.extensions_mut()
            .insert(ConnectionHandle::new(&self.activity));
        let call = self.inner.call(req);
        Box::pin(async move {
            let response = call.await?;
            Ok(response.map(|inner| TrackedBody {
                inner,
                _guard: guard,
            }))
        })
    }
}

/// A response body that keeps its call counted until it is dropped.
#[derive(Debug)]
pub struct TrackedBody<B> {
    inner: B,
    _guard: CallGuard,
}

impl<B: Body + Unpin> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
