//! Schema versioning on open: migrations, a newer schema, a file that is not a database.

use std::sync::Arc;

use crate::common::{clock, open, TestDir};
use taskhub_core::Timestamp;
use taskhub_sqlite::schema::{latest_version, MIGRATIONS};
use taskhub_sqlite::{SqliteOptions, SqliteStore};
use taskhub_storage::{Clock, InstanceStore, PartitionStore, ProcessStore, StorageError};

#[tokio::test]
async fn a_new_file_is_migrated_to_the_latest_version() {
    let dir = TestDir::new();
    let store = open(&dir.file("hub.db"), &clock());
    assert_eq!(latest_version() as usize, MIGRATIONS.len());
    assert_eq!(store.schema_version(), latest_version());
    assert_eq!(
        store.stored_schema_version().await.unwrap(),
        latest_version()
    );
    assert_eq!(store.writer_pragma("journal_mode").await.unwrap(), "wal");
}

#[tokio::test]
async fn reopening_keeps_data_and_does_not_migrate_again() {
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    let c = clock();
    {
        let store = open(&path, &c);
        store
            .create_hub(4, Timestamp::from_millis(7))
            .await
            .unwrap();
    }
    let store = open(&path, &c);
    let info = store.hub_info().await.unwrap().unwrap();
    assert_eq!(info.partition_count, 4);
    assert_eq!(info.created_at, Timestamp::from_millis(7));
    assert_eq!(store.list_partitions().await.unwrap().len(), 4);
}

#[tokio::test]
async fn an_older_schema_is_upgraded_in_one_transaction() {
    // A file at version 0 that already has an unrelated table: migration adds ours and sets
    // the version, keeping what was there.
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE other (x INTEGER); INSERT INTO other VALUES (1);")
            .unwrap();
    }
    let store = open(&path, &clock());
    assert_eq!(store.schema_version(), latest_version());
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let x: i64 = conn
        .query_row("SELECT x FROM other", [], |r| r.get(0))
        .unwrap();
    assert_eq!(x, 1);
    let v: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, latest_version());
}

#[test]
fn a_failed_migration_leaves_the_file_at_its_old_version() {
    // A table named like one of ours makes the migration fail half way: nothing of it stays.
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE instances (x INTEGER);")
            .unwrap();
    }
    let err = SqliteStore::open(SqliteOptions::new(&path)).unwrap_err();
    assert!(err.to_string().contains("migration"), "{err}");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 0);
    let hub_tables: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'hub'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        hub_tables, 0,
        "the migration's first tables were rolled back"
    );
}

#[test]
fn a_newer_schema_is_refused_clearly() {
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    drop(open(&path, &clock()));
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", latest_version() + 1)
            .unwrap();
    }
    let err = SqliteStore::open(SqliteOptions::new(&path)).unwrap_err();
    match &err {
        StorageError::NewerSchema {
            what,
            found,
            supported,
        } => {
            assert!(what.contains(&path.display().to_string()), "{err}");
            assert_eq!(
                (*found, *supported),
                (latest_version() + 1, latest_version())
            );
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("written by a newer build"), "{text}");
    assert!(!text.contains("corrupt"), "{text}");
    assert!(!err.is_retryable());
}

