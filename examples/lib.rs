//! What the examples in this directory share. Run them from the repository root:
//!
//! * `cargo run --example hello`: the README's whole program, end to end;
//! * `cargo run --example worker_and_client`: a worker and a client in two processes;
//! * `cargo run --example retries_and_compensation`: retries with a predicate, and a saga
//!   that undoes its bookings when a step fails for good.
//!
//! Each exits with a non-zero code if its result is not the expected one.

use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory, removed (with the task hub file
/// in it) when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `taskhub-example-<tag>-<pid>-<nanos>` in the temporary directory.
    ///
    /// # Errors
    /// The directory could not be created.
    pub fn new(tag: &str) -> std::io::Result<Self> {
        #[expect(
            clippy::disallowed_methods,
            reason = "a directory name unique across runs, not a decision about time"
        )]
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "taskhub-example-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path)?;
        Ok(Self { path })
    }

    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// An error for a result that is not the expected one (the example then exits with code 1).
#[must_use]
pub fn wrong(what: impl std::fmt::Display) -> Box<dyn std::error::Error> {
    format!("wrong result: {what}").into()
}
