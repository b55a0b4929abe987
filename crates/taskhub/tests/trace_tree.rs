//! One orchestration is one trace: the spans of its turns, its activities, its timer and its
//! sub-orchestration's turns and activities share a trace ID, and each span's parent is the
//! span that sent the message that started it (a turn → its activities and the child's first
//! turn; an activity or the child's last turn → the parent's next turn). Spans are recorded by
//! a `tracing` layer that keeps their fields.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use taskhub::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

/// One recorded span: its `tracing` name and its fields as text.
#[derive(Debug, Clone)]
struct Recorded {
    name: &'static str,
    fields: BTreeMap<String, String>,
}

impl Recorded {
    fn get(&self, field: &str) -> &str {
        self.fields.get(field).map_or("", String::as_str)
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        if fields.contains_key("trace_id") {
            self.0.lock().unwrap().push(Recorded {
                name: attrs.metadata().name(),
                fields,
            });
        }
    }
}

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("A", |_ctx: ActivityContext, n: u64| async move {
        Ok::<_, ActivityError>(n * 2)
    });
    reg.activity("B", |_ctx: ActivityContext, n: u64| async move {
        Ok::<_, ActivityError>(n + 1)
    });
    reg.orchestration("Child", |ctx: OrchestrationContext, n: u64| async move {
        ctx.sleep(Duration::from_millis(10)).await;
        let b: u64 = ctx.call_activity("B", n).await?;
        Ok::<_, OrchestrationError>(b)
    });
    reg.orchestration("Waiter", |ctx: OrchestrationContext, n: u64| async move {
        let go: u64 = ctx.wait_for_event("Go").await?;
        let a: u64 = ctx.call_activity("A", n + go).await?;
        Ok::<_, OrchestrationError>(a)
    });
    reg.orchestration("Parent", |ctx: OrchestrationContext, _: ()| async move {
        let a: u64 = ctx.call_activity("A", 2u64).await?;
        let c: u64 = ctx.call_sub_orchestration("Child", a).await?;
        Ok::<_, OrchestrationError>(c)
    });
    reg
}

