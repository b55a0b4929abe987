//! No event is lost across continue-as-new, on SQLite, with extended sessions on and off: a
//! counter that continues as new after every event, sent `incr incr incr decr incr` back to
//! back, reaches 3. Events arrive while a generation's turn runs (carried over), after its
//! ContinuedAsNew but before the next start is applied (they wait for it), and the carried
//! ones may find that generation already continued (they go on to the current one).
//!
//! Each generation's input is `(count, seen)`: the test waits for every event to be *seen*,
//! not for the count to reach its final value (the count passes through that value earlier,
//! and queues keep no order across messages, so a `stop` sent then could overtake a pending
//! `decr`).

use std::time::Duration;

use crate::common::*;
use taskhub::*;

async fn counter(
    ctx: OrchestrationContext,
    (n, seen): (i64, usize),
) -> Result<i64, OrchestrationError> {
    let op: String = ctx.wait_for_event("op").await?;
    let n = match op.as_str() {
        "incr" => n + 1,
        "decr" => n - 1,
        _ => return Ok(n),
    };
    ctx.continue_as_new((n, seen + 1)).await
}

async fn scenario(extended_sessions: bool, rounds: usize) {
    let dir = TempDir::new("continue-events");
    let settings = Settings {
        extended_sessions_enabled: extended_sessions,
        ..fast_settings()
    };
    let hub = TaskHub::open(sqlite_store(&dir.0), settings).await.unwrap();
    let mut reg = Registry::new();
    reg.orchestration("Counter", counter);
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("Counter", (0i64, 0usize)).await.unwrap();
    let ops = ["incr", "incr", "incr", "decr", "incr"];
    for _ in 0..rounds {
        for op in ops {
            client.raise_event(&id, "op", op).await.unwrap();
        }
    }
    let want = 3 * i64::try_from(rounds).unwrap();
    let sent = ops.len() * rounds;
    // Each generation's input is (count, events seen); wait until the last one starts.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = find(&client, &id).await.unwrap();
        let (n, seen): (i64, usize) = s.row.input.parse("count").unwrap();
        if seen == sent && s.status() == OrchestrationStatus::Running {
            assert_eq!(n, want, "every event seen once");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{seen} of {sent} events seen, count {n} ({}): events were lost",
            s.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.raise_event(&id, "op", "stop").await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(done.output::<i64>().unwrap(), Some(want));
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_is_lost_across_continue_as_new() {
    scenario(false, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_is_lost_across_continue_as_new_in_extended_sessions() {
    scenario(true, 4).await;
}
