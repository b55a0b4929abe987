//! The storage seam's conformance suite on a throwaway PostgreSQL server:
//! `scripts/with-postgres.sh cargo test -p taskhub-postgres` (scripts/test.sh does this).
//! Without `TASKHUB_TEST_POSTGRES_URL` every case fails, saying so.

mod common;

taskhub_storage::conformance_tests!(common::fresh_store);
