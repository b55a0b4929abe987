//! A corrupted or truncated SQLite file (invariant 6): opening it, or using it through the
//! client and a worker, gives typed errors naming what is wrong — never a panic, anywhere in
//! the process (a panic hook counts panics of spawned tasks too).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::*;
use taskhub_sqlite::{SqliteOptions, SqliteStore};
use taskhub_storage::{InstanceQuery, StorageError, SystemClock};

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", |_ctx: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * 2)
    });
    reg.orchestration("Twice", |ctx: OrchestrationContext, x: u64| async move {
        let a: u64 = ctx.call_activity("Double", x).await?;
        let b: u64 = ctx.call_activity("Double", a).await?;
        Ok::<_, OrchestrationError>(b)
    });
    reg
}

fn settings() -> Settings {
    Settings {
        startup_busy_timeout: Duration::from_secs(2),
        ..fast_settings()
    }
}

fn open_store(path: &Path) -> Result<SqliteStore, StorageError> {
    SqliteStore::open(SqliteOptions::new(path).with_clock(Arc::new(SystemClock::new())))
}

/// A hub with finished instances, its WAL copied into the database file.
async fn pristine(dir: &Path) -> (Vec<u8>, Vec<InstanceId>) {
    let path = dir.join("pristine.db");
    let hub = TaskHub::open(Arc::new(open_store(&path).unwrap()), settings())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let ids = run_each(&client, "Twice", 0..12u64, Duration::from_secs(30)).await;
    worker.shutdown().await;
    drop(client);
    drop(hub);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    (std::fs::read(&path).unwrap(), ids)
}

/// SplitMix64.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A storage error that says what is wrong: a typed variant, naming the file or the object.
fn check_storage_error(e: &StorageError, context: &str) {
    let text = e.to_string();
    assert!(!text.is_empty(), "{context}: empty error");
    match e {
        StorageError::Corrupt { what, detail } => {
            assert!(!what.is_empty() && !detail.is_empty(), "{context}: {e:?}");
        }
        StorageError::Unavailable(_) | StorageError::Backend(_) | StorageError::Busy { .. } => {}
        other => panic!("{context}: unexpected error for a corrupt store: {other:?}"),
    }
}

fn check_error(e: &TaskhubError, context: &str) {
    match e {
        TaskhubError::Storage(s) => check_storage_error(s, context),
        TaskhubError::StoreBusy { last, .. } => check_storage_error(last, context),
        TaskhubError::Timeout(..) | TaskhubError::Invalid(_) => {}
        other => panic!("{context}: unexpected error for a corrupt store: {other:?}"),
    }
}

/// Opens and uses a damaged copy; returns whether the damage was noticed (an error anywhere).
async fn exercise(path: &Path, ids: &[InstanceId], context: &str) -> bool {
    let store = match open_store(path) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("{context}: {e}");
            check_storage_error(&e, context);
            assert!(
                e.to_string().contains("damaged"),
                "{context}: names the file: {e}"
            );
            return true;
        }
    };
    let hub = match TaskHub::open(Arc::new(store), settings()).await {
        Ok(hub) => hub,
        Err(e) => {
            check_error(&e, context);
            return true;
        }
    };
    let mut noticed = false;
    let client = hub.client();
    if let Err(e) = client.list(&InstanceQuery::default()).await {
        check_error(&e, context);
        noticed = true;
    }
    for id in ids {
        let options = StatusOptions { history: true };
        if let Err(e) = client.get_status(id, options).await {
            check_error(&e, context);
            noticed = true;
        }
    }
    let worker = match Worker::start(&hub, registry()).await {
        Ok(w) => w,
        Err(e) => {
            check_error(&e, context);
            return true;
        }
    };
    match client.start("Twice", 21u64).await {
        Ok(id) => {
            if let Err(e) = client
                .wait_for_completion(&id, Duration::from_millis(1500))
                .await
            {
                check_error(&e, context);
                noticed = true;
            }
        }
        Err(e) => {
            check_error(&e, context);
            noticed = true;
        }
    }
    worker.shutdown().await;
    noticed
}

fn write_copy(dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join("damaged.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_and_truncated_files_give_typed_errors_never_a_panic() {
    std::panic::set_hook(Box::new(|info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        eprintln!("PANIC: {info}");
    }));
    let dir = TempDir::new("corrupt-store");
    let (bytes, ids) = pristine(&dir.0).await;
    let page = 4096;
    assert!(bytes.len() > 4 * page, "{} bytes", bytes.len());
    let mut noticed = 0;
    let mut cases = 0;

    for cut in [bytes.len() / 2, page + 100, 50, bytes.len() - page] {
        let path = write_copy(&dir.0, &bytes[..cut]);
        cases += 1;
        noticed += usize::from(exercise(&path, &ids, &format!("truncated to {cut} bytes")).await);
    }
    for seed in 0..10u64 {
        let mut next = rng(seed);
        let mut damaged = bytes.clone();
        // Seed 0 also hits the header page; the others hit data and index pages.
        let first = if seed == 0 { 0 } else { page };
        for _ in 0..64 {
            let at = first + (next() as usize) % (damaged.len() - first);
            damaged[at] = next() as u8;
        }
        let path = write_copy(&dir.0, &damaged);
        cases += 1;
        noticed += usize::from(
            exercise(
                &path,
                &ids,
                &format!("seed {seed}: random bytes overwritten"),
            )
            .await,
        );
    }
    eprintln!("{noticed} of {cases} damaged files gave errors; no panic");
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a corrupt store made the process panic"
    );
    assert!(
        noticed * 2 >= cases,
        "only {noticed} of {cases} damaged files were noticed"
    );
    let _ = std::panic::take_hook();
}
