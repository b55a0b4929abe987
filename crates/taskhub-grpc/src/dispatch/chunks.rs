//! Chunked completions: a turn's answer sent in parts (`OrchestratorResponse.isPartial`,
//! `chunkIndex`, deprecated in the protocol but still sent by the .NET worker,
//! `GrpcDurableTaskWorker.Processor.cs` `CompleteOrchestratorTaskWithChunkingAsync`, and the
//! Java worker since 1.6, `DurableTaskGrpcWorker.java` `completeOrchestratorTaskWithChunking`,
//! when an answer is over their chunk size, 4 MB by default). Every part carries the item's
//! token, the instance ID and the custom status; part `n` carries `chunkIndex = n`, counted
//! from 0; all but the last say `isPartial`. The parts are kept with their work item (which
//! stays out meanwhile) and put together into one answer when the last comes, bounded in
//! actions and bytes; a part out of order, or one for a sequence that was never begun, is
//! refused naming what was expected, and the parts so far are dropped (the worker can start
//! over from part 0 while the item is out).

use crate::proto::{OrchestratorAction, OrchestratorResponse};

/// The parts of one answer received so far.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    /// The index the next part must carry.
    next: i32,
    /// The first part, without its actions (its instance, status, trace context).
    head: Option<OrchestratorResponse>,
    actions: Vec<OrchestratorAction>,
    /// The encoded size of the parts so far.
    bytes: usize,
}

/// The bounds of an assembled answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkLimits {
    /// The most actions in all.
    pub(crate) actions: usize,
    /// The most encoded bytes in all.
    pub(crate) bytes: usize,
}

/// Why a part was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ChunkError {
    /// A part that says `isPartial` but carries no index.
    #[error("isPartial: a partial answer needs its chunkIndex (0 for the first part)")]
    NoIndex,
    /// A part whose index is not the one expected.
    #[error(
        "chunkIndex: part {got} came where part {expected} was expected (parts go in order from \
         0; the parts so far are dropped: send the answer again from part 0)"
    )]
    OutOfOrder {
        /// The index expected.
        expected: i32,
        /// The index received.
        got: i32,
    },
    /// The parts together would be over a bound.
    #[error(
        "chunked answer: {what} would be {got} with this part, over the limit of {limit} \
         ({setting}); the parts so far are dropped"
    )]
    TooLarge {
        /// What is counted.
        what: &'static str,
        /// Its value with this part.
        got: usize,
        /// The limit.
        limit: usize,
        /// The setting that sets it.
        setting: &'static str,
    },
}

/// Whether `r` is one part of a chunked answer (not a whole answer).
#[expect(deprecated, reason = "reading the deprecated chunking fields")]
pub(crate) fn is_part(r: &OrchestratorResponse) -> bool {
    r.is_partial || r.chunk_index.is_some_and(|i| i > 0)
}

impl Assembly {
    /// Adds `part`: `Ok(Some(answer))` once the last part is in, `Ok(None)` while more are
    /// to come.
    ///
    /// # Errors
    /// [`ChunkError`] naming what is wrong; the assembly is then empty again.
    #[expect(deprecated, reason = "reading the deprecated chunking fields")]
    pub(crate) fn add(
        &mut self,
        mut part: OrchestratorResponse,
        limits: ChunkLimits,
    ) -> Result<Option<OrchestratorResponse>, ChunkError> {
        let result = self.take_part(&mut part, limits);
        if result.is_err() {
            *self = Self::default();
        }
        result?;
        if part.is_partial {
            return Ok(None);
        }
        let mut whole = self.head.take().unwrap_or_default();
        whole.actions = std::mem::take(&mut self.actions);
        whole.is_partial = false;
        whole.chunk_index = None;
        *self = Self::default();
        Ok(Some(whole))
    }

    /// Checks `part` and keeps its actions (and, for the first, the rest of it).
    #[expect(deprecated, reason = "reading the deprecated chunking fields")]
    fn take_part(
        &mut self,
        part: &mut OrchestratorResponse,
        limits: ChunkLimits,
    ) -> Result<(), ChunkError> {
        let Some(index) = part.chunk_index else {
            return Err(ChunkError::NoIndex);
        };
        if index != self.next {
            return Err(ChunkError::OutOfOrder {
                expected: self.next,
                got: index,
            });
        }
        let actions = self.actions.len().saturating_add(part.actions.len());
        within(
            "the number of actions",
            actions,
            limits.actions,
            "grpc_max_actions_per_turn",
        )?;
        let bytes = self.bytes.saturating_add(prost::Message::encoded_len(part));
        within(
            "the bytes of its parts",
            bytes,
            limits.bytes,
            "grpc_chunked_answer_mib",
        )?;
        self.bytes = bytes;
        self.next = index.saturating_add(1);
        self.actions.append(&mut part.actions);
        if self.head.is_none() {
            self.head = Some(part.clone());
        }
        Ok(())
    }
}

/// `Ok` if `got` (of `what`) is within `limit`, else [`ChunkError::TooLarge`] naming the
/// `setting` that raises the limit.
fn within(
    what: &'static str,
    got: usize,
    limit: usize,
    setting: &'static str,
) -> Result<(), ChunkError> {
    if got > limit {
        return Err(ChunkError::TooLarge {
            what,
            got,
            limit,
            setting,
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "chunks_tests.rs"]
mod tests;
