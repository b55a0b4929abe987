//! Mapping SQLite's errors onto [`StorageError`].

use std::time::Duration;

use rusqlite::ErrorCode;
use taskhub_storage::StorageError;

/// The back-off hint given with a `Busy` error.
const BUSY_RETRY_AFTER: Duration = Duration::from_millis(50);

/// Maps a rusqlite error; `what` names the object the operation touched (for messages).
///
/// * `BUSY` / `LOCKED` (the busy timeout ran out) → `Busy`, retryable.
/// * I/O errors, a full disk, a file that cannot be opened → `Unavailable`, retryable.
/// * `NOTADB` / `CORRUPT`, and values that do not convert back → `Corrupt`.
/// * A constraint violation (a conditional insert that lost a race) → `Conflict`.
/// * Anything else → `Backend`.
pub(crate) fn map_sql(what: &str, err: rusqlite::Error) -> StorageError {
    use rusqlite::Error as E;
    match err {
        E::SqliteFailure(code, message) => {
            let detail = message.unwrap_or_else(|| code.to_string());
            match code.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => StorageError::Busy {
                    retry_after: Some(BUSY_RETRY_AFTER),
                },
                ErrorCode::SystemIoFailure
                | ErrorCode::DiskFull
                | ErrorCode::CannotOpen
                | ErrorCode::FileLockingProtocolFailed
                | ErrorCode::OutOfMemory
                | ErrorCode::OperationInterrupted => {
                    StorageError::Unavailable(format!("{what}: {detail}"))
                }
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => StorageError::Corrupt {
                    what: what.to_owned(),
                    detail,
                },
                ErrorCode::ConstraintViolation => StorageError::Conflict {
                    what: what.to_owned(),
                },
                _ => StorageError::Backend(format!("{what}: {detail}")),
            }
        }
        E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..)
        | E::Utf8Error(..)
        | E::InvalidColumnType(..) => StorageError::Corrupt {
            what: what.to_owned(),
            detail: err.to_string(),
        },
        other => StorageError::Backend(format!("{what}: {other}")),
    }
}

/// A `Corrupt` error for a stored value that does not decode.
pub(crate) use taskhub_storage::sql::codec::corrupt;

/// Extension to map rusqlite results with a context.
pub(crate) trait SqlResultExt<T> {
    /// Maps the error with [`map_sql`].
    fn ctx(self, what: &str) -> Result<T, StorageError>;
}

impl<T> SqlResultExt<T> for Result<T, rusqlite::Error> {
    fn ctx(self, what: &str) -> Result<T, StorageError> {
        self.map_err(|e| map_sql(what, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn maps_codes_to_the_seam_variants() {
        assert!(map_sql("x", failure(rusqlite::ffi::SQLITE_BUSY)).is_retryable());
        assert!(matches!(
            map_sql("x", failure(rusqlite::ffi::SQLITE_LOCKED)),
            StorageError::Busy { .. }
        ));
        assert!(matches!(
            map_sql("x", failure(rusqlite::ffi::SQLITE_IOERR)),
            StorageError::Unavailable(_)
        ));
        assert!(matches!(
            map_sql("db", failure(rusqlite::ffi::SQLITE_NOTADB)),
            StorageError::Corrupt { what, .. } if what == "db"
        ));
        assert!(matches!(
            map_sql("row", failure(rusqlite::ffi::SQLITE_CONSTRAINT)),
            StorageError::Conflict { what } if what == "row"
        ));
        assert!(matches!(
            map_sql("x", rusqlite::Error::InvalidQuery),
            StorageError::Backend(_)
        ));
    }
}