/// Starts `name` with input 1 in the trace of `caller` (as an HTTP request's `traceparent`).
async fn start_in_trace(
    client: &TaskHubClient,
    name: &str,
    caller: telemetry::TraceContext,
) -> InstanceId {
    client
        .start_with(
            name,
            1u64,
            StartOptions {
                trace_parent: Some(caller),
                ..StartOptions::default()
            },
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestration_with_an_activity_and_a_sub_orchestration_is_one_trace() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(recorder.clone()))
        .unwrap();
    let dir = TempDir::new("trace-tree");
    // Without extended sessions every turn reloads its instance: a turn woken by a message
    // without a trace context finds the execution's trace in its history.
    let settings = Settings {
        extended_sessions_enabled: false,
        ..fast_settings()
    };
    let hub = TaskHub::open(sqlite_store(&dir.0), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("Parent", ()).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(5));
    // A start that names the caller's trace context (as an HTTP request's `traceparent`).
    let caller = telemetry::TraceContext::parse(CALLER).unwrap();
    let joined = start_in_trace(&client, "Child", caller).await;
    wait_done(&client, &joined, Duration::from_secs(60)).await;
    // An instance in the caller's trace woken by a client's event (which carries no context).
    let waiter = start_in_trace(&client, "Waiter", caller).await;
    wait::until(
        "the waiter's first turn",
        || {
            recorder
                .0
                .lock()
                .unwrap()
                .iter()
                .any(|s| s.get("durabletask.task.instance_id") == waiter.as_str())
        },
        || (),
    )
    .await;
    client.raise_event(&waiter, "Go", &1u64).await.unwrap();
    wait_done(&client, &waiter, Duration::from_secs(60)).await;
    worker.shutdown().await;
    let all = recorder.0.lock().unwrap().clone();
    let (all, waiter_spans): (Vec<Recorded>, Vec<Recorded>) = all
        .into_iter()
        .partition(|s| s.get("durabletask.task.instance_id") != waiter.as_str());
    // Its start turn, the event's turn, the activity and the result's turn.
    assert_eq!(waiter_spans.len(), 4, "{waiter_spans:#?}");
    for s in &waiter_spans {
        assert_eq!(s.get("trace_id"), CALLER_TRACE, "{s:#?}");
    }
    let (spans, joined_spans): (Vec<Recorded>, Vec<Recorded>) = all
        .into_iter()
        .partition(|s| s.get("durabletask.task.instance_id") != joined.as_str());
    // Its turns, timer and activity: one trace, the caller's, under the caller's span.
    assert_eq!(joined_spans.len(), 5, "{joined_spans:#?}");
    for s in &joined_spans {
        assert_eq!(s.get("trace_id"), CALLER_TRACE, "{s:#?}");
    }
    let first = joined_spans
        .iter()
        .find(|s| s.get("parent_span_id") == CALLER_SPAN)
        .unwrap_or_else(|| panic!("a span whose parent is the caller's: {joined_spans:#?}"));
    assert_eq!(first.get("otel.name"), "orchestration||Child");

    let by_id: HashMap<&str, &Recorded> = spans.iter().map(|s| (s.get("span_id"), s)).collect();
    assert_eq!(by_id.len(), spans.len(), "span IDs are unique: {spans:#?}");
    let named = |otel: &str| -> Vec<&Recorded> {
        spans
            .iter()
            .filter(|s| s.get("otel.name") == otel)
            .collect()
    };
    let parent_turns = named("orchestration||Parent");
    let child_turns = named("orchestration||Child");
    let (a, b, timers) = (named("activity||A"), named("activity||B"), named("timer"));
    // Parent: start, A's result, the child's result. Child: start, timer, B's result.
    assert_eq!(
        (parent_turns.len(), child_turns.len()),
        (3, 3),
        "{spans:#?}"
    );
    assert_eq!((a.len(), b.len(), timers.len()), (1, 1, 1), "{spans:#?}");

    // One trace.
    let trace = parent_turns[0].get("trace_id");
    assert_eq!(trace.len(), 32);
    for s in &spans {
        assert_eq!(s.get("trace_id"), trace, "every span in one trace: {s:#?}");
    }
    // The tree: the first turn is the root; everything else hangs off a span of the trace.
    let parent_of = |s: &Recorded| by_id.get(s.get("parent_span_id")).copied();
    let roots: Vec<&Recorded> = spans
        .iter()
        .filter(|s| s.get("parent_span_id").is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    assert_eq!(roots[0].get("otel.name"), "orchestration||Parent");
    let otel_of_parent = |s: &Recorded| parent_of(s).map(|p| p.get("otel.name").to_owned());
    assert_eq!(
        otel_of_parent(a[0]).as_deref(),
        Some("orchestration||Parent")
    );
    assert_eq!(
        otel_of_parent(b[0]).as_deref(),
        Some("orchestration||Child")
    );
    assert_eq!(
        otel_of_parent(timers[0]).as_deref(),
        Some("orchestration||Child")
    );
    let mut child_parents: Vec<String> = child_turns
        .iter()
        .filter_map(|t| otel_of_parent(t))
        .collect();
    child_parents.sort();
    // The child's start came from the parent's turn; its later turns from its timer's turn
    // and from B.
    assert_eq!(
        child_parents,
        [
            "activity||B",
            "orchestration||Child",
            "orchestration||Parent"
        ]
    );
    let mut parent_parents: Vec<String> = parent_turns
        .iter()
        .filter_map(|t| otel_of_parent(t))
        .collect();
    parent_parents.sort();
    assert_eq!(parent_parents, ["activity||A", "orchestration||Child"]);

    // DTFx attributes.
    let turn = parent_turns[0];
    assert_eq!(turn.name, "orchestration");
    assert_eq!(turn.get("durabletask.task.instance_id"), id.as_str());
    assert_eq!(turn.get("durabletask.type"), "orchestration");
    assert!(!turn.get("durabletask.task.execution_id").is_empty());
    assert!(
        turn.get("taskhub.partition").parse::<u32>().is_ok(),
        "{turn:#?}"
    );
    assert!(
        turn.get("taskhub.epoch")
            .contains(|c: char| c.is_ascii_digit()),
        "{turn:#?}"
    );
    assert_eq!(a[0].name, "activity");
    assert_eq!(a[0].get("durabletask.task.task_id"), "0");
    assert_eq!(a[0].get("durabletask.task.instance_id"), id.as_str());
}
