//! Metrics and traces of the runtime.
//!
//! * **Metrics** go through the [`metrics`] facade under the names in [`names`]; with no
//!   recorder installed they cost the facade's no-op. Install one (e.g.
//!   `metrics-exporter-prometheus`, as `taskhub serve` and `taskhub worker --http` do, rendered
//!   at `/metrics`) to collect them; queue depths are sampled only once
//!   [`set_queue_sampling`] turns it on (they cost storage calls), always or only while
//!   someone looks ([`watched`]). Storage calls and errors
//!   by operation are counted by [`Instrumented`](taskhub_storage::Instrumented): wrap the
//!   store in it.
//! * **Traces**: `tracing` spans per orchestration turn, activity run and fired timer, named as
//!   in DTFx, carrying their W3C trace context across queues in each message's `traceparent`
//!   (see [`spans`](self#traces) and [`TraceContext`]).
//!
//! # Traces
//!
//! Each span has the fields `otel.name` (`orchestration||{name}`, `activity||{name}`,
//! `timer`), `durabletask.type`, `durabletask.task.name`, `durabletask.task.instance_id`,
//! `durabletask.task.execution_id`, `durabletask.task.task_id` (activities and timers),
//! `taskhub.partition`, `taskhub.epoch`, and `trace_id`, `span_id`, `parent_span_id` (hex).
//! A turn's parent is the span that sent the message that woke it (its start, an activity's
//! result, a timer, a sub-orchestration's result); a turn woken only by messages without a
//! context is a root span in the trace whose ID is its execution ID.

pub mod names;
pub(crate) mod record;
pub(crate) mod sampling;
pub(crate) mod spans;
mod trace_context;

pub(crate) use sampling::sample;
pub use sampling::{
    enable_queue_sampling, queue_sampling, queue_sampling_enabled, set_queue_sampling, watched,
    QueueSampling, WATCH_WINDOW,
};
pub use trace_context::TraceContext;
