//! Every back-off of the runtime, named by what it is for: the numbers of a retry or an idle
//! poll are changed here. The policy type is [`taskhub_storage::backoff::Backoff`] (shared
//! with the backends); the waits go through the hub's [`Clock`](taskhub_storage::Clock).

use std::time::Duration;

use taskhub_storage::backoff::{Backoff, Jitter};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Committing an activity's result (and encoding it, when it falls back from an in-process
/// hand-over): 50 ms doubling to 5 s, until it succeeds or fails for good; the work item is
/// kept hidden meanwhile, so waiting long costs nothing but latency.
pub(crate) const ACTIVITY_RESULT: Backoff = Backoff::new(ms(50), Duration::from_secs(5));

/// A checkpoint that consumes messages without a turn (`turn::redeliver::commit`) and the
/// other short retries of a turn: a few quick tries (20, 80, 320 ms), then the caller's own
/// fallback (the messages come back after their visibility timeout).
pub(crate) const TURN_RETRY: Backoff = Backoff::new(ms(20), ms(320)).factor(4).attempts(4);

/// Opening a hub or starting a worker on a busy store: 50 ms doubling to 2 s, for
/// `startup_busy_timeout` (`limit`), with a last try at its end.
pub(crate) const fn startup(limit: Duration) -> Backoff {
    Backoff::new(ms(50), Duration::from_secs(2)).until(limit)
}

/// A client waiting for an instance to complete re-reads its row (for workers in other
/// processes) after 50 ms, doubling to 1 s; a completion in this process wakes it at once.
pub(crate) const COMPLETION_POLL: Backoff = Backoff::new(ms(50), Duration::from_secs(1));

/// Idle polling of a queue: 10 ms doubling to `cap` (a setting), each wait jittered to 75–100 %
/// of its step so idle workers do not poll in lockstep (see `worker::backoff`).
pub(crate) const fn queue_poll(cap: Duration) -> Backoff {
    let first = ms(10);
    let cap = if cap.as_nanos() < first.as_nanos() {
        first
    } else {
        cap
    };
    Backoff::new(first, cap).jitter(Jitter::UPPER_QUARTER)
}
