//! An executor call waiting for its work item's answer: until a worker answers, the item is
//! held past its timeout, it waits too long with no worker connected, or the call's future
//! is dropped (which withdraws the item).

use std::time::Duration;

use taskhub::executor::ExecutorError;
use tokio::sync::oneshot;

use super::state::{Kind, Reply, Standing};
use super::Inner;

/// Withdraws the item when the waiting future is dropped before its answer.
struct Withdraw<'a> {
    inner: &'a Inner,
    id: u64,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.armed {
            let now = self.inner.clock.monotonic();
            self.inner.lock().withdraw(self.id, now);
        }
    }
}

/// What the wait does next.
enum Next {
    Sleep(Duration),
    Fail(ExecutorError),
}

/// Waits for item `id`'s answer on `rx` (submitted at monotonic time `submitted`).
pub(super) async fn answer(
    inner: &Inner,
    kind: Kind,
    id: u64,
    submitted: Duration,
    mut rx: oneshot::Receiver<Reply>,
    what: &(dyn Fn() -> String + Sync),
) -> Result<Reply, ExecutorError> {
    let mut guard = Withdraw {
        inner,
        id,
        armed: true,
    };
    loop {
        let next = next_step(inner, kind, id, submitted, what);
        let pause = match next {
            Next::Sleep(d) => d,
            Next::Fail(e) => {
                // `guard` withdraws the item on the way out.
                return Err(e);
            }
        };
        tokio::select! {
            reply = &mut rx => {
                guard.armed = false;
                return reply.map_err(|_| ExecutorError::Abandoned {
                    what: what(),
                    reason: "the gRPC endpoint is closing".into(),
                });
            }
            () = inner.clock.sleep(pause) => {}
        }
    }
}

/// Checks the item's deadlines: fails it if one passed, else says how long to sleep before
/// looking again.
fn next_step(
    inner: &Inner,
    kind: Kind,
    id: u64,
    submitted: Duration,
    what: &(dyn Fn() -> String + Sync),
) -> Next {
    let s = &inner.settings;
    let now = inner.clock.monotonic();
    let standing = inner.lock().standing(id);
    // The deadline, and whether passing it is a timeout (else: no worker came).
    let (deadline, timed_out) = match standing {
        Standing::Held { since } => (since.saturating_add(hold_limit(s, kind)), true),
        Standing::Queued {
            idle_since: Some(since),
            ..
        } => (since.saturating_add(s.no_worker_wait), false),
        // Given back before and waiting for room: the runtime's own limit (counted) applies.
        Standing::Queued {
            idle_since: None,
            given_back: true,
        } => return Next::Sleep(s.no_worker_wait),
        // Workers are connected but none has room: wait up to `busy_wait`, then the work
        // goes back to its queue uncounted (a worker may also go away meanwhile).
        Standing::Queued {
            idle_since: None,
            given_back: false,
        } => {
            let give_up = submitted.saturating_add(s.busy_wait);
            if now >= give_up {
                return Next::Fail(ExecutorError::Busy {
                    what: what(),
                    why: format!(
                        "the connected SDK workers had no room for it within {}s (`grpc_busy_wait`)",
                        s.busy_wait.as_secs()
                    ),
                });
            }
            return Next::Sleep(give_up.saturating_sub(now).min(s.no_worker_wait));
        }
        // The answer is on its way (or the endpoint closed): the channel tells.
        Standing::Gone => return Next::Sleep(s.no_worker_wait),
    };
    if now < deadline {
        // Never longer than `no_worker_wait`: the item may go back to the queue meanwhile.
        return Next::Sleep(deadline.saturating_sub(now).min(s.no_worker_wait));
    }
    // The error (and the name of the work in it) is built only now, off the hot path.
    Next::Fail(if timed_out {
        ExecutorError::TimedOut {
            what: what(),
            seconds: hold_limit(s, kind).as_secs(),
        }
    } else {
        ExecutorError::Unavailable { what: what() }
    })
}

/// How long a worker may hold an item of `kind`.
fn hold_limit(s: &super::DispatcherSettings, kind: Kind) -> Duration {
    match kind {
        Kind::Orchestration => s.orchestration_timeout,
        Kind::Activity => s.activity_timeout,
        Kind::Entity => s.entity_timeout,
    }
}
