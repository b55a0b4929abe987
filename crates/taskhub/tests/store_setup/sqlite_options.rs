//! A library user configures the SQLite backend from `taskhub.toml`: the `[sqlite]` table is
//! read by the SQLite crate (`SqliteOptions::from_config`), the runtime settings ignore it, and
//! `[sqlite] durability = "full"` really gives `PRAGMA synchronous = FULL`.

use std::collections::HashMap;
use std::sync::Arc;

use taskhub::*;
use taskhub_sqlite::{Durability, SqliteOptions, SqliteStore};

#[tokio::test]
async fn a_settings_file_with_sqlite_durability_full_gives_synchronous_full() {
    let dir = std::env::temp_dir().join(format!("taskhub-sqlite-options-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("taskhub.toml");
    let db = dir.join("hub.db");
    std::fs::write(
        &file,
        format!(
            "partition_count = 2\n\n[sqlite]\npath = {:?}\ndurability = \"full\"\nbusy_timeout = \"2s\"\n",
            db.display().to_string()
        ),
    )
    .unwrap();

    let settings = Settings::load(Some(&file), &HashMap::new()).unwrap();
    assert_eq!(settings.partition_count, 2);
    let options = SqliteOptions::from_config("unused.db", Some(&file), &HashMap::new()).unwrap();
    assert_eq!(options.path, db);
    let store = SqliteStore::open(options).unwrap();
    assert_eq!(store.durability(), Durability::Full);
    // 2 = FULL, on the connection that commits.
    assert_eq!(store.writer_pragma("synchronous").await.unwrap(), "2");
    let hub = TaskHub::open(Arc::new(store), settings).await.unwrap();
    assert_eq!(hub.partition_count(), 2);

    // Without the table: the default, NORMAL (1).
    std::fs::write(&file, "partition_count = 2\n").unwrap();
    let options =
        SqliteOptions::from_config(dir.join("other.db"), Some(&file), &HashMap::new()).unwrap();
    let store = SqliteStore::open(options).unwrap();
    assert_eq!(store.writer_pragma("synchronous").await.unwrap(), "1");

    // The old top-level key is refused with a pointer to where it belongs.
    std::fs::write(&file, "durability = \"full\"\n").unwrap();
    let err = Settings::load(Some(&file), &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("[sqlite]") && err.contains("taskhub.toml"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
