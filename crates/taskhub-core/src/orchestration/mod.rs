//! The orchestration programming model: context, task futures, combinators, retry, errors.

pub mod combinators;
pub mod context;
pub mod entities;
pub mod error;
pub mod events;
pub mod retry;
pub(crate) mod state;
pub mod task;

pub use state::{LogLevel, LogRecord};
