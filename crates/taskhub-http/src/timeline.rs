//! The timeline (Gantt) of one execution: its activities, timers and sub-orchestrations, each
//! with when it started and ended, from the history.

use std::collections::HashMap;

use serde::Serialize;
use taskhub::{EventKind, HistoryEvent};

/// One bar of the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineItem {
    /// `activity`, `timer` or `suborchestration`.
    pub kind: &'static str,
    /// The activity or orchestration name; for a timer, `timer`.
    pub name: String,
    /// The task ID correlating the scheduling with the completion.
    pub task_id: u64,
    /// When it was scheduled (Unix milliseconds).
    pub start_ms: u64,
    /// When it completed, failed or fired; `None` while it runs.
    pub end_ms: Option<u64>,
    /// For a timer: when it is due.
    pub due_ms: Option<u64>,
    /// `running`, `completed` or `failed` (a timer: `waiting` or `fired`).
    pub status: &'static str,
    /// For a sub-orchestration: its instance ID.
    pub instance_id: Option<String>,
}

/// The timeline of `events` (one execution's history), in scheduling order.
#[must_use]
pub fn timeline(events: &[HistoryEvent]) -> Vec<TimelineItem> {
    let mut items: Vec<TimelineItem> = Vec::new();
    // (kind, task id) -> index in items; a retried activity gets a bar per attempt.
    let mut open: HashMap<(&'static str, u64), usize> = HashMap::new();
    for e in events {
        let at = e.timestamp.as_millis();
        let mut begin = |kind: &'static str,
                         task_id: u64,
                         name: String,
                         due: Option<u64>,
                         sub: Option<String>| {
            open.insert((kind, task_id), items.len());
            items.push(TimelineItem {
                kind,
                name,
                task_id,
                start_ms: at,
                end_ms: None,
                due_ms: due,
                status: if kind == "timer" {
                    "waiting"
                } else {
                    "running"
                },
                instance_id: sub,
            });
        };
        match &e.event {
            EventKind::TaskScheduled { task_id, name, .. } => {
                begin("activity", *task_id, name.clone(), None, None);
            }
            EventKind::SubOrchestrationCreated {
                task_id,
                name,
                instance_id,
                ..
            } => begin(
                "suborchestration",
                *task_id,
                name.clone(),
                None,
                Some(instance_id.to_string()),
            ),
            EventKind::TimerCreated { task_id, fire_at } => begin(
                "timer",
                *task_id,
                "timer".to_owned(),
                Some(fire_at.as_millis()),
                None,
            ),
            other => {
                let end = match other {
                    EventKind::TaskCompleted { task_id, .. } => {
                        Some(("activity", *task_id, "completed"))
                    }
                    EventKind::TaskFailed { task_id, .. } => Some(("activity", *task_id, "failed")),
                    EventKind::SubOrchestrationCompleted { task_id, .. } => {
                        Some(("suborchestration", *task_id, "completed"))
                    }
                    EventKind::SubOrchestrationFailed { task_id, .. } => {
                        Some(("suborchestration", *task_id, "failed"))
                    }
                    EventKind::TimerFired { task_id, .. } => Some(("timer", *task_id, "fired")),
                    _ => None,
                };
                if let Some((kind, task_id, status)) = end {
                    if let Some(item) = open.remove(&(kind, task_id)).and_then(|i| items.get_mut(i))
                    {
                        item.end_ms = Some(at);
                        item.status = status;
                    }
                }
            }
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use taskhub::{FailureDetails, InstanceId, Payload, Timestamp};

    use super::*;

    fn ev(ms: u64, event: EventKind) -> HistoryEvent {
        HistoryEvent::new(Timestamp::from_millis(ms), event)
    }

    #[test]
    fn bars_open_at_scheduling_and_close_at_completion() {
        let events = vec![
            ev(0, EventKind::OrchestratorStarted),
            ev(
                1,
                EventKind::TaskScheduled {
                    task_id: 0,
                    name: "A".into(),
                    version: None,
                    input: Payload::null(),
                    attempt: 1,
                    tags: Default::default(),
                },
            ),
            ev(
                1,
                EventKind::TimerCreated {
                    task_id: 1,
                    fire_at: Timestamp::from_millis(500),
                },
            ),
            ev(
                2,
                EventKind::SubOrchestrationCreated {
                    task_id: 2,
                    name: "Child".into(),
                    version: None,
                    instance_id: InstanceId::new("c1").unwrap(),
                    input: Payload::null(),
                    tags: Default::default(),
                },
            ),
            ev(
                10,
                EventKind::TaskFailed {
                    task_id: 0,
                    failure: FailureDetails::new("E", "boom"),
                },
            ),
            ev(
                11,
                EventKind::TaskScheduled {
                    task_id: 3,
                    name: "A".into(),
                    version: None,
                    input: Payload::null(),
                    attempt: 2,
                    tags: Default::default(),
                },
            ),
            ev(
                20,
                EventKind::SubOrchestrationCompleted {
                    task_id: 2,
                    result: Payload::null(),
                },
            ),
            ev(
                501,
                EventKind::TimerFired {
                    task_id: 1,
                    fire_at: Timestamp::from_millis(500),
                },
            ),
        ];
        let t = timeline(&events);
        assert_eq!(t.len(), 4);
        assert_eq!(
            (t[0].kind, t[0].status, t[0].end_ms),
            ("activity", "failed", Some(10))
        );
        assert_eq!(
            (t[1].kind, t[1].status, t[1].end_ms, t[1].due_ms),
            ("timer", "fired", Some(501), Some(500))
        );
        assert_eq!(
            (t[2].status, t[2].instance_id.as_deref()),
            ("completed", Some("c1"))
        );
        assert_eq!(
            (t[3].start_ms, t[3].status, t[3].end_ms),
            (11, "running", None)
        );
    }
}
