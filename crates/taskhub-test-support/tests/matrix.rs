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
