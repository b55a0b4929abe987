//! The backend matrix: one test body run on several backends, one `#[tokio::test]` per
//! backend in a module named after it (`memory::name`, `sqlite::name`, `azure::name`), so
//! `cargo test sqlite::` runs one backend. `[every]` is every backend of
//! `taskhub_backends::BACKENDS`, so a new backend is in each such matrix with no edit here;
//! `[in suite]` is every backend whose registration line lists that worker-process suite.

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
/// // the backends whose registration line lists the worker-process suite `three_kills`
/// // (one of taskhub_backends::SUITES; another name does not compile):
/// taskhub_test_support::backend_matrix!([in three_kills] lose_nothing);
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
    // From `for_each_backend!`: every backend, each with the suites its line lists.
    ([$($backend:ident [$($suite:ident)*]),+] @every $($name:ident),+) => {
        $crate::backend_matrix!([$($backend),+] $($name),+);
    };
    ([] @in $want:ident $($name:ident),+) => {};
    ([$b:ident [$($s:ident)*] $(, $rb:ident [$($rs:ident)*])*] @in $want:ident $($name:ident),+) => {
        $crate::backend_matrix!(@pick $want $b [$($s)*] $($name),+);
        $crate::backend_matrix!([$($rb [$($rs)*]),*] @in $want $($name),+);
    };
    // A backend lists the suite wanted: its tests. Each suite of `taskhub_backends::SUITES`
    // has its rule (macro patterns compare names only as literals).
    (@pick kill_and_pause $b:ident [kill_and_pause $($s:ident)*] $($n:ident),+) => {
        $crate::backend_matrix!(@module $b $($n),+);
    };
    (@pick three_kills $b:ident [three_kills $($s:ident)*] $($n:ident),+) => {
        $crate::backend_matrix!(@module $b $($n),+);
    };
    (@pick paused_checkpoint $b:ident [paused_checkpoint $($s:ident)*] $($n:ident),+) => {
        $crate::backend_matrix!(@module $b $($n),+);
    };
    (@pick torn_entities $b:ident [torn_entities $($s:ident)*] $($n:ident),+) => {
        $crate::backend_matrix!(@module $b $($n),+);
    };
    (@pick $want:ident $b:ident [$other:ident $($s:ident)*] $($n:ident),+) => {
        $crate::backend_matrix!(@pick $want $b [$($s)*] $($n),+);
    };
    (@pick $want:ident $b:ident [] $($n:ident),+) => {};
    (@known kill_and_pause) => {};
    (@known three_kills) => {};
    (@known paused_checkpoint) => {};
    (@known torn_entities) => {};
    (@known $other:ident) => {
        compile_error!(concat!(
            "no worker-process suite `",
            stringify!($other),
            "` (taskhub_backends::SUITES lists them)"
        ));
    };
    ([every] $($name:ident),+ $(,)?) => {
        ::taskhub_backends::for_each_backend!([$crate::backend_matrix] @every $($name),+);
    };
    ([in $want:ident] $($name:ident),+ $(,)?) => {
        $crate::backend_matrix!(@known $want);
        ::taskhub_backends::for_each_backend!([$crate::backend_matrix] @in $want $($name),+);
    };
    ([] $($name:ident),+ $(,)?) => {};
    ([$first:ident $(, $rest:ident)* $(,)?] $($name:ident),+ $(,)?) => {
        $crate::backend_matrix!(@module $first $($name),+);
        $crate::backend_matrix!([$($rest),*] $($name),+);
    };
}
