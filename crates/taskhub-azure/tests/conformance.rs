//! The storage seam's conformance suite on Azurite (or any account):
//! `scripts/with-azurite.sh cargo test -p taskhub-azure` (scripts/test.sh does this).
//! Without `TASKHUB_TEST_AZURE_CONNECTION_STRING` every case fails, saying so.

mod common;

taskhub_storage::conformance_tests!(common::fresh_store);
