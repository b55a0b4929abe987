//! The queue table's dead rows do not pile up: every delivery leaves dead row versions (a
//! dequeue updates the row, a delete removes it), and the table's own autovacuum settings
//! (`schema.rs`: no scale factor, a threshold of 500 dead rows, unthrottled) make the server
//! vacuum it while the hub runs, whatever the table's size. Here 50,000 delayed messages (timers
//! due later) sit in the table, and 3,000 go through one queue (enqueued, dequeued, deleted):
//! about 6,000 dead rows, which under the server's defaults (50 + 20 % of the table, 10,050)
//! would stay. With the server checking every second (`autovacuum_naptime`, set by this test
//! through `ALTER SYSTEM`, reset at the end), the table is vacuumed and its dead rows fall back
//! to the threshold or under it.
//! Run with `scripts/with-postgres.sh cargo test -p taskhub-postgres --test autovacuum`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "test code: waits on the server's background work in real time"
)]

mod common;

use std::time::{Duration, Instant};

use taskhub_postgres::{Create, PostgresStore};
use taskhub_storage::{NewQueueMessage, QueueName, QueueStore};

const MESSAGES: usize = 3_000;
/// Live rows that stay: timers due in an hour.
const WAITING: usize = 50_000;

/// The queue table's vacuum count and dead rows, by the server's statistics.
async fn stats(store: &PostgresStore) -> (i64, i64) {
    let client = store.raw_client().await.unwrap();
    let row = client
        .query_one(
            "SELECT autovacuum_count, n_dead_tup FROM pg_stat_user_tables
             WHERE relid = 'queue_messages'::regclass",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

async fn naptime(store: &PostgresStore, value: Option<&str>) {
    let client = store.raw_client().await.unwrap();
    let sql = match value {
        Some(v) => format!("ALTER SYSTEM SET autovacuum_naptime = '{v}'"),
        None => "ALTER SYSTEM RESET autovacuum_naptime".to_owned(),
    };
    client.batch_execute(&sql).await.unwrap();
    client
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_tables_dead_rows_are_vacuumed_while_the_hub_runs() {
    let store = PostgresStore::open(
        &common::options(),
        &common::fresh_hub_name("vacuum"),
        Create::IfMissing,
    )
    .await
    .unwrap();
    naptime(&store, Some("1s")).await;
    let later = QueueName::Control(1);
    for chunk in 0..WAITING / 500 {
        let messages = (0..500)
            .map(|i| NewQueueMessage {
                body: format!("timer {chunk}-{i}"),
                delay: Duration::from_secs(3600),
            })
            .collect();
        store.enqueue(later, messages).await.unwrap();
    }
    // The inserts' own vacuum (and analyze) first: the count to beat is the one after them.
    let settle = Instant::now();
    let mut vacuums_before = stats(&store).await.0;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(4)
        && settle.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = stats(&store).await.0;
        if now != vacuums_before {
            vacuums_before = now;
            quiet_since = Instant::now();
        }
    }
    let q = QueueName::Control(0);
    let mut left = MESSAGES;
    while left > 0 {
        let n = left.min(100);
        let messages = (0..n)
            .map(|i| NewQueueMessage {
                body: format!("m{left}-{i}"),
                delay: Duration::ZERO,
            })
            .collect();
        store.enqueue(q, messages).await.unwrap();
        let mut got = 0;
        while got < n {
            for d in store.dequeue(q, 32, Duration::from_secs(60)).await.unwrap() {
                store.delete(q, &d.receipt).await.unwrap();
                got += 1;
            }
        }
        left -= n;
    }
    assert_eq!(
        store.stats(q).await.unwrap().length,
        0,
        "every message went through"
    );
    let start = Instant::now();
    let outcome = loop {
        let (vacuums, dead) = stats(&store).await;
        // The server vacuums a table whose dead rows *exceed* its threshold (500): exactly
        // 500 left after the last vacuum stay until the next write, and are not a pile-up.
        if vacuums > vacuums_before && dead <= 500 {
            break Ok(());
        }
        if start.elapsed() > Duration::from_secs(60) {
            break Err((vacuums, dead));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    naptime(&store, None).await;
    if let Err((vacuums, dead)) = outcome {
        panic!(
            "after {MESSAGES} messages through the queue, {vacuums} autovacuums (before: \
             {vacuums_before}) and {dead} dead rows in queue_messages after 60 s"
        );
    }
}
