//! The backend matrix: one test body run on several backends, one `#[tokio::test]` per
//! backend in a module named after it (`memory::name`, `sqlite::name`, `azure::name`), so
//! `cargo test sqlite::` runs one backend. `[every]` is every backend of
//! `taskhub_backends::BACKENDS`, so a new backend is in each such matrix with no edit here.

/// A backend a test body runs on, by its name in `taskhub_backends::BACKENDS`. How a test
/// opens it is the test's own (most through `taskhub_backends` by [`Backend::name`], or
/// `taskhub_backends::testing::test_hub`).
///
/// Any name makes one ([`Backend::named`]); the constants are shorthands for tests that pin a
/// backend, not a list of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backend(&'static str);

#[allow(
    non_upper_case_globals,
    reason = "read as the variants of the closed list they replace: `Backend::Sqlite`"
)]
impl Backend {
    /// The in-memory store.
    pub const Memory: Self = Self("memory");
    /// SQLite, in a file of a temp dir.
    pub const Sqlite: Self = Self("sqlite");
    /// Azure Storage: a fresh hub on the account `TASKHUB_TEST_AZURE_CONNECTION_STRING` names
    /// (Azurite under `scripts/with-azurite.sh`).
    pub const Azure: Self = Self("azure");
    /// PostgreSQL: a fresh hub (schema) on the server `TASKHUB_TEST_POSTGRES_URL` names (a
    /// throwaway cluster under `scripts/with-postgres.sh`).
    pub const Postgres: Self = Self("postgres");

    /// The backend called `name` in `taskhub_backends::BACKENDS`.
    #[must_use]
    pub const fn named(name: &'static str) -> Self {
        Self(name)
    }

    /// Its name in `taskhub_backends::BACKENDS`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Runs each named `async fn name(backend: Backend)` of the calling module on each listed
/// backend, as a multi-thread `#[tokio::test]` in a module named after the backend:
///
/// ```ignore
/// taskhub_test_support::backend_matrix!([memory, sqlite, azure] start_and_status, purge);
/// // every backend of taskhub_backends::BACKENDS (the caller depends on taskhub-backends):
/// taskhub_test_support::backend_matrix!([every] start_and_status, purge);
/// ```
#[macro_export]
macro_rules! backend_matrix {
    (@module $backend:ident $($name:ident),+) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::named(stringify!($backend))).await
                }
            )+
        }
    };
    ([every] $($name:ident),+ $(,)?) => {
        ::taskhub_backends::for_each_backend!([$crate::backend_matrix] $($name),+);
    };
    ([] $($name:ident),+ $(,)?) => {};
    ([$first:ident $(, $rest:ident)* $(,)?] $($name:ident),+ $(,)?) => {
        $crate::backend_matrix!(@module $first $($name),+);
        $crate::backend_matrix!([$($rest),*] $($name),+);
    };
}
