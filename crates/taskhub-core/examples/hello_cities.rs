//! The DESIGN §1 example, driven through the pure replay engine with activities run in-process.
//!
//! Run: `cargo run -p taskhub-core --example hello_cities`
//!
//! Every turn replays the recorded history from scratch (as a worker without extended sessions
//! would) and prints the events it appends, so you can watch event sourcing at work.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use taskhub_core::*;

async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
    Ok(format!("Hello {city}!"))
}

async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
    let mut out = Vec::new();
    for city in ["Tokyo", "Seattle", "London"] {
        out.push(ctx.call_activity("SayHello", city).await?);
    }
    Ok(out)
}

/// Activities here never wait on I/O, so a busy-poll executor is enough for the example.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry
        .orchestration("HelloCities", hello_cities)
        .activity("SayHello", say_hello);
    let registry = Arc::new(registry);
    let id = InstanceId::new("hello-cities-1")?;
    let execution_id = ExecutionId::random();
    let mut history: Vec<HistoryEvent> = Vec::new();
    let mut inbox = VecDeque::from([Message::from_client(
        id.clone(),
        EventKind::ExecutionStarted {
            name: "HelloCities".into(),
            version: None,
            input: Payload::null(),
            execution_id: execution_id.clone(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
        Timestamp::EPOCH,
    )]);
    let mut clock = 0;
    while let Some(message) = inbox.pop_front() {
        clock += 1;
        let now = Timestamp::from_millis(clock);
        let turn = run_turn(
            registry.clone(),
            id.clone(),
            &history,
            TurnInput {
                now,
                messages: vec![message],
            },
        );
        for e in &turn.new_events {
            println!("{:>3}  {}", history.len(), e.event.describe());
            history.push(e.clone());
        }
        for action in turn.actions {
            match action {
                Action::ScheduleActivity {
                    task_id,
                    name,
                    input,
                    attempt,
                    ..
                } => {
                    let ctx = ActivityContext::new(ActivityInvocation {
                        instance_id: id.clone(),
                        execution_id: execution_id.clone(),
                        name: name.clone(),
                        task_id,
                        attempt,
                    });
                    let event = match registry.start_activity(&name, ctx, input) {
                        Ok(fut) => match block_on(fut) {
                            Ok(result) => EventKind::TaskCompleted { task_id, result },
                            Err(failure) => EventKind::TaskFailed { task_id, failure },
                        },
                        Err(failure) => EventKind::TaskFailed { task_id, failure },
                    };
                    inbox.push_back(Message::from_client(id.clone(), event, now));
                }
                Action::Complete { result } => println!("completed: {result}"),
                Action::Fail { failure } => println!("failed: {failure}"),
                _ => {}
            }
        }
    }
    Ok(())
}
