//! Upgrades against a real server: a migration refuses while a process of an older build is
//! alive (named), goes ahead once it is stale or gone, and a heartbeat after a newer build's
//! migration says "newer build". Run with
//! `scripts/with-postgres.sh cargo test -p taskhub-postgres --test upgrades`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use taskhub_core::Timestamp;
use taskhub_postgres::schema::latest_version;
use taskhub_storage::{
    PartitionStore, ProcessAnnouncement, ProcessKind, ProcessStore, StorageError,
};

const NEXT: &str = "CREATE TABLE next_feature (x bigint);";

fn serve() -> ProcessAnnouncement {
    ProcessAnnouncement {
        id: "old-serve".into(),
        kind: ProcessKind::Serve,
        host: "box-1".into(),
        pid: 321,
        build_version: "0.9.0".into(),
    }
}

#[tokio::test]
async fn a_migration_waits_for_older_processes_and_a_newer_schema_is_named() {
    let store = common::fresh_store(taskhub_storage::conformance::start_clock()).await;
    store
        .create_hub(1, Timestamp::from_millis(1))
        .await
        .unwrap();
    // A live process of this build (older than the migration below), with no lease.
    store.announce_process(&serve()).await.unwrap();
    let err = store.migrate_with_next(NEXT).await.unwrap_err();
    assert!(
        matches!(err, StorageError::OlderProcesses { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    for part in ["old-serve", "box-1", "pid 321", "0.9.0"] {
        assert!(text.contains(part), "{part} missing: {text}");
    }
    assert_eq!(
        store.stored_schema().await.unwrap(),
        u32::try_from(latest_version()).unwrap(),
        "nothing migrated"
    );
    // Its heartbeat goes stale (written an hour ago by the server's clock).
    store
        .raw_client()
        .await
        .unwrap()
        .execute(
            "UPDATE processes SET heartbeat_at = heartbeat_at - 3600000",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        store.migrate_with_next(NEXT).await.unwrap(),
        latest_version() + 1
    );
    // The old process, back, hears of it.
    let err = store.heartbeat_process("old-serve").await.unwrap_err();
    assert!(matches!(err, StorageError::NewerSchema { .. }), "{err:?}");
    assert!(
        err.to_string().contains("written by a newer build"),
        "{err}"
    );
}
