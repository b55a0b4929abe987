//! The WAL is checkpointed into the database file while the store is open, by the checkpointer
//! thread, and its size stays bounded.
#![allow(clippy::disallowed_methods, reason = "test code")]

use crate::common::{clock, open, TestDir};
use taskhub_storage::{NewQueueMessage, QueueName, QueueStore};

fn file_len(path: &std::path::Path, suffix: &str) -> u64 {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    std::fs::metadata(std::path::PathBuf::from(name)).map_or(0, |m| m.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_checkpointed_while_the_store_is_open() {
    let dir = TestDir::new();
    let path = dir.file("wal.db");
    let store = open(&path, &clock());
    // 4,000 commits of one 32 KiB message each: about 128 MiB of pages through the WAL.
    let body = "x".repeat(32 * 1024);
    for _ in 0..4_000 {
        let message = NewQueueMessage {
            body: body.clone(),
            delay: std::time::Duration::ZERO,
        };
        store
            .enqueue(QueueName::WorkItems, vec![message])
            .await
            .unwrap();
    }
    // The thread checkpointed (it may still be at it: wait for it a little)...
    // (A deadline only a stuck checkpointer reaches, even on a loaded machine.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while store.writer_stats().wal_checkpoints == 0 || file_len(&path, "") < 32 << 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint reached the database file: {:?}, {} bytes",
            store.writer_stats(),
            file_len(&path, "")
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // ... and the WAL started over instead of holding all 128 MiB: the writer checkpoints itself
    // from 16,000 pages (64 MiB) while the thread is behind, and from 24,000 (about 94 MiB) it
    // waits for a checkpoint the thread is running instead of giving up (on a loaded machine
    // one long checkpoint of the thread could keep every attempt out until the last commit).
    let wal = file_len(&path, "-wal");
    assert!(wal < 112 << 20, "WAL file {wal} bytes");
}
