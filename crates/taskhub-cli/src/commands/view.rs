//! How instances and history events are shown: a table row, a detail view, one line per
//! event, and JSON.

use serde_json::{json, Value};
use taskhub::client::suspend_reason;
use taskhub::{
    EventKind, ExecutionStatus, HistoryEvent, InstanceRow, OrchestrationStatus, Payload,
};

use crate::table::short;
use crate::timefmt;

/// The columns of `instances list`.
pub const LIST_HEADERS: [&str; 6] = [
    "INSTANCE",
    "ORCHESTRATION",
    "STATUS",
    "CREATED",
    "UPDATED",
    "OUTPUT",
];

/// One `instances list` row.
pub fn list_row(row: &InstanceRow) -> Vec<String> {
    let output = match (&row.output, &row.failure) {
        (_, Some(f)) => f.to_string(),
        _ if row.status == OrchestrationStatus::Suspended => suspend_reason(row)
            .map(|r| format!("suspended: {r}"))
            .unwrap_or_default(),
        (Some(p), None) => p.as_str().to_owned(),
        (None, None) => String::new(),
    };
    vec![
        row.instance_id.to_string(),
        row.name.clone(),
        row.status.to_string(),
        timefmt::format(row.created_at),
        timefmt::format(row.updated_at),
        short(&output, 40),
    ]
}

/// `instances show ID --execution EID` as text: one `field: value` line per field.
pub fn execution_text(e: &ExecutionStatus) -> String {
    let mut lines = vec![
        ("instance", e.instance_id.to_string()),
        ("orchestration", e.name.clone()),
        ("execution", e.execution_id.to_string()),
        (
            "status",
            if e.current {
                format!("{} (current execution)", e.status)
            } else {
                e.status.to_string()
            },
        ),
        ("input", e.input.to_string()),
    ];
    if let Some(p) = &e.output {
        lines.push(("output", p.to_string()));
    }
    if let Some(f) = &e.failure {
        lines.push(("failure", f.to_string()));
    }
    if let Some(p) = &e.custom_status {
        lines.push(("custom status", p.to_string()));
    }
    lines.push(("started", timefmt::format(e.started_at)));
    if let Some(t) = e.completed_at {
        lines.push(("completed", timefmt::format(t)));
    }
    field_lines(lines)
}

/// `instances show` as text: one `field: value` line per field.
pub fn show_text(row: &InstanceRow) -> String {
    let mut lines = vec![
        ("instance", row.instance_id.to_string()),
        ("orchestration", row.name.clone()),
    ];
    if let Some(v) = &row.version {
        lines.push(("version", v.clone()));
    }
    lines.push(("status", row.status.to_string()));
    lines.push(("execution", row.execution_id.to_string()));
    if let Some(last) = row.executions.last() {
        lines.push((
            "earlier",
            format!(
                "{} execution(s) kept, the last {} ({})",
                row.executions.len(),
                last.execution_id,
                last.status
            ),
        ));
    }
    if !row.tags.is_empty() {
        let tags: Vec<String> = row.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        lines.push(("tags", tags.join(", ")));
    }
    lines.push(("partition", row.partition.to_string()));
    lines.push(("input", row.input.to_string()));
    match (suspend_reason(row), &row.output) {
        (Some(reason), _) => lines.push(("suspended for", reason)),
        (None, Some(p)) if row.status != OrchestrationStatus::Suspended => {
            lines.push(("output", p.to_string()));
        }
        _ => {}
    }
    if let Some(f) = &row.failure {
        lines.push(("failure", f.to_string()));
        if let Some(d) = &f.details {
            lines.push(("details", d.clone()));
        }
    }
    if let Some(p) = &row.custom_status {
        lines.push(("custom status", p.to_string()));
    }
    lines.push(("created", timefmt::format(row.created_at)));
    lines.push(("updated", timefmt::format(row.updated_at)));
    if let Some(t) = row.completed_at {
        lines.push(("completed", timefmt::format(t)));
    }
    if let Some(t) = row.scheduled_start {
        lines.push(("scheduled start", timefmt::format(t)));
    }
    field_lines(lines)
}

/// `field: value` lines, the values aligned.
fn field_lines(lines: Vec<(&str, String)>) -> String {
    lines
        .into_iter()
        .map(|(k, v)| format!("{:<15} {v}\n", format!("{k}:")))
        .collect()
}

/// One history line: position, timestamp, description.
pub fn event_line(position: usize, event: &HistoryEvent) -> String {
    format!(
        "{position:>5}  {}  {}",
        timefmt::format(event.timestamp),
        describe(&event.event)
    )
}

