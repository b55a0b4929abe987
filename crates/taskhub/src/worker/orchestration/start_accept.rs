//! Start acceptance: which `ExecutionStarted` messages may begin a new execution, judged on
//! the instance row and the execution whose history is loaded (pure; the turn reads the row
//! and acts on the verdict).

use std::time::Duration;

use taskhub_core::{EventKind, ExecutionId, Message, OrchestrationStatus, Timestamp};
use taskhub_storage::InstanceRow;

use crate::rows;
use crate::worker::shared::outbound::TIMER_LEAD;

/// The execution a start message begins (`None` for any other message).
pub(super) fn start_execution(m: &Message) -> Option<ExecutionId> {
    match &m.event {
        EventKind::ExecutionStarted { execution_id, .. } => Some(execution_id.clone()),
        _ => None,
    }
}

/// The delay after which a start that came before its scheduled time is looked at again, or
/// `None` when it is due (at most [`TIMER_LEAD`] ahead). A start scheduled further ahead than
/// the backend's longest message delay is sent with that delay (`client::start`) and comes
/// early: it goes round again, each hop at most `max_delay`, until its time, as a long timer
/// does.
pub(super) fn early_start(m: &Message, now: Timestamp, max_delay: Duration) -> Option<Duration> {
    let EventKind::ExecutionStarted {
        scheduled_start: Some(at),
        ..
    } = &m.event
    else {
        return None;
    };
    let ahead = at.saturating_since(now);
    (ahead > TIMER_LEAD).then(|| ahead.min(max_delay))
}

/// What a turn does with an `ExecutionStarted` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It begins a new execution.
    Accept,
    /// It never will: a duplicate, a start ended before it ran, an instance in use.
    Refuse,
    /// Not yet: a client's start of a new execution of an instance whose row still shows an
    /// earlier, finished execution. A client start sends its message before it writes its
    /// Pending row (a backend without transactions orders a checkpoint that way), so a worker
    /// can take the message first; the message waits, uncounted, for the row to catch up (see
    /// `redeliver::defer_start`), and is refused only once it is older than that grace (the
    /// client's row write lost a race, and its retry sent a start of another execution).
    Defer,
}

/// May this `ExecutionStarted` begin a new execution, given the instance row and the
/// execution whose history is stored (`loaded`)?
///
/// A start of the execution that history already holds is a redelivered duplicate, even when
/// that execution has finished and the row still names it: accepting it would run the
/// finished execution again from scratch (and wait forever for events it already consumed).
///
/// A client may end a start that is scheduled in the future before it is delivered: a row of
/// this execution that is Terminated or Suspended although the execution never ran (it is not
/// the loaded one), or no row at all for a delayed client start (purged), refuses it. A resume
/// sends a fresh start.
pub(super) fn judge_start(
    row: Option<&InstanceRow>,
    loaded: Option<&ExecutionId>,
    m: &Message,
) -> Verdict {
    let verdict = |accept: bool| {
        if accept {
            Verdict::Accept
        } else {
            Verdict::Refuse
        }
    };
    let Some(execution) = start_execution(m) else {
        return Verdict::Refuse;
    };
    if loaded == Some(&execution) {
        return Verdict::Refuse;
    }
    match row {
        None => verdict(!rows::is_delayed_client_start(m)),
        Some(r) if r.execution_id == execution => {
            verdict(!(r.status.is_terminal() || r.status == OrchestrationStatus::Suspended))
        }
        Some(r)
            if r.status == OrchestrationStatus::ContinuedAsNew
                && r.execution_id.next_generation() == execution =>
        {
            Verdict::Accept
        }
        Some(r) if m.sender.is_some() => match r.status {
            // Only the next generation starts after a continue-as-new.
            OrchestrationStatus::ContinuedAsNew => Verdict::Refuse,
            // A parent restarting a finished child with an explicit instance ID.
            status => verdict(status.is_terminal()),
        },
        // A client's start of another execution: a restart, a reuse of a finished ID, or a
        // `TerminateActive` start over an active one (its terminate may not have been applied
        // yet: queues keep no order). Its Pending row has not landed yet, or its row write
        // lost a race and the client started again with another execution: it waits for its
        // row, and is refused only once it has waited the grace.
        Some(_) => Verdict::Defer,
    }
}

#[cfg(test)]
mod tests {
    use taskhub_core::{InstanceId, Payload, Sender, Timestamp};

    use super::*;

    fn eid(id: &str) -> ExecutionId {
        ExecutionId::new(id).unwrap()
    }

    fn start(execution: &ExecutionId, scheduled: Option<u64>, from_parent: bool) -> Message {
        let mut m = Message::from_client(
            InstanceId::new("i").unwrap(),
            EventKind::ExecutionStarted {
                name: "O".to_owned(),
                version: None,
                input: Payload::null(),
                execution_id: execution.clone(),
                parent: None,
                scheduled_start: scheduled.map(Timestamp::from_millis),
                applied_event_ids: Vec::new(),
                tags: Default::default(),
            },
            Timestamp::from_millis(1_000),
        );
        if from_parent {
            m.sender = Some(Sender {
                instance_id: InstanceId::new("parent").unwrap(),
                execution_id: eid("p-1"),
            });
        }
        m
    }

