//! OTLP export of the runtime's spans (cargo feature `otlp`, setting `otlp_endpoint`).
//!
//! The runtime names its spans' places in their trace itself (fields `trace_id`, `span_id`,
//! `parent_span_id`, carried across queues in each message's `traceparent`), so this layer
//! does not need a `tracing`-to-OpenTelemetry context bridge: when a span with those fields
//! closes, it builds the OpenTelemetry span with the same IDs, its start and end times, the
//! name in `otel.name` and the other fields as attributes, and hands it to the SDK's batch
//! exporter (OTLP over HTTP/protobuf to `{otlp_endpoint}/v1/traces`).

use std::time::SystemTime;

use anyhow::Context as _;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::Context as LayerContext;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The exporter's provider: flush it with [`Otlp::shutdown`] before the process exits.
pub struct Otlp {
    provider: SdkTracerProvider,
}

impl Otlp {
    /// Starts exporting to `endpoint` (an OTLP/HTTP collector's base URL); returns the
    /// provider and the layer to add to the subscriber. Call it outside a Tokio runtime.
    pub fn start(endpoint: &str) -> anyhow::Result<(Self, OtlpLayer)> {
        let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(url.clone())
            .build()
            .with_context(|| format!("cannot set up the OTLP exporter to {url} (otlp_endpoint)"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("taskhub").build())
            .build();
        let layer = OtlpLayer::new(provider.tracer("taskhub"));
        Ok((Self { provider }, layer))
    }

    /// Sends what is still buffered and stops.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: the OTLP exporter did not shut down cleanly: {e}");
        }
    }
}

/// A `tracing` layer that turns the runtime's spans into OpenTelemetry spans.
pub struct OtlpLayer {
    tracer: SdkTracer,
}

impl OtlpLayer {
    /// A layer that starts its spans on `tracer`.
    pub fn new(tracer: SdkTracer) -> Self {
        Self { tracer }
    }
}

/// A span being recorded, kept in the span's extensions until it closes.
struct Pending {
    name: String,
    kind: SpanKind,
    trace_id: u128,
    span_id: u64,
    parent_span_id: Option<u64>,
    start: SystemTime,
    attributes: Vec<KeyValue>,
}

#[derive(Default)]
struct Fields {
    name: Option<String>,
    kind: Option<SpanKind>,
    trace_id: Option<u128>,
    span_id: Option<u64>,
    parent_span_id: Option<u64>,
    attributes: Vec<KeyValue>,
}

impl Fields {
    fn text(&mut self, field: &Field, value: String) {
        match field.name() {
            "otel.name" => self.name = Some(value),
            "otel.kind" => {
                self.kind = Some(match value.as_str() {
                    "server" => SpanKind::Server,
                    "client" => SpanKind::Client,
                    "producer" => SpanKind::Producer,
                    "consumer" => SpanKind::Consumer,
                    _ => SpanKind::Internal,
                });
            }
            "trace_id" => self.trace_id = u128::from_str_radix(&value, 16).ok(),
            "span_id" => self.span_id = u64::from_str_radix(&value, 16).ok(),
            "parent_span_id" => self.parent_span_id = u64::from_str_radix(&value, 16).ok(),
            name => self.attributes.push(KeyValue::new(name, value)),
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.text(field, format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        let v = i64::try_from(value).unwrap_or(i64::MAX);
        self.attributes.push(KeyValue::new(field.name(), v));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.attributes.push(KeyValue::new(field.name(), value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.attributes.push(KeyValue::new(field.name(), value));
    }
}

impl<S> Layer<S> for OtlpLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        // Only the runtime's spans: they carry their place in the trace.
        let (Some(trace_id), Some(span_id)) = (f.trace_id, f.span_id) else {
            return;
        };
        let pending = Pending {
            name: f.name.unwrap_or_else(|| attrs.metadata().name().to_owned()),
            kind: f.kind.unwrap_or(SpanKind::Internal),
            trace_id,
            span_id,
            parent_span_id: f.parent_span_id.filter(|p| *p != 0),
            start: span_time(),
            attributes: f.attributes,
        };
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(pending);
        }
    }

    fn on_close(&self, id: Id, ctx: LayerContext<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(p) = span.extensions_mut().remove::<Pending>() else {
            return;
        };
        let trace_id = TraceId::from_bytes(p.trace_id.to_be_bytes());
        let parent = match p.parent_span_id {
            Some(parent) => Context::new().with_remote_span_context(SpanContext::new(
                trace_id,
                SpanId::from_bytes(parent.to_be_bytes()),
                TraceFlags::SAMPLED,
                true,
                TraceState::default(),
            )),
            None => Context::new(),
        };
        let mut otel = self
            .tracer
            .span_builder(p.name)
            .with_kind(p.kind)
            .with_trace_id(trace_id)
            .with_span_id(SpanId::from_bytes(p.span_id.to_be_bytes()))
            .with_start_time(p.start)
            .with_attributes(p.attributes)
            .start_with_context(&self.tracer, &parent);
        otel.end_with_timestamp(span_time());
    }
}

/// A span's start or end: exported spans carry the real time (a tracing layer has no hub, so
/// no clock), as every other span in the trace does.
#[expect(
    clippy::disallowed_methods,
    reason = "exported spans carry the real time, as every other span of the trace does"
)]
fn span_time() -> SystemTime {
    SystemTime::now()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::{Arc, Mutex};

    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SpanData, SpanExporter};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    #[derive(Debug, Clone, Default)]
    struct Collected(Arc<Mutex<Vec<SpanData>>>);

    impl SpanExporter for Collected {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().unwrap().extend(batch);
            Ok(())
        }
    }

    #[test]
    fn runtime_spans_keep_their_ids_parents_names_and_attributes() {
        let collected = Collected::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(collected.clone())
            .build();
        let layer = OtlpLayer::new(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let root = tracing::info_span!(
                "orchestration",
                otel.name = "orchestration||Parent",
                otel.kind = "server",
                durabletask.task.instance_id = "i-1",
                taskhub.partition = 2u32,
                trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
                span_id = "00f067aa0ba902b7",
                parent_span_id = "",
            );
            drop(root);
            let child = tracing::info_span!(
                "activity",
                otel.name = "activity||A",
                trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
                span_id = "1111111111111111",
                parent_span_id = "00f067aa0ba902b7",
            );
            drop(child);
            // Not a runtime span: not exported.
            drop(tracing::info_span!("other"));
        });
        let spans = collected.0.lock().unwrap().clone();
        assert_eq!(spans.len(), 2, "{spans:#?}");
        let trace = TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap();
        let (root, child) = (&spans[0], &spans[1]);
        assert_eq!(root.name, "orchestration||Parent");
        assert_eq!(root.span_kind, SpanKind::Server);
        assert_eq!(root.span_context.trace_id(), trace);
        assert_eq!(
            root.span_context.span_id(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap()
        );
        assert_eq!(root.parent_span_id, SpanId::INVALID);
        assert!(root
            .attributes
            .contains(&KeyValue::new("durabletask.task.instance_id", "i-1")));
        assert!(root
            .attributes
            .contains(&KeyValue::new("taskhub.partition", 2_i64)));
        assert_eq!(child.name, "activity||A");
        assert_eq!(child.span_context.trace_id(), trace);
        assert_eq!(child.parent_span_id, root.span_context.span_id());
    }
}
