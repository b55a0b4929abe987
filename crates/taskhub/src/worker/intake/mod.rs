//! The intake stage: where messages enter the worker. The lease manager's host starts a
//! control-queue poller per held partition (`partitions`); a poller prefetches within the
//! buffer, groups messages by instance and hands each group to the instance's session
//! (`control`); the session (`session`) joins what arrives while it works, holds timers that
//! came early and batches waiting for their execution's start, and hands each batch to the
//! entity or orchestration stage. A partition being removed is drained and forwarded instead
//! (`retire`).

pub(crate) mod control;
pub(crate) mod partitions;
mod retire;
mod session;
