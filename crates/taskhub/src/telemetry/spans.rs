//! The runtime's `tracing` spans, named and attributed like DTFx's: `orchestration||{name}`
//! per turn, `activity||{name}` per activity run, `timer` per fired durable timer.
//!
//! A `tracing` span's name is static, so the span is named `orchestration`, `activity` or
//! `timer` and carries the DTFx name in `otel.name` (the field OpenTelemetry bridges use as
//! the span name). Each span also carries its place in the trace as fields: `trace_id`,
//! `span_id` and `parent_span_id` (hex; `parent_span_id` is empty for a root span). The
//! runtime owns those IDs ([`TraceContext`]) and sends them along in queue messages, so a
//! subscriber (the CLI's OTLP exporter, or a test layer) rebuilds one trace per
//! orchestration: its turns, its activities, its timers and its sub-orchestrations' turns.
//! The spans are created with no `tracing` parent: the trace fields are the tree.

use taskhub_core::{ExecutionId, InstanceId, Timestamp};
use tracing::Span;

use super::TraceContext;

/// Where a span runs: the partition and its lease epoch (`None` for activities, which run
/// outside partitions).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub partition: u32,
    pub epoch: Option<u64>,
}

/// What an orchestration turn's span names.
pub(crate) struct TurnSpan<'a> {
    pub name: &'a str,
    pub instance: &'a InstanceId,
    pub execution: &'a ExecutionId,
    pub place: Place,
    pub parent: TraceContext,
    pub context: TraceContext,
}

fn parent_hex(parent: &TraceContext) -> String {
    if parent.span_id == 0 {
        String::new()
    } else {
        parent.span_id_hex()
    }
}

/// The span of one orchestration turn.
pub(crate) fn orchestration(t: &TurnSpan<'_>) -> Span {
    tracing::info_span!(
        parent: None,
        "orchestration",
        otel.name = %format_args!("orchestration||{}", t.name),
        otel.kind = "server",
        durabletask.type = "orchestration",
        durabletask.task.name = %t.name,
        durabletask.task.instance_id = %t.instance,
        durabletask.task.execution_id = %t.execution,
        taskhub.partition = t.place.partition,
        taskhub.epoch = t.place.epoch,
        trace_id = %t.context.trace_id_hex(),
        span_id = %t.context.span_id_hex(),
        parent_span_id = %parent_hex(&t.parent),
    )
}

/// What an activity run's span names.
pub(crate) struct ActivitySpan<'a> {
    pub name: &'a str,
    pub instance: &'a InstanceId,
    pub execution: &'a ExecutionId,
    pub task_id: u64,
    pub place: Place,
    pub parent: TraceContext,
    pub context: TraceContext,
}

/// The span of one activity run.
pub(crate) fn activity(a: &ActivitySpan<'_>) -> Span {
    tracing::info_span!(
        parent: None,
        "activity",
        otel.name = %format_args!("activity||{}", a.name),
        otel.kind = "server",
        durabletask.type = "activity",
        durabletask.task.name = %a.name,
        durabletask.task.instance_id = %a.instance,
        durabletask.task.execution_id = %a.execution,
        durabletask.task.task_id = a.task_id,
        taskhub.partition = a.place.partition,
        taskhub.epoch = a.place.epoch,
        trace_id = %a.context.trace_id_hex(),
        span_id = %a.context.span_id_hex(),
        parent_span_id = %parent_hex(&a.parent),
    )
}

/// What a fired timer's span names.
pub(crate) struct TimerSpan<'a> {
    pub orchestration: &'a str,
    pub instance: &'a InstanceId,
    pub execution: &'a ExecutionId,
    pub task_id: u64,
    pub fire_at: Timestamp,
    pub place: Place,
    pub parent: TraceContext,
}

/// A span marking a durable timer that fired (closed at once).
pub(crate) fn timer(t: &TimerSpan<'_>) {
    let context = t.parent.child();
    let span = tracing::info_span!(
        parent: None,
        "timer",
        otel.name = "timer",
        otel.kind = "internal",
        durabletask.type = "timer",
        durabletask.task.name = %t.orchestration,
        durabletask.task.instance_id = %t.instance,
        durabletask.task.execution_id = %t.execution,
        durabletask.task.task_id = t.task_id,
        durabletask.fire_at = %t.fire_at,
        taskhub.partition = t.place.partition,
        taskhub.epoch = t.place.epoch,
        trace_id = %context.trace_id_hex(),
        span_id = %context.span_id_hex(),
        parent_span_id = %parent_hex(&t.parent),
    );
    drop(span);
}

/// What a rewind's span names.
pub(crate) struct RewindSpan<'a> {
    pub name: &'a str,
    pub instance: &'a InstanceId,
    pub execution: &'a ExecutionId,
    pub reason: Option<&'a str>,
    pub rewound_tasks: &'a [u64],
    pub reopened: usize,
    pub children: usize,
}

/// A span marking a failed execution loaded rewound by its worker (closed at once; the turn
/// that applies the rewind has its own `orchestration` span).
pub(crate) fn rewind(r: &RewindSpan<'_>) {
    let context = TraceContext::new_root();
    let span = tracing::info_span!(
        parent: None,
        "rewind",
        otel.name = %format_args!("rewind||{}", r.name),
        otel.kind = "internal",
        durabletask.type = "orchestration",
        durabletask.task.name = %r.name,
        durabletask.task.instance_id = %r.instance,
        durabletask.task.execution_id = %r.execution,
        taskhub.rewind.reason = r.reason.unwrap_or_default(),
        taskhub.rewind.tasks = ?r.rewound_tasks,
        taskhub.rewind.reopened = r.reopened,
        taskhub.rewind.children = r.children,
        trace_id = %context.trace_id_hex(),
        span_id = %context.span_id_hex(),
        parent_span_id = "",
    );
    drop(span);
}
