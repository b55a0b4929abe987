//! A directory of its own for one test.

use std::path::{Path, PathBuf};

/// A fresh directory under the system temp dir, removed on drop, except when the test is
/// failing: then it is kept (database, worker logs) for inspection and its path printed.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// Creates `taskhub-{tag}-{pid}-{nanos}` under the system temp dir.
    pub fn new(tag: &str) -> Self {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p = std::env::temp_dir().join(format!("taskhub-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `hub.db` in it: where the tests put a SQLite hub.
    pub fn db(&self) -> PathBuf {
        self.0.join("hub.db")
    }

    /// Keeps the directory after the test; returns its path.
    pub fn keep(self) -> PathBuf {
        let p = self.0.clone();
        std::mem::forget(self);
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for inspection: {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
