//! Deleting a whole SQLite task hub: its database file and the files SQLite keeps beside it
//! (the `-wal` log, the `-shm` index, a rollback `-journal`). The counterpart of
//! `AzureStore::delete_hub` in `taskhub-azure`; `taskhub hub delete` calls it.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use taskhub_storage::{StorageError, StorageResult};

/// The suffixes of a hub's files: the database itself (`""`), then the files SQLite keeps
/// beside it, named after it.
pub const HUB_FILE_SUFFIXES: [&str; 4] = ["", "-wal", "-shm", "-journal"];

/// The files [`delete_hub_files`] deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeletedFiles {
    /// Each file that existed and is gone now, in the order of [`HUB_FILE_SUFFIXES`].
    pub paths: Vec<PathBuf>,
}

impl DeletedFiles {
    /// True if there was nothing to delete (no file of the hub existed).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// Deletes the SQLite task hub at `path`: the database file and its `-wal`, `-shm` and
/// `-journal` files, with every instance, history, message and dead letter in them.
///
/// Close every store of the hub first (drop each [`SqliteStore`](crate::SqliteStore), stop
/// the workers in other processes): a store still open keeps writing to files nobody can open
/// again, and the next open creates an empty hub. A file that does not exist is not an error;
/// deleting a hub that is already gone (or never was) returns an empty [`DeletedFiles`].
///
/// ```
/// # fn main() -> Result<(), taskhub_storage::StorageError> {
/// let path = std::env::temp_dir().join(format!("doc-delete-{}.db", std::process::id()));
/// let store = taskhub_sqlite::SqliteStore::open(taskhub_sqlite::SqliteOptions::new(&path))?;
/// drop(store);
/// let deleted = taskhub_sqlite::delete_hub_files(&path)?;
/// assert!(deleted.paths.contains(&path));
/// assert!(!path.exists());
/// assert!(taskhub_sqlite::delete_hub_files(&path)?.is_empty(), "nothing left to delete");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// The first file that exists but cannot be deleted (permissions, a directory in its place),
/// as `StorageError::Backend` naming it (`Unavailable`, retryable, for an interrupted or
/// timed-out call); the files before it in [`HUB_FILE_SUFFIXES`] are deleted already.
pub fn delete_hub_files(path: impl AsRef<Path>) -> StorageResult<DeletedFiles> {
    let path = path.as_ref();
    let mut deleted = DeletedFiles::default();
    for suffix in HUB_FILE_SUFFIXES {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::remove_file(&file) {
            Ok(()) => deleted.paths.push(file),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                let detail = format!("cannot delete {}: {e}", file.display());
                return Err(match e.kind() {
                    ErrorKind::Interrupted | ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                        StorageError::Unavailable(detail)
                    }
                    _ => StorageError::Backend(detail),
                });
            }
        }
    }
    Ok(deleted)
}
