//! What a DBA asks of the backend, against a real server: every pooled connection runs READ
//! COMMITTED with the lock and statement timeouts and names its process; a checkpoint stuck
//! behind a lock gives up (`Busy`) and lets its partition's fence go; migrations take a
//! two-key advisory lock; each connection's prepared statements are bounded; the tables
//! rewritten at every turn keep their autovacuum settings. Run with
//! `scripts/with-postgres.sh cargo test -p taskhub-postgres --test dba`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "test code: bounds on waits against a real server"
)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use taskhub_core::Timestamp;
use taskhub_postgres::schema::MIGRATION_LOCK_CLASS;
use taskhub_postgres::session::STATEMENT_CACHE_MAX;
use taskhub_postgres::upkeep::TABLE_SETTINGS;
use taskhub_postgres::{Create, PostgresOptions, PostgresStore};
use taskhub_storage::{CheckpointStore, PartitionRow, PartitionStore, StorageError};

async fn open(options: &PostgresOptions, hub: &str) -> Arc<PostgresStore> {
    Arc::new(
        PostgresStore::open(options, hub, Create::IfMissing)
            .await
            .unwrap(),
    )
}

async fn show(store: &PostgresStore, setting: &str) -> String {
    let client = store.raw_client().await.unwrap();
    let row = client
        .query_one(&format!("SHOW {setting}"), &[])
        .await
        .unwrap();
    row.get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_pins_isolation_timeouts_and_its_name() {
    let mut options = common::options();
    options.lock_timeout = Duration::from_secs(2);
    options.statement_timeout = Duration::from_secs(45);
    let store = open(&options, &common::fresh_hub_name("dba")).await;
    assert_eq!(
        show(&store, "default_transaction_isolation").await,
        "read committed"
    );
    assert_eq!(show(&store, "lock_timeout").await, "2s");
    assert_eq!(show(&store, "statement_timeout").await, "45s");
    assert_eq!(
        show(&store, "idle_in_transaction_session_timeout").await,
        "5s"
    );
    assert_eq!(show(&store, "search_path").await, store.schema());
    let name = show(&store, "application_name").await;
    assert!(
        name.starts_with("taskhub ") && name.ends_with(&std::process::id().to_string()),
        "{name}"
    );
}

/// A checkpoint whose insert waits behind another transaction's table lock fails `Busy`
/// after `lock_timeout`, and its `FOR SHARE` on the fence goes with it: a new owner's lease
/// write then goes through at once, while the lock is still held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_stuck_behind_a_lock_gives_up_and_frees_the_fence() {
    let mut options = common::options();
    options.lock_timeout = Duration::from_millis(500);
    let store = open(&options, &common::fresh_hub_name("dbalock")).await;
    store
        .create_hub(1, Timestamp::from_millis(1))
        .await
        .unwrap();
    let row = store.list_partitions().await.unwrap().remove(0);
    let leased = PartitionRow {
        owner: Some("w1".into()),
        epoch: 1,
        ..row.clone()
    };
    let etag = store
        .put_partition(&leased, row.etag.as_ref())
        .await
        .unwrap();

    let mut holder = store.raw_client().await.unwrap();
    let tx = holder.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE histories IN EXCLUSIVE MODE")
        .await
        .unwrap();
    let started = Instant::now();
    let err = store
        .checkpoint(common::append_request("stuck", None, 1))
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Busy { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(20), "gave up late");

    let moved = PartitionRow {
        owner: Some("w2".into()),
        epoch: 2,
        ..leased
    };
    let took = Instant::now();
    store.put_partition(&moved, Some(&etag)).await.unwrap();
    assert!(
        took.elapsed() < Duration::from_millis(400),
        "the lease write waited {:?}: the stuck checkpoint held the fence",
        took.elapsed()
    );
    tx.rollback().await.unwrap();
}

/// A migration waits for the two-key lock another session holds on the hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_take_the_two_key_advisory_lock() {
    let options = common::options();
    let hub = common::fresh_hub_name("dbamig");
    let store = open(&options, &hub).await;
    let mut holder = store.raw_client().await.unwrap();
    let tx = holder.transaction().await.unwrap();
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&MIGRATION_LOCK_CLASS, &store.schema()],
    )
    .await
    .unwrap();
    let opening = tokio::spawn({
        let options = options.clone();
        async move { PostgresStore::open(&options, &hub, Create::No).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !opening.is_finished(),
        "the open waits for the migration lock"
    );
    tx.rollback().await.unwrap();
    let reopened = tokio::time::timeout(Duration::from_secs(20), opening)
        .await
        .expect("the open goes on once the lock is released")
        .unwrap();
    assert!(reopened.is_ok(), "{reopened:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connections_prepared_statements_are_bounded() {
    let mut options = common::options();
    options.pool_size = 1;
    let store = open(&options, &common::fresh_hub_name("dbastmt")).await;
    {
        let client = store.raw_client().await.unwrap();
        for n in 0..STATEMENT_CACHE_MAX + 20 {
            client
                .prepare_cached(&format!("SELECT {n}::bigint"))
                .await
                .unwrap();
        }
        assert!(client.statement_cache.size() > STATEMENT_CACHE_MAX);
    }
    let client = store.raw_client().await.unwrap();
    assert!(client.statement_cache.size() <= STATEMENT_CACHE_MAX);
    let prepared: i64 = client
        .query_one("SELECT count(*) FROM pg_prepared_statements", &[])
        .await
        .unwrap()
        .get(0);
    assert!(
        usize::try_from(prepared).unwrap() <= STATEMENT_CACHE_MAX,
        "the server still holds {prepared} statements"
    );
}

async fn reloptions(store: &PostgresStore, table: &str) -> Vec<String> {
    let client = store.raw_client().await.unwrap();
    let row = client
        .query_one(
            "SELECT reloptions FROM pg_class WHERE oid = $1::text::regclass",
            &[&table],
        )
        .await
        .unwrap();
    row.get::<_, Option<Vec<String>>>(0).unwrap_or_default()
}

/// The autovacuum settings of the tables rewritten at every turn are set on a new hub; an
/// existing hub missing one gets it at its next open, and a value a DBA set stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hot_tables_keep_their_autovacuum_settings() {
    let options = common::options();
    let hub = common::fresh_hub_name("dbavac");
    let store = open(&options, &hub).await;
    for (table, settings) in TABLE_SETTINGS {
        let held = reloptions(&store, table).await;
        for s in *settings {
            assert!(held.iter().any(|h| h == s), "{table}: {s} not in {held:?}");
        }
    }
    let client = store.raw_client().await.unwrap();
    client
        .batch_execute("ALTER TABLE instances RESET (autovacuum_vacuum_scale_factor)")
        .await
        .unwrap();
    drop(client);
    assert!(!reloptions(&store, "instances")
        .await
        .iter()
        .any(|h| h.starts_with("autovacuum_vacuum_scale_factor")));
    let reopened = open(&options, &hub).await;
    assert!(reloptions(&reopened, "instances")
        .await
        .iter()
        .any(|h| h == "autovacuum_vacuum_scale_factor=0.02"));
    // A value a DBA chose stays.
    let client = reopened.raw_client().await.unwrap();
    client
        .batch_execute("ALTER TABLE histories SET (autovacuum_vacuum_scale_factor = 0.1)")
        .await
        .unwrap();
    drop(client);
    let again = open(&options, &hub).await;
    let held = reloptions(&again, "histories").await;
    assert!(
        held.iter()
            .any(|h| h == "autovacuum_vacuum_scale_factor=0.1"),
        "{held:?}"
    );
}
