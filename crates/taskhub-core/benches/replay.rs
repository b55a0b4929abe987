//! Replay engine benchmarks.
//!
//! * `replay_10k_events`: rebuild a session from a 10,000-event history (target ≤ 20 ms).
//! * `live_turn_at_10k_events`: one turn (one activity result in, next activity out) on a session
//!   kept in memory whose history already holds 10,000 events (target ≤ 50 µs).
//!
//! Run: `cargo bench -p taskhub-core --bench replay`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_main, Criterion};
use taskhub_core::*;

async fn forever(ctx: OrchestrationContext, _: ()) -> Result<(), OrchestrationError> {
    let mut i: u64 = 0;
    loop {
        let v: u64 = ctx.call_activity("Step", i).await?;
        i = v + 1;
    }
}

fn registry() -> Arc<Registry> {
    let mut reg = Registry::new();
    reg.orchestration("Forever", forever);
    Arc::new(reg)
}

fn completion(id: &InstanceId, task_id: u64) -> Message {
    Message::from_client(
        id.clone(),
        EventKind::TaskCompleted {
            task_id,
            result: Payload::to_payload(&task_id, "result").unwrap_or_default(),
        },
        Timestamp::from_millis(task_id),
    )
}

/// Runs the orchestration live until its history has at least `events` events.
fn build(events: u64) -> (OrchestrationSession, Vec<HistoryEvent>, u64) {
    let id = InstanceId::new("bench").unwrap_or_else(|_| InstanceId::random());
    let mut session = OrchestrationSession::new(registry(), id.clone());
    let start = Message::from_client(
        id.clone(),
        EventKind::ExecutionStarted {
            name: "Forever".into(),
            version: None,
            input: Payload::null(),
            execution_id: ExecutionId::random(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
        Timestamp::EPOCH,
    );
    let mut history = session
        .turn(TurnInput {
            now: Timestamp::EPOCH,
            messages: vec![start],
        })
        .new_events;
    let mut task = 0;
    while (history.len() as u64) < events {
        let r = session.turn(TurnInput {
            now: Timestamp::from_millis(task),
            messages: vec![completion(&id, task)],
        });
        history.extend(r.new_events);
        task += 1;
    }
    (session, history, task)
}

fn benches(c: &mut Criterion) {
    let (_, history, _) = build(10_000);
    let id = InstanceId::new("bench").unwrap_or_else(|_| InstanceId::random());
    let reg = registry();
    c.bench_function("replay_10k_events", |b| {
        b.iter(|| {
            let s = OrchestrationSession::load(reg.clone(), id.clone(), black_box(&history));
            black_box(s.history_len())
        });
    });

    let (mut session, _, mut task) = build(10_000);
    c.bench_function("live_turn_at_10k_events", |b| {
        b.iter(|| {
            let r = session.turn(TurnInput {
                now: Timestamp::from_millis(task),
                messages: vec![completion(&id, task)],
            });
            task += 1;
            black_box(r.new_events.len())
        });
    });
}

/// criterion_group! generates an undocumented public function; keep it in a private module.
mod group {
    criterion::criterion_group!(replay, super::benches);
}
use group::replay;
criterion_main!(replay);
