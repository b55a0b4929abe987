//! Test hooks (feature `testing`): the backend's test configuration (where a test's fresh hub
//! goes, listed by `taskhub_backends::testing`), damage a stored event, for the runtime's tests
//! of a corrupt store.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use taskhub_core::InstanceId;
use taskhub_storage::backend::{OpenedStore, OptionValue};
use taskhub_storage::{StorageError, StorageResult};

use crate::errors::SqlResultExt;
use crate::{SqliteBackend, SqliteStore};

impl SqliteBackend {
    /// A hub opened again from its file is the same hub.
    pub const TEST_HUBS_SHARED: bool = true;

    /// The options of a test's fresh hub: the file `dir/hub.db` (`hub_name` is not used).
    #[must_use]
    pub fn test_hub_options(dir: &Path, _hub_name: &str) -> Vec<OptionValue> {
        vec![OptionValue::new(
            "sqlite.path",
            dir.join("hub.db").display().to_string(),
            "the test",
        )]
    }

    /// [`corrupt_history_event`] in the file of the SQLite store `opened` holds.
    ///
    /// # Errors
    /// `InvalidArgument` if `opened` is not a SQLite store; as [`corrupt_history_event`].
    pub async fn corrupt_history_event(
        opened: &OpenedStore,
        id: &InstanceId,
        seq: u64,
    ) -> StorageResult<()> {
        let store = opened.require::<SqliteStore>("a SQLite store")?;
        corrupt_history_event(store.path(), id, seq)
    }
}

/// Overwrites event `seq` of the instance's stored history, in the hub file at `path`, with
/// text that is not an event (the rest of its chunk stays as it was).
///
/// # Errors
/// `NotFound` if there is no such event; as any statement otherwise.
pub fn corrupt_history_event(path: &Path, id: &InstanceId, seq: u64) -> StorageResult<()> {
    let seq = i64::try_from(seq).map_err(|_| StorageError::InvalidArgument("seq".into()))?;
    let not_found = || StorageError::NotFound {
        what: format!("event {seq} of instance '{id}'"),
    };
    let conn = Connection::open(path).ctx("test hook")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .ctx("test hook")?;
    let chunk: Option<(i64, i64, String)> = conn
        .query_row(
            "SELECT c.id, i.seq, c.events FROM history_index i
             JOIN history_chunks c ON c.id = i.chunk
             WHERE i.instance_id = ?1 AND i.seq >= 0 AND i.seq <= ?2
             ORDER BY i.seq DESC LIMIT 1",
            params![id.as_str(), seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .ctx("history")?;
    let (chunk, first, events) = chunk.ok_or_else(not_found)?;
    let at = usize::try_from(seq - first).map_err(|_| not_found())?;
    let mut lines: Vec<&str> = events.split('\n').collect();
    let line = lines.get_mut(at).ok_or_else(not_found)?;
    *line = "{\"v\":1,\"garbage";
    conn.execute(
        "UPDATE history_chunks SET events = ?1 WHERE id = ?2",
        params![lines.join("\n"), chunk],
    )
    .ctx("history")?;
    Ok(())
}

/// Makes the hub file at `path` look migrated by a newer build under the processes that have
/// it open: the history index is renamed away and the schema version set past this build's.
///
/// # Errors
/// As any statement.
pub fn simulate_newer_migration(path: &Path) -> StorageResult<()> {
    let conn = Connection::open(path).ctx("test hook")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .ctx("test hook")?;
    conn.execute_batch("ALTER TABLE history_index RENAME TO history_index_of_a_newer_build")
        .ctx("test hook")?;
    conn.pragma_update(None, "user_version", crate::schema::latest_version() + 1)
        .ctx("test hook")
}
