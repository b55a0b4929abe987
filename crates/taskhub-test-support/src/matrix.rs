//! The backend matrix: one test body run on several backends, one `#[tokio::test]` per
//! backend in a module named after it (`memory::name`, `sqlite::name`, `azure::name`), so
//! `cargo test sqlite::` runs one backend.

/// A backend a test body runs on. How a test opens it is the test's own (most through
/// `taskhub_backends` by [`Backend::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The in-memory store.
    Memory,
    /// SQLite, in a file of a temp dir.
    Sqlite,
    /// Azure Storage: a fresh hub on the account `TASKHUB_TEST_AZURE_CONNECTION_STRING` names
    /// (Azurite under `scripts/with-azurite.sh`).
    Azure,
    /// PostgreSQL: a fresh hub (schema) on the server `TASKHUB_TEST_POSTGRES_URL` names (a
    /// throwaway cluster under `scripts/with-postgres.sh`).
    Postgres,
}

impl Backend {
    /// Its name in `taskhub_backends::BACKENDS`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Azure => "azure",
            Self::Postgres => "postgres",
        }
    }
}

/// Runs each named `async fn name(backend: Backend)` of the calling module on each listed
/// backend (`memory`, `sqlite`, `azure`, `postgres`), as a multi-thread `#[tokio::test]` in a module named
/// after the backend:
///
/// ```ignore
/// taskhub_test_support::backend_matrix!([memory, sqlite, azure] start_and_status, purge);
/// ```
#[macro_export]
macro_rules! backend_matrix {
    (@variant memory) => { $crate::Backend::Memory };
    (@variant sqlite) => { $crate::Backend::Sqlite };
    (@variant azure) => { $crate::Backend::Azure };
    (@variant postgres) => { $crate::Backend::Postgres };
    (@module $backend:ident $($name:ident),+) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::backend_matrix!(@variant $backend)).await
                }
            )+
        }
    };
    ([] $($name:ident),+ $(,)?) => {};
    ([$first:ident $(, $rest:ident)* $(,)?] $($name:ident),+ $(,)?) => {
        $crate::backend_matrix!(@module $first $($name),+);
        $crate::backend_matrix!([$($rest),*] $($name),+);
    };
}
