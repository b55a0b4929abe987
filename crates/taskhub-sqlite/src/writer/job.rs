//! One queued write: its work, its result, and how its caller is answered.

use taskhub_storage::{StorageError, StorageResult};
use tokio::sync::oneshot;

use super::apply::Tx;

/// A write the writer thread runs in a batch.
pub(super) trait Job: Send {
    /// Runs the write; true if it succeeded (and its writes, or its savepoint, are to be kept).
    /// A job may run again after its transaction was rolled back (see `apply`); the last run's
    /// result counts.
    fn run(&mut self, tx: &Tx<'_>) -> bool;
    /// True if the write may commit without an fsync (see the module docs).
    fn relaxed(&self) -> bool;
    /// Answers the caller once the batch's fate is known.
    fn finish(self: Box<Self>, commit: Result<(), StorageError>);
}

/// Where a queued write's answer goes: the answer, and the work itself, so that what the work
/// owns (a checkpoint's events and messages, allocated on the caller's thread) is freed there
/// too. Freed on the writer thread, each block would go back to the caller thread's allocator
/// pages as a cross-thread free, which that thread has to collect before reusing them.
pub(super) type Reply<T, F> = oneshot::Sender<(StorageResult<T>, F)>;

/// A write returning `T`, and where its answer goes (none when it runs on the caller's thread).
pub(super) struct TypedJob<T, F> {
    pub(super) relaxed: bool,
    pub(super) work: F,
    pub(super) result: Option<StorageResult<T>>,
    pub(super) reply: Option<Reply<T, F>>,
}

impl<T, F> TypedJob<T, F> {
    /// The caller's answer: its own error, else the batch's.
    pub(super) fn answer(self, commit: Result<(), StorageError>) -> StorageResult<T> {
        answer_of(self.result, commit)
    }
}

/// A job's answer from its own result and its batch's commit.
fn answer_of<T>(
    result: Option<StorageResult<T>>,
    commit: Result<(), StorageError>,
) -> StorageResult<T> {
    match (result, commit) {
        (Some(Err(own)), _) => Err(own),
        (Some(Ok(value)), Ok(())) => Ok(value),
        (_, Err(batch)) => Err(batch),
        (None, Ok(())) => Err(StorageError::Backend("a write was never run".into())),
    }
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: Fn(&Tx<'_>) -> StorageResult<T> + Send,
{
    fn run(&mut self, tx: &Tx<'_>) -> bool {
        let result = (self.work)(tx);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn relaxed(&self) -> bool {
        self.relaxed
    }

    fn finish(self: Box<Self>, commit: Result<(), StorageError>) {
        let TypedJob {
            work,
            result,
            reply,
            ..
        } = *self;
        let answer = answer_of(result, commit);
        // The caller may have stopped waiting; the write stands either way.
        if let Some(reply) = reply {
            let _ = reply.send((answer, work));
        }
    }
}
