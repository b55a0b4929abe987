//! What the workspace's tests share, so that a test file holds only its test: a temp dir
//! ([`TempDir`]), the variables of the test environment and how to set them ([`env`]), waits on
//! observable state ([`wait`]), the backend matrix ([`Backend`], [`backend_matrix!`]) and
//! shared fixtures (`tally`, feature `fixtures`, on by default: the only part that needs the
//! runtime).
//!
//! A dev-dependency only (`publish = false`); its helpers panic with what went wrong, as tests
//! do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    reason = "test support: a failed expectation fails the test that called it; waits and temp \
              names run on real time, as tests do"
)]

pub mod env;
mod matrix;
#[cfg(feature = "fixtures")]
pub mod tally;
mod temp_dir;
pub mod wait;

pub use matrix::Backend;
pub use temp_dir::TempDir;
