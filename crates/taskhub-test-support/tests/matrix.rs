//! `backend_matrix!` makes one test per listed backend, in a module named after it, each
//! calling the body with its own backend.

use taskhub_test_support::{backend_matrix, Backend};

async fn memory_body(backend: Backend) {
    assert_eq!(backend, Backend::Memory);
}

async fn sqlite_body(backend: Backend) {
    assert_eq!(backend, Backend::Sqlite);
}

async fn any_body(backend: Backend) {
    assert!(
        matches!(backend, Backend::Memory | Backend::Sqlite),
        "{backend:?}"
    );
    assert_eq!(backend, Backend::named(backend.name()));
}

backend_matrix!([memory] memory_body, any_body);
backend_matrix!([sqlite] sqlite_body);

mod both {
    use super::Backend;

    async fn body(backend: Backend) {
        assert!(matches!(backend, Backend::Memory | Backend::Sqlite));
    }

    taskhub_test_support::backend_matrix!([memory, sqlite,] body,);
}

mod every {
    use super::Backend;

    async fn body(backend: Backend) {
        assert!(
            taskhub_backends::names().contains(&backend.name()),
            "{backend} is in BACKENDS"
        );
    }

    taskhub_test_support::backend_matrix!([every] body);

    /// The test of each backend of `BACKENDS` is there, under the backend's name.
    #[test]
    fn one_test_per_backend_under_its_name() {
        macro_rules! names {
            ([$($name:ident [$($suite:ident)*]),+]) => {
                vec![$(stringify!($name)),+]
            };
        }
        assert_eq!(
            taskhub_backends::for_each_backend!([names]),
            taskhub_backends::names()
        );
    }
}

/// `[in suite]` makes a test for exactly the backends whose registration line lists the suite,
/// for each suite of `taskhub_backends::SUITES` (an unknown suite does not compile).
mod in_suite {
    use super::Backend;

    fn lists(backend: Backend, suite: &str) -> bool {
        taskhub_backends::PROCESS_SUITES
            .iter()
            .any(|(name, suites)| *name == backend.name() && suites.contains(&suite))
    }

    macro_rules! suite_bodies {
        ($($suite:ident),+) => {
            $(
                mod $suite {
                    async fn body(backend: super::Backend) {
                        assert!(
                            super::lists(backend, stringify!($suite)),
                            "{backend} lists {}",
                            stringify!($suite)
                        );
                    }
                    taskhub_test_support::backend_matrix!([in $suite] body);
                }
            )+
            /// Every suite of `SUITES` has its `[in …]` rule, exercised above.
            #[test]
            fn every_suite_has_its_rule() {
                assert_eq!(taskhub_backends::SUITES, [$(stringify!($suite)),+]);
            }
        };
    }

    suite_bodies!(
        kill_and_pause,
        three_kills,
        paused_checkpoint,
        torn_entities
    );
}
