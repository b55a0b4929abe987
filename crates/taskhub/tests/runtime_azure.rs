//! The runtime end-to-end suite (`common/runtime_suite.rs`) on Azure Storage: run it with
//! Azurite up, `scripts/with-azurite.sh cargo test -p taskhub --test runtime_azure`
//! (`scripts/test.sh` does this). Without `TASKHUB_TEST_AZURE_CONNECTION_STRING` every test
//! fails, saying how to run it. Each test uses a hub of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/runtime_suite.rs"]
mod runtime_suite;

runtime_suite!(backends::Backend::Azure);