#[test]
fn a_file_of_random_bytes_is_corrupt_and_named() {
    let dir = TestDir::new();
    let path = dir.file("not-a-db.sqlite");
    let bytes: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&path, bytes).unwrap();
    let err = SqliteStore::open(SqliteOptions::new(&path)).unwrap_err();
    match &err {
        StorageError::Corrupt { what, detail } => {
            assert!(what.contains("not-a-db.sqlite"), "{err}");
            assert!(detail.contains("not a SQLite database"), "{err}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let dir = TestDir::new();
    let path = dir.file("no/such/dir/hub.db");
    let err = SqliteStore::open(SqliteOptions::new(&path)).unwrap_err();
    assert!(err.to_string().contains("hub.db"), "{err}");
}

#[test]
fn two_stores_opening_a_new_file_at_once_both_succeed() {
    let dir = TestDir::new();
    let path = Arc::new(dir.file("hub.db"));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let path = Arc::clone(&path);
            std::thread::spawn(move || SqliteStore::open(SqliteOptions::new(&*path)).map(drop))
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
}

#[tokio::test]
async fn a_version_5_history_of_one_row_per_event_loads_the_same_after_migration() {
    // Version 5 kept one row per event; version 6 keeps chunks. Events written before the
    // upgrade load in order, and a turn after it appends to them.
    use taskhub_core::format::encode_event;
    use taskhub_core::InstanceId;
    use taskhub_storage::HistoryStore;

    let dir = TestDir::new();
    let path = dir.file("hub.db");
    let old: Vec<_> = (1..=3).map(crate::common::event).collect();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for script in &MIGRATIONS[..5] {
            conn.execute_batch(script).unwrap();
        }
        conn.pragma_update(None, "user_version", 5).unwrap();
        conn.execute(
            "INSERT INTO histories (instance_id, execution_id, etag, event_count)
             VALUES ('i1', 'e1', 42, 3)",
            [],
        )
        .unwrap();
        // Inserted out of order: the migration keeps the order of `seq`.
        for seq in [2_usize, 0, 1] {
            conn.execute(
                "INSERT INTO history_events (instance_id, seq, execution_id, event)
                 VALUES ('i1', ?1, 'e1', ?2)",
                rusqlite::params![seq as i64, encode_event(&old[seq])],
            )
            .unwrap();
        }
    }
    let store = open(&path, &clock());
    assert_eq!(store.schema_version(), latest_version());
    let id = InstanceId::new("i1").unwrap();
    let loaded = store.load_history(&id).await.unwrap().unwrap();
    assert_eq!(loaded.events, old);
    let more: Vec<_> = (4..=5).map(crate::common::event).collect();
    crate::common::append_events(&store, "i1", &loaded, more.clone()).await;
    let after = store.load_history(&id).await.unwrap().unwrap();
    let mut all = old;
    all.extend(more);
    assert_eq!(after.events, all);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let gone: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'history_events'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(gone, 0, "the old table is dropped");
    let chunks: i64 = conn
        .query_row("SELECT COUNT(*) FROM history_chunks", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        chunks, 4,
        "three migrated one-event chunks and the new turn's chunk"
    );
}

#[test]
fn the_history_tables_are_not_replaced_under_a_running_older_worker() {
    // Schema 6 replaces the tables older builds keep histories in: while a partition lease
    // was renewed in the last minute (an older worker still running on the file), opening
    // refuses, names the worker and changes nothing; once the lease is stale it migrates.
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    let c = clock();
    let now = 1_700_000_000_000_i64; // the test clock's time (`common::clock`)
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for script in &MIGRATIONS[..5] {
            conn.execute_batch(script).unwrap();
        }
        conn.pragma_update(None, "user_version", 5).unwrap();
        conn.execute(
            "INSERT INTO partitions (partition, owner, next_owner, epoch, draining, retiring,
                                     offline, updated_at, etag)
             VALUES (0, 'old-worker', NULL, 3, 0, 0, 0, ?1, 1)",
            [now - 10_000],
        )
        .unwrap();
    }
    let opened = SqliteStore::open(SqliteOptions::new(&path).with_clock(Arc::new(c.clone())));
    let Err(err) = opened else {
        panic!("opened while the older worker runs")
    };
    assert!(matches!(err, StorageError::OlderProcesses { .. }), "{err}");
    assert!(err.to_string().contains("old-worker"), "{err}");
    let version = |path: &std::path::Path| -> u32 {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(version(&path), 5, "nothing was migrated");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE partitions SET updated_at = ?1", [now - 120_000])
            .unwrap();
    }
    let store = open(&path, &c);
    assert_eq!(store.schema_version(), latest_version());
    drop(store);
    assert_eq!(version(&path), latest_version());
}

#[tokio::test]
async fn a_table_gone_under_a_running_store_is_a_newer_schema_not_a_backend_error() {
    // A newer build migrated the file while this store had it open: the table this build
    // reads is gone. The error says so (the runtime then stops taking work) instead of
    // failing each message until it is dead-lettered.
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    let c = clock();
    let store = open(&path, &c);
    store.create_hub(1, c.now()).await.unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("ALTER TABLE instances RENAME TO instances_v99")
            .unwrap();
        conn.pragma_update(None, "user_version", latest_version() + 1)
            .unwrap();
    }
    let id = taskhub_core::InstanceId::new("i1").unwrap();
    let err = store.get_instance(&id).await.unwrap_err();
    assert!(
        matches!(err, StorageError::NewerSchema { found, .. } if found == latest_version() + 1),
        "{err:?}"
    );
    assert_eq!(store.stored_schema().await.unwrap(), latest_version() + 1);
}

#[tokio::test]
async fn a_missing_table_at_this_builds_schema_stays_a_backend_error() {
    // Only a newer stored version turns a missing table into NewerSchema.
    let dir = TestDir::new();
    let path = dir.file("hub.db");
    let c = clock();
    let store = open(&path, &c);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("ALTER TABLE instances RENAME TO elsewhere")
            .unwrap();
    }
    let id = taskhub_core::InstanceId::new("i1").unwrap();
    let err = store.get_instance(&id).await.unwrap_err();
    assert!(matches!(err, StorageError::Backend(_)), "{err:?}");
}
