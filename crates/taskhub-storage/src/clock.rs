//! Time, injected: every lease, timer and back-off decision reads this clock.
#![expect(
    clippy::disallowed_methods,
    reason = "the clock module: SystemClock is the one place that reads the system's time"
)]

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use taskhub_core::Timestamp;

/// A boxed sleep future.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The source of time for the runtime and backends.
///
/// `now` is wall-clock time (what gets recorded); `monotonic` only ever grows and is used to
/// measure elapsed time, such as how long a lease row has gone unchanged. Nothing compares one
/// worker's clock with another's.
pub trait Clock: Send + Sync + Debug {
    /// Wall-clock time.
    fn now(&self) -> Timestamp;
    /// Time since an arbitrary fixed origin; never decreases.
    fn monotonic(&self) -> Duration;
    /// A future that completes once `monotonic()` has advanced by `duration`.
    fn sleep(&self, duration: Duration) -> Sleep;
}

/// The real clock. `sleep` needs a Tokio runtime with the time driver enabled.
#[derive(Debug, Clone)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A system clock whose monotonic origin is now.
    #[must_use]
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now())
    }
    fn monotonic(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio_sleep(duration))
    }
}

async fn tokio_sleep(d: Duration) {
    tokio::time::sleep(d).await;
}

#[derive(Debug)]
struct ManualInner {
    wall_ms: u64,
    mono: Duration,
    sleepers: Vec<(Duration, Waker)>,
}

/// A clock that moves only when told to: for deterministic tests of leases and timers.
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualInner>>,
}

impl ManualClock {
    /// A manual clock at the given wall time, monotonic time zero.
    #[must_use]
    pub fn new(start: Timestamp) -> Self {
        Self {
            inner: Arc::new(Mutex::new(ManualInner {
                wall_ms: start.as_millis(),
                mono: Duration::ZERO,
                sleepers: Vec::new(),
            })),
        }
    }

    /// Moves both wall and monotonic time forward by `d`, waking due sleepers.
    pub fn advance(&self, d: Duration) {
        let due = {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.wall_ms = inner
                .wall_ms
                .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            inner.mono += d;
            let mono = inner.mono;
            let (due, keep): (Vec<_>, Vec<_>) =
                inner.sleepers.drain(..).partition(|(at, _)| *at <= mono);
            inner.sleepers = keep;
            due
        };
        for (_, w) in due {
            w.wake();
        }
    }

    /// True while some sleep on this clock waits for the monotonic time `deadline` (it was
    /// polled and is not yet due): a test can tell that a task is parked until then.
    #[must_use]
    pub fn has_sleeper_until(&self, deadline: Duration) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sleepers
            .iter()
            .any(|(at, _)| *at == deadline)
    }

    /// Sets the wall clock (monotonic time is unaffected), e.g. to simulate clock skew.
    pub fn set_wall(&self, t: Timestamp) {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .wall_ms = t.as_millis();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(
            self.inner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .wall_ms,
        )
    }
    fn monotonic(&self) -> Duration {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mono
    }
    fn sleep(&self, duration: Duration) -> Sleep {
        let deadline = self.monotonic() + duration;
        Box::pin(ManualSleep {
            clock: self.clone(),
            deadline,
        })
    }
}

struct ManualSleep {
    clock: ManualClock,
    deadline: Duration,
}

impl Future for ManualSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut inner = self
            .clock
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if inner.mono >= self.deadline {
            return Poll::Ready(());
        }
        inner.sleepers.push((self.deadline, cx.waker().clone()));
        Poll::Pending
    }
}
