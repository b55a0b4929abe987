//! `delete_hub_files`: a closed hub's database and the files beside it are deleted, what was
//! deleted is reported, and files that are missing are not an error.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use taskhub_core::InstanceId;
use taskhub_sqlite::{delete_hub_files, SqliteOptions, SqliteStore, HUB_FILE_SUFFIXES};
use taskhub_storage::PayloadStore as _;

/// A fresh directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let n = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p = std::env::temp_dir().join(format!("taskhub-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Every file in the directory.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_closed_hub_is_deleted_with_every_file_beside_it() {
    let dir = Dir::new("delete-hub");
    let db = dir.0.join("hub.db");
    let instance = InstanceId::new("i-1").unwrap();

    let store = SqliteStore::open(SqliteOptions::new(&db)).unwrap();
    store
        .put_payload(&instance, "in", b"kept until deleted".to_vec())
        .await
        .unwrap();
    drop(store);
    assert!(db.exists());
    // What a process killed while it had the hub open leaves beside it (SQLite removes the
    // -wal and -shm itself when the last connection closes cleanly).
    for suffix in ["-wal", "-shm", "-journal"] {
        std::fs::write(with_suffix(&db, suffix), b"left over").unwrap();
    }
    // A file that only shares the prefix is not the hub's.
    let other = dir.0.join("hub.db.bak");
    std::fs::write(&other, b"not the hub").unwrap();

    let deleted = delete_hub_files(&db).unwrap();
    let expected: Vec<PathBuf> = HUB_FILE_SUFFIXES
        .iter()
        .map(|s| with_suffix(&db, s))
        .collect();
    assert_eq!(deleted.paths, expected);
    assert_eq!(files_in(&dir.0), [other], "only the other file is left");

    // Nothing left to delete: not an error, and nothing reported.
    let again = delete_hub_files(&db).unwrap();
    assert!(again.is_empty(), "{again:?}");

    // Opening the path again is a new, empty hub.
    let store = SqliteStore::open(SqliteOptions::new(&db)).unwrap();
    assert_eq!(store.get_payload(&instance, "in").await.unwrap(), None);
}

#[tokio::test]
async fn only_the_files_that_exist_are_reported() {
    let dir = Dir::new("delete-hub-some");
    let db = dir.0.join("hub.db");
    let store = SqliteStore::open(SqliteOptions::new(&db)).unwrap();
    drop(store);
    let deleted = delete_hub_files(&db).unwrap();
    assert!(deleted.paths.contains(&db), "{deleted:?}");
    assert!(files_in(&dir.0).is_empty(), "{:?}", files_in(&dir.0));
}

#[test]
fn a_file_that_cannot_be_deleted_is_a_typed_error_naming_it() {
    let dir = Dir::new("delete-hub-dir");
    let db = dir.0.join("hub.db");
    // A directory where the database should be: remove_file refuses it.
    std::fs::create_dir(&db).unwrap();
    let e = delete_hub_files(&db).unwrap_err();
    assert!(!e.is_retryable(), "{e}");
    assert!(e.to_string().contains("hub.db"), "{e}");
    assert!(db.exists());
}
