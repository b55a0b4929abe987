//! A rough throughput probe (ignored by default; not a timed assertion):
//! `cargo test -p taskhub-sqlite --release --test sqlite -- --ignored --nocapture throughput`.
#![allow(clippy::disallowed_methods, reason = "test code")]

use std::sync::Arc;
use std::time::Instant;

use crate::common::{first_checkpoint, TestDir};
use taskhub_sqlite::{Durability, SqliteOptions, SqliteStore};
use taskhub_storage::CheckpointStore;

#[expect(clippy::unwrap_used, reason = "a measurement helper of the tests")]
async fn run(durability: Durability, concurrency: usize, total: usize) {
    let dir = TestDir::new();
    let store = Arc::new(
        SqliteStore::open(SqliteOptions::new(dir.file("t.db")).with_durability(durability))
            .unwrap(),
    );
    let started = Instant::now();
    let per_task = total / concurrency;
    let tasks: Vec<_> = (0..concurrency)
        .map(|t| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for i in 0..per_task {
                    store
                        .checkpoint(first_checkpoint(&format!("t{t}-{i}")))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let stats = store.writer_stats();
    println!(
        "{durability:?} durability, {concurrency} concurrent writers: {:.0} checkpoints/s \
         ({} requests in {} transactions)",
        (per_task * concurrency) as f64 / secs,
        stats.requests,
        stats.transactions
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn checkpoint_throughput() {
    for durability in [Durability::Normal, Durability::Full] {
        for concurrency in [1, 64] {
            run(durability, concurrency, 2000).await;
        }
    }
}