    fn row(execution: &ExecutionId, status: OrchestrationStatus) -> InstanceRow {
        crate::worker::orchestration::fixtures::row("i", execution.as_str(), status)
    }

    #[test]
    fn a_start_before_its_time_goes_round_again_at_most_the_longest_delay_a_hop() {
        let week = Duration::from_secs(7 * 24 * 3600);
        let e1 = eid("e-1");
        let now = Timestamp::from_millis(1_000);
        // A year ahead: one hop of the longest delay.
        let year = 365 * 24 * 3600 * 1_000;
        assert_eq!(
            early_start(&start(&e1, Some(year), false), now, week),
            Some(week)
        );
        // An hour ahead: the rest of the hour.
        assert_eq!(
            early_start(&start(&e1, Some(1_000 + 3_600_000), false), now, week),
            Some(Duration::from_secs(3_600))
        );
        // Due, within the lead, or unscheduled: it starts.
        for due in [None, Some(900), Some(1_000), Some(1_040)] {
            assert_eq!(
                early_start(&start(&e1, due, false), now, week),
                None,
                "{due:?}"
            );
        }
    }

    /// A start judged: the verdict it must get, on the row, with the execution loaded.
    type Case<'a> = (
        Verdict,
        Option<InstanceRow>,
        Option<&'a ExecutionId>,
        &'a Message,
    );

    fn assert_judged(cases: &[Case<'_>]) {
        for (i, (verdict, row, loaded, m)) in cases.iter().enumerate() {
            let status = row.as_ref().map(|r| r.status);
            let judged = judge_start(row.as_ref(), *loaded, m);
            assert_eq!(*verdict, judged, "case {i} (row: {status:?})");
        }
    }

    #[test]
    fn starts_of_this_execution_are_judged_on_the_row_and_the_loaded_execution() {
        use OrchestrationStatus::*;
        use Verdict::*;
        let e1 = eid("e-1");
        let now = start(&e1, None, false);
        assert_eq!(start_execution(&now), Some(e1.clone()));
        let delayed = start(&e1, Some(5_000), false);
        assert_judged(&[
            // A redelivered start of the loaded execution is a duplicate, whatever the row says.
            (Refuse, Some(row(&e1, Running)), Some(&e1), &now),
            (Refuse, None, Some(&e1), &now),
            // No row: accepted, unless a delayed client start (purged before it ran).
            (Accept, None, None, &now),
            (Refuse, None, None, &delayed),
            // The row of this execution: accepted unless ended or suspended before it ran.
            (Accept, Some(row(&e1, Pending)), None, &now),
            (Refuse, Some(row(&e1, Terminated)), None, &now),
            (Refuse, Some(row(&e1, Suspended)), None, &now),
        ]);
    }

    #[test]
    fn starts_after_another_execution_are_judged_on_its_row() {
        use OrchestrationStatus::*;
        use Verdict::*;
        let (e1, e2) = (eid("e-1"), eid("e-2"));
        let now = start(&e1, None, false);
        let parent = start(&e1, None, true);
        let next = start(&e2.next_generation(), None, false);
        let mut cases = vec![
            // After continue-as-new only the next generation's start.
            (Accept, Some(row(&e2, ContinuedAsNew)), Some(&e2), &next),
            // Another client start after a continue-as-new waits for its own row, as below; a
            // parent's start of another generation is refused.
            (Defer, Some(row(&e2, ContinuedAsNew)), Some(&e2), &now),
            (Refuse, Some(row(&e2, ContinuedAsNew)), Some(&e2), &parent),
            // Another execution's finished row: a client's restart waits for its own row to
            // land; a parent restarting its child begins at once.
            (Defer, Some(row(&e2, Completed)), Some(&e2), &now),
            (Defer, Some(row(&e2, Terminated)), None, &now),
            (Accept, Some(row(&e2, Completed)), Some(&e2), &parent),
            (Refuse, Some(row(&e2, Running)), Some(&e2), &parent),
        ];
        // Another execution's active row: a TerminateActive start taken before its terminate
        // was applied (queues keep no order), or a start whose row write lost a race, waits
        // for its row too (refused only after the grace).
        for status in [Running, Pending, Suspended] {
            cases.push((Defer, Some(row(&e2, status)), Some(&e2), &now));
        }
        assert_judged(&cases);
        // Not a start at all.
        let mut other = now.clone();
        other.event = EventKind::OrchestratorStarted;
        assert_eq!(start_execution(&other), None);
        assert_eq!(Verdict::Refuse, judge_start(None, None, &other));
    }
}
