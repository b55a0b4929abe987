//! Waiting on observable state instead of sleeping.
//!
//! * [`until`] (and [`until_async`], [`until_some`], [`until_some_blocking`]) polls a condition
//!   in real time until it holds. The deadline, [`STUCK`], is far beyond any healthy run, even
//!   on a loaded machine: it only fails a test that is truly stuck, and then prints the state
//!   the test was waiting on.
//! * [`idle`] is for tests on the memory backend run with paused tokio time
//!   (`#[tokio::test(start_paused = true)]`, one thread): it returns once every task of the
//!   runtime is parked, so an assertion that something did NOT happen is made at a point where
//!   it provably would have happened if it were going to.
#![allow(clippy::disallowed_methods, reason = "test code")]

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a wait on observable state may take before the test counts as stuck.
pub const STUCK: Duration = Duration::from_secs(180);

/// How often the waits poll.
const POLL: Duration = Duration::from_millis(10);

/// Polls `cond` every 10 ms until it holds; after [`STUCK`] fails the test with `what` and the
/// state `state` reports then. Returns how long the wait took.
pub async fn until<S: Debug>(
    what: &str,
    mut cond: impl FnMut() -> bool,
    state: impl Fn() -> S,
) -> Duration {
    until_async(
        what,
        || std::future::ready(cond()),
        || std::future::ready(state()),
    )
    .await
}

/// [`until`] with a condition and a state report that need to await (store reads).
pub async fn until_async<S: Debug, C, F>(
    what: &str,
    mut cond: impl FnMut() -> C,
    state: impl Fn() -> F,
) -> Duration
where
    C: Future<Output = bool>,
    F: Future<Output = S>,
{
    let start = Instant::now();
    loop {
        if cond().await {
            return start.elapsed();
        }
        if start.elapsed() > STUCK {
            let state = state().await;
            panic!("stuck: {what} did not happen within {STUCK:?}; state: {state:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Polls `probe` until it returns `Some` and returns that; fails the test with `what` after
/// [`STUCK`].
pub async fn until_some<T, Fut>(what: &str, mut probe: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            start.elapsed() < STUCK,
            "stuck: {what} did not happen within {STUCK:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`until_some`] outside a runtime (blocking the thread between polls, every 50 ms: its
/// probe is often a process), with its own deadline `within`.
pub fn until_some_blocking<T>(
    what: &str,
    within: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(
            start.elapsed() < within,
            "stuck: {what} did not happen within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Under paused tokio time on a current-thread runtime, returns once no task is ready to run:
/// the runtime advances paused time to this sleep's end only when it has nothing else to do.
/// The runtime uses no tokio timer of its own while running (only the `Clock`), so with a
/// `ManualClock` and the memory backend (no threads of its own) "idle" means every poller,
/// session and lease loop is waiting for the clock or a wake-up.
pub async fn idle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}
