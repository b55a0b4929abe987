//! One task per active instance: joins the batches that arrive while it works and hands each
//! to the entity stage (an `@name@key` instance) or the orchestration stage, in order. It holds
//! timers that came ahead of their time (`TIMER_LEAD` early; each trades its buffer slot for
//! one of `slots::MAX_HELD_TIMERS`) and runs them when due, processing what arrives meanwhile
//! first, and holds a batch that came for the next execution before its start (see
//! `orchestration::carry`). With extended sessions it keeps the orchestration in memory until
//! it has been idle for the idle timeout, or until newer idle sessions push it out (see
//! [`idle`](crate::worker::shared::idle)), or until it has completed, failed or been
//! terminated: then it leaves at once.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{EntityId, InstanceId, Timestamp};
use tokio::sync::watch;

use crate::worker::orchestration::carry::START_WAIT;
use crate::worker::orchestration::{self, Cached};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::sessions::Inbox;
use crate::worker::shared::Shared;

/// What a session holds between batches.
struct Held {
    cached: Cached,
    /// Timers fetched ahead of their time (`outbound::TIMER_LEAD`), processed when due; what
    /// arrives meanwhile is processed as it comes, so an event that comes before a timer's
    /// time still comes before the timer.
    timers: Vec<Delivery>,
    /// A batch for the next execution of an instance that continued as new, held until that
    /// execution's start comes (at most `START_WAIT` from `awaiting_since`; see
    /// `orchestration::carry`).
    awaiting: Vec<Delivery>,
    awaiting_since: Option<Timestamp>,
    /// The worker's stop signal, as this session has seen it.
    stop: watch::Receiver<bool>,
}

/// Runs the session of `instance`, starting with `first`.
pub(crate) async fn run(
    shared: Arc<Shared>,
    instance: InstanceId,
    first: Vec<Delivery>,
    mut rx: Inbox,
) {
    let mut held = Held {
        cached: Cached::default(),
        timers: Vec::new(),
        awaiting: Vec::new(),
        awaiting_since: None,
        stop: shared.lifecycle.stop.clone(),
    };
    let mut batch = first;
    loop {
        // Join everything that arrived meanwhile into this batch.
        while let Ok(more) = rx.try_recv() {
            batch.extend(more);
        }
        process(&shared, &instance, &mut held, batch).await;
        // A completed, failed or terminated instance will not run again by itself: leave at
        // once rather than hold it in memory for the idle timeout, so memory does not grow
        // with the number of instances that finished recently.
        let finished = held
            .cached
            .session
            .as_ref()
            .is_some_and(|l| l.session.status().is_terminal());
        let keep = shared.hub.settings().extended_sessions_enabled && !finished;
        if !keep {
            held.cached = Cached::default();
        }
        match next(&shared, &instance, &mut held, &mut rx, keep).await {
            Some(b) => batch = b,
            None => {
                // Leave only if nothing raced in: the dispatcher sends under the same lock.
                match shared.sessions.leave(&instance, &mut rx) {
                    Some(b) => batch = b,
                    None => return,
                }
            }
        }
    }
}

/// Hands a batch to the entity stage, or to the orchestration stage once its timers are due
/// (with what waited for the next execution's start first: it arrived first).
async fn process(
    shared: &Arc<Shared>,
    instance: &InstanceId,
    held: &mut Held,
    batch: Vec<Delivery>,
) {
    if EntityId::is_entity_instance(instance) {
        crate::worker::entity::process(shared, instance, &mut held.cached, batch).await;
        return;
    }
    let clock = shared.hub.clock();
    let (early, mut ready) = orchestration::hold_back(shared, batch);
    held.timers.extend(early);
    ready.extend(orchestration::take_due(&mut held.timers, clock.now()));
    if ready.is_empty() && held.awaiting.is_empty() {
        return;
    }
    let mut input = std::mem::take(&mut held.awaiting);
    input.extend(ready);
    let now = clock.now();
    let may_hold = !shared.lifecycle.stopping()
        && held
            .awaiting_since
            .is_none_or(|s| now.saturating_since(s) < START_WAIT);
    held.awaiting =
        orchestration::process(shared, instance, &mut held.cached, input, may_hold).await;
    held.awaiting_since = if held.awaiting.is_empty() {
        None
    } else {
        Some(held.awaiting_since.unwrap_or(now))
    };
}

/// Waits for the session's next batch: what arrived during the turn, or (when timers or a
/// batch awaiting its start are held) the earliest of those or more messages, or (kept in
/// memory, `keep`) more messages within the idle timeout. `None`: the session may leave.
async fn next(
    shared: &Shared,
    instance: &InstanceId,
    held: &mut Held,
    rx: &mut Inbox,
    keep: bool,
) -> Option<Vec<Delivery>> {
    let clock = shared.hub.clock();
    if let Ok(b) = rx.try_recv() {
        // More arrived during the turn: not idle at all (and no older idle session has to
        // leave for this one).
        return Some(b);
    }
    if let Some(wait) = next_wake(&held.timers, held.awaiting_since, clock.now()) {
        // Timers or a batch awaiting a start are held: wait for the earliest or for more
        // messages, whichever is first.
        if shared.lifecycle.stopping() {
            orchestration::give_back(shared.returns(), &held.timers, Duration::ZERO).await;
            orchestration::give_back(shared.returns(), &held.awaiting, Duration::ZERO).await;
            held.timers.clear();
            held.awaiting.clear();
            held.awaiting_since = None;
            return Some(Vec::new());
        }
        return tokio::select! {
            b = rx.recv() => match b {
                Some(b) => Some(b),
                None => {
                    clock.sleep(wait).await;
                    Some(Vec::new())
                }
            },
            () = clock.sleep(wait) => Some(Vec::new()),
            _ = held.stop.changed() => Some(Vec::new()),
        };
    }
    if !keep || shared.lifecycle.stopping() {
        return None;
    }
    let idle = clock.sleep(shared.hub.settings().extended_session_idle_timeout);
    let waiting = shared.sessions.idle.enter(instance);
    let next = tokio::select! {
        b = rx.recv() => b,
        () = idle => None,
        () = waiting.evicted() => None,
        _ = held.stop.changed() => None,
    };
    shared.sessions.idle.leave(&waiting);
    next
}

/// How long until the session must look at what it holds: the earliest held timer, or the end
/// of a held batch's wait for its start (`None`: nothing held).
fn next_wake(
    held: &[Delivery],
    awaiting_since: Option<Timestamp>,
    now: Timestamp,
) -> Option<Duration> {
    let awaiting = awaiting_since.map(|s| START_WAIT.saturating_sub(now.saturating_since(s)));
    match (orchestration::next_due(held, now), awaiting) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
