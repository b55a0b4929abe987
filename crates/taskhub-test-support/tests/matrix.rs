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
            ([$($name:ident),+]) => {
                vec![$(stringify!($name)),+]
            };
        }
        assert_eq!(
            taskhub_backends::for_each_backend!([names]),
            taskhub_backends::names()
        );
    }
}
