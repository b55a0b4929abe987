//! The trace of one orchestration turn: its parent (the span that sent the message that woke
//! it), its own context (sent along in every message the turn sends), its span, and the
//! `timer` spans of the timers it saw fire.

use std::collections::HashSet;

use taskhub_core::LogLevel;
use taskhub_core::{
    EventKind, ExecutionId, InstanceId, Message, MessageId, OrchestrationSession, TurnResult,
};
use tracing::{debug, error, info, warn, Span};

use crate::telemetry::spans::{self, Place, TimerSpan, TurnSpan};
use crate::telemetry::TraceContext;
use crate::worker::shared::delivery::Delivery;

/// What the trace of a turn is made from.
pub(crate) struct TurnTraceRequest<'a> {
    pub session: &'a OrchestrationSession,
    pub instance: &'a InstanceId,
    pub messages: &'a [&'a Message],
    pub partition: u32,
    pub epoch: Option<u64>,
}

/// The trace of one turn.
pub(crate) struct TurnTrace {
    pub span: Span,
    /// The turn's context as a `traceparent`, for the messages it sends.
    pub traceparent: String,
    /// The orchestration's name.
    pub name: String,
    instance: InstanceId,
    execution: ExecutionId,
    place: Place,
    context: TraceContext,
}

impl TurnTrace {
    /// The turn's parent is the first context among its messages (a start first), else the
    /// context the execution was started under (kept in its `ExecutionStarted`, so also after
    /// a reload), else the execution's own trace ([`TraceContext::of_execution`]).
    pub(crate) fn new(r: TurnTraceRequest<'_>) -> Self {
        let start = r.messages.iter().find_map(|m| match &m.event {
            EventKind::ExecutionStarted {
                name, execution_id, ..
            } => Some((m, name, execution_id)),
            _ => None,
        });
        let mut name = r.session.name();
        let mut execution = r.session.execution_id();
        if let Some((_, n, e)) = start {
            if name.is_empty() {
                name.clone_from(n);
                execution = e.clone();
            }
        }
        let parent = start
            .map(|(m, _, _)| *m)
            .into_iter()
            .chain(r.messages.iter().copied())
            .find_map(|m| m.traceparent.as_deref().and_then(TraceContext::parse))
            .or_else(|| r.session.start_trace().and_then(TraceContext::parse))
            .unwrap_or_else(|| TraceContext::of_execution(&execution));
        let context = parent.child();
        let place = Place {
            partition: r.partition,
            epoch: r.epoch,
        };
        let span = spans::orchestration(&TurnSpan {
            name: &name,
            instance: r.instance,
            execution: &execution,
            place,
            parent,
            context,
        });
        Self {
            span,
            traceparent: context.traceparent(),
            name,
            instance: r.instance.clone(),
            execution,
            place,
            context,
        }
    }

    /// A `timer` span for each timer of `batch` the turn applied, under the turn that set it
    /// (the timer message's context), else under this turn.
    pub(crate) fn timers_fired(&self, batch: &[Delivery], result: &TurnResult) {
        let discarded: HashSet<&MessageId> =
            result.discarded.iter().map(|d| &d.message_id).collect();
        for d in batch {
            let EventKind::TimerFired { task_id, fire_at } = &d.message.event else {
                continue;
            };
            if discarded.contains(&d.message.id) {
                continue;
            }
            let parent = d
                .message
                .traceparent
                .as_deref()
                .and_then(TraceContext::parse)
                .unwrap_or(self.context);
            spans::timer(&TimerSpan {
                orchestration: &self.name,
                instance: &self.instance,
                execution: &self.execution,
                task_id: *task_id,
                fire_at: *fire_at,
                place: self.place,
                parent,
            });
        }
    }
}

/// Emits the turn's replay-safe log lines as `tracing` events (target `taskhub::orchestration`).
pub(super) fn emit_logs(instance: &InstanceId, r: &TurnResult) {
    for line in &r.logs {
        match line.level {
            LogLevel::Debug => {
                debug!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
            LogLevel::Info => {
                info!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
            LogLevel::Warn => {
                warn!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
            LogLevel::Error => {
                error!(target: "taskhub::orchestration", %instance, "{}", line.message)
            }
        }
    }
}
