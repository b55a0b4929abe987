//! Scheduled signals fire on time, not earlier: from a client (sent with a queue delay), from an
//! orchestration (sent at once, held back by the entity until due) and from an entity. Driven
//! by a `ManualClock` on the memory backend with paused tokio time: after each clock advance the
//! test waits until every task is idle, so "not yet applied" is checked after the worker
//! provably looked at the queue at the new time.

use std::time::Duration;

use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::Clock;

const HOUR: Duration = Duration::from_secs(3600);
const BOUND: Duration = Duration::from_secs(10);

fn log() -> EntityId {
    EntityId::new("Log", "sched").unwrap()
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Log", |ctx: &mut EntityContext| {
        let mut lines: Vec<String> = ctx.get_state_or_default()?;
        let line: String = ctx.input()?;
        if ctx.operation_name() == "schedule" {
            // An entity schedules a signal to itself three hours on.
            let at = ctx.now() + 3 * HOUR;
            ctx.signal_entity_at(&log(), "append", &format!("{line} (from the entity)"), at)?;
        }
        lines.push(line);
        ctx.set_state(&lines)?;
        Ok(lines.len())
    });
    reg.orchestration("Later", |ctx: OrchestrationContext, (): ()| async move {
        ctx.signal_entity_at(&log(), "append", &"two hours", ctx.now() + 2 * HOUR)?;
        Ok::<_, OrchestrationError>(())
    });
    reg
}

async fn lines(client: &TaskHubClient) -> Vec<String> {
    client
        .read_entity_state::<Vec<String>>(&log())
        .await
        .unwrap()
        .unwrap_or_default()
}

async fn until_lines(client: &TaskHubClient, n: usize) {
    tokio::time::timeout(BOUND, async {
        while lines(client).await.len() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("a signal due now did not fire"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn scheduled_signals_fire_on_time() {
    let ManualMemoryHub { clock, hub, .. } = manual_memory_hub(fast_settings()).await;
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let start = clock.now().to_system_time();

    client
        .signal_entity_at(&log(), "append", &"one hour", start + HOUR)
        .await
        .unwrap();
    let id = client.start("Later", ()).await.unwrap();
    wait_done(&client, &id, BOUND).await;
    client
        .signal_entity(&log(), "schedule", &"now")
        .await
        .unwrap();
    until_lines(&client, 1).await;

    for (due, line) in [
        (HOUR, "one hour"),
        (2 * HOUR, "two hours"),
        (3 * HOUR, "now (from the entity)"),
    ] {
        let before = lines(&client).await;
        let now = clock.now().to_system_time();
        let wait = (start + due).duration_since(now).unwrap();
        clock.advance(wait - Duration::from_secs(1));
        wait::idle().await;
        assert_eq!(lines(&client).await, before, "'{line}' fired early");
        clock.advance(Duration::from_secs(1));
        until_lines(&client, before.len() + 1).await;
        assert_eq!(lines(&client).await.last().map(String::as_str), Some(line));
    }
    worker.shutdown().await;
}
