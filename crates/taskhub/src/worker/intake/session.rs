//! One task per active instance: processes its batches in order and, with extended sessions,
//! keeps the orchestration in memory until it has been idle for the idle timeout, or until
//! newer idle sessions push it out (see [`idle`](crate::worker::shared::idle)), or until it has completed,
//! failed or been terminated: then it leaves at once.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{EntityId, InstanceId, Timestamp};

use crate::worker::orchestration::carry::START_WAIT;
use crate::worker::orchestration::{self, Cached};
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::sessions::Inbox;
use crate::worker::shared::Shared;

/// Runs the session of `instance`, starting with `first`.
pub(crate) async fn run(
    shared: Arc<Shared>,
    instance: InstanceId,
    first: Vec<Delivery>,
    mut rx: Inbox,
) {
    let settings = shared.hub.settings().clone();
    let clock = shared.hub.clock().clone();
    let mut cached = Cached::default();
    let mut batch = first;
    let mut stop = shared.lifecycle.stop.clone();
    // Timers fetched ahead of their time (`outbound::TIMER_LEAD`), processed when due; what
    // arrives meanwhile is processed as it comes, so an event that comes before a timer's
    // time still comes before the timer.
    let mut held: Vec<Delivery> = Vec::new();
    let entity = EntityId::is_entity_instance(&instance);
    // A batch for the next execution of an instance that continued as new, held until that
    // execution's start comes (at most `START_WAIT` from `awaiting_since`; see `turn::carry`).
    let mut awaiting: Vec<Delivery> = Vec::new();
    let mut awaiting_since: Option<Timestamp> = None;
    loop {
        // Join everything that arrived meanwhile into this batch.
        while let Ok(more) = rx.try_recv() {
            batch.extend(more);
        }
        if entity {
            crate::worker::entity::process(&shared, &instance, &mut cached, batch).await;
        } else {
            let (early, mut ready) = orchestration::hold_back(&shared, batch);
            held.extend(early);
            ready.extend(orchestration::take_due(&mut held, clock.now()));
            if !ready.is_empty() || !awaiting.is_empty() {
                // What waited for the next execution's start goes first: it arrived first.
                let mut input = std::mem::take(&mut awaiting);
                input.extend(ready);
                let now = clock.now();
                let may_hold = !shared.lifecycle.stopping()
                    && awaiting_since.is_none_or(|s| now.saturating_since(s) < START_WAIT);
                awaiting =
                    orchestration::process(&shared, &instance, &mut cached, input, may_hold).await;
                awaiting_since = if awaiting.is_empty() {
                    None
                } else {
                    Some(awaiting_since.unwrap_or(now))
                };
            }
        }
        // A completed, failed or terminated instance will not run again by itself: leave at
        // once rather than hold it in memory for the idle timeout, so memory does not grow
        // with the number of instances that finished recently.
        let finished = cached
            .session
            .as_ref()
            .is_some_and(|l| l.session.status().is_terminal());
        let keep = settings.extended_sessions_enabled && !finished;
        if !keep {
            cached = Cached::default();
        }
        let next = if let Ok(b) = rx.try_recv() {
            // More arrived during the turn: not idle at all (and no older idle session has to
            // leave for this one).
            Some(b)
        } else if let Some(wait) = next_wake(&held, awaiting_since, clock.now()) {
            // Timers or a batch awaiting a start are held: wait for the earliest or for more
            // messages, whichever is first.
            if shared.lifecycle.stopping() {
                orchestration::give_back(&shared, &held, Duration::ZERO).await;
                orchestration::give_back(&shared, &awaiting, Duration::ZERO).await;
                held.clear();
                awaiting.clear();
                awaiting_since = None;
                batch = Vec::new();
                continue;
            }
            tokio::select! {
                b = rx.recv() => match b {
                    Some(b) => Some(b),
                    None => {
                        clock.sleep(wait).await;
                        Some(Vec::new())
                    }
                },
                () = clock.sleep(wait) => Some(Vec::new()),
                _ = stop.changed() => Some(Vec::new()),
            }
        } else if keep && !shared.lifecycle.stopping() {
            let idle = clock.sleep(settings.extended_session_idle_timeout);
            let waiting = shared.sessions.idle.enter(&instance);
            let next = tokio::select! {
                b = rx.recv() => b,
                () = idle => None,
                () = waiting.evicted() => None,
                _ = stop.changed() => None,
            };
            shared.sessions.idle.leave(&waiting);
            next
        } else {
            None
        };

        match next {
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
