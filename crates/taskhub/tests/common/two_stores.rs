//! One scenario as two tests: on a fresh memory store and on a fresh SQLite file.

/// Defines two multi-threaded tests of the async fn `$body(store: Arc<dyn TaskHubStore>)`:
/// `$memory` on a fresh memory store, `$sqlite` on a SQLite file in a fresh directory named
/// after `$dir`. Attributes before a name (doc comments) go to that test.
#[allow(unused_macros, reason = "not every test binary uses it")]
macro_rules! memory_and_sqlite {
    ($body:ident, $dir:literal: $(#[$m:meta])* $memory:ident, $(#[$s:meta])* $sqlite:ident $(,)?) => {
        $(#[$m])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $memory() {
            $body(crate::common::stores::memory_store()).await;
        }

        $(#[$s])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            let dir = crate::common::TempDir::new($dir);
            $body(crate::common::sqlite_store(&dir.0)).await;
        }
    };
}
#[allow(unused_imports, reason = "not every test binary uses it")]
pub(crate) use memory_and_sqlite;