/// A history event as JSON: its position, time, and the stored event.
pub fn event_json(position: usize, event: &HistoryEvent) -> Value {
    let stored = serde_json::to_value(event).unwrap_or(Value::Null);
    json!({
        "position": position,
        "timestamp": timefmt::format(event.timestamp),
        "description": describe(&event.event),
        "event": stored,
    })
}

/// A one-line description of an event with its most telling fields.
pub fn describe(event: &EventKind) -> String {
    // An SDK's payload that is not JSON is shown as its text.
    let p = |p: &Payload| {
        p.text()
            .map_or_else(|| "(none)".to_owned(), |t| short(t, 60))
    };
    match event {
        EventKind::ExecutionStarted {
            name,
            version,
            input,
            execution_id,
            parent,
            ..
        } => {
            let mut s = format!("ExecutionStarted '{name}'");
            if let Some(v) = version {
                s.push_str(&format!(" version {v}"));
            }
            s.push_str(&format!(" execution {execution_id} input {}", p(input)));
            if let Some(parent) = parent {
                s.push_str(&format!(" parent {}", parent.instance_id));
            }
            s
        }
        EventKind::ExecutionCompleted { result } => format!("ExecutionCompleted {}", p(result)),
        EventKind::ExecutionFailed { failure } => format!("ExecutionFailed {failure}"),
        EventKind::ExecutionTerminated { reason, .. } => format!("ExecutionTerminated: {reason}"),
        EventKind::ContinuedAsNew {
            input,
            carried_events,
            dropped_events,
            ..
        } => {
            let mut text = format!("ContinuedAsNew input {}", p(input));
            if !carried_events.is_empty() {
                text.push_str(&format!(", carried {} event(s)", carried_events.len()));
            }
            if !dropped_events.is_empty() {
                let names: Vec<&str> = dropped_events.iter().map(|e| e.name.as_str()).collect();
                text.push_str(&format!(", DROPPED {}", names.join(", ")));
            }
            text
        }
        EventKind::TaskScheduled {
            task_id,
            name,
            input,
            attempt,
            ..
        } => {
            let attempt = if *attempt > 1 {
                format!(" attempt {attempt}")
            } else {
                String::new()
            };
            format!(
                "TaskScheduled #{task_id} '{name}'{attempt} input {}",
                p(input)
            )
        }
        EventKind::TaskCompleted { task_id, result } => {
            format!("TaskCompleted #{task_id} {}", p(result))
        }
        EventKind::TaskFailed { task_id, failure } => format!("TaskFailed #{task_id} {failure}"),
        EventKind::SubOrchestrationCreated {
            task_id,
            name,
            instance_id,
            input,
            ..
        } => format!(
            "SubOrchestrationCreated #{task_id} '{name}' instance {instance_id} input {}",
            p(input)
        ),
        EventKind::SubOrchestrationCompleted { task_id, result } => {
            format!("SubOrchestrationCompleted #{task_id} {}", p(result))
        }
        EventKind::SubOrchestrationFailed { task_id, failure } => {
            format!("SubOrchestrationFailed #{task_id} {failure}")
        }
        EventKind::TimerCreated { task_id, fire_at } => {
            format!(
                "TimerCreated #{task_id} fires at {}",
                timefmt::format(*fire_at)
            )
        }
        EventKind::TimerFired { task_id, fire_at } => {
            format!("TimerFired #{task_id} (due {})", timefmt::format(*fire_at))
        }
        EventKind::EventRaised { name, input } => format!("EventRaised '{name}' {}", p(input)),
        EventKind::EventSent {
            task_id,
            instance_id,
            name,
            input,
        } => format!(
            "EventSent #{task_id} '{name}' to {instance_id} {}",
            p(input)
        ),
        EventKind::ExecutionSuspended { reason } => {
            format!("ExecutionSuspended{}", reason_suffix(reason.as_deref()))
        }
        EventKind::ExecutionResumed { reason } => {
            format!("ExecutionResumed{}", reason_suffix(reason.as_deref()))
        }
        EventKind::ExecutionRewound {
            reason,
            rewound_tasks,
        } => {
            let mut text = format!("ExecutionRewound{}", reason_suffix(reason.as_deref()));
            if !rewound_tasks.is_empty() {
                let ids: Vec<String> = rewound_tasks.iter().map(|t| format!("#{t}")).collect();
                text.push_str(&format!(" (rewound tasks {})", ids.join(", ")));
            }
            text
        }
        other => other.describe(),
    }
}

fn reason_suffix(reason: Option<&str>) -> String {
    reason.map(|r| format!(": {r}")).unwrap_or_default()
}
