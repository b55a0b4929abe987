//! The ordered checkpoint of [`CheckpointStore`] on Azure Storage (no transaction spans two
//! tables, a queue and a table): Azure's [`CheckpointPrimitives`], run in order by the driver
//! shared with the memory backend ([`run_ordered_checkpoint`]). See `docs/AZURE.md`, "The
//! checkpoint and invariant 1 on Azure", for what this guarantees.
//!
//! 0. Reject what a later step could not carry out (sizes, queues, a row of another instance).
//! 1. **Commit point.** `prepare`: the sentinel's last writer epoch (carried in the history
//!    ETag) must not be above `fence.epoch` if that writer held the same partition (`Fenced`;
//!    epochs count per partition); a checkpoint with more events than one batch holds writes
//!    the extra rows first, under keys no committed row uses (invisible until the sentinel
//!    batch commits); a large outbox goes to a fresh blob. `check_fence`: read the partition
//!    row, its epoch must equal `fence.epoch` (`Fenced`), as late as possible before the
//!    commit. `commit`: one entity-group batch in the instance's History partition, the new
//!    event rows plus the sentinel, written only if its ETag is still the one the writer
//!    loaded (`Conflict` otherwise), carrying the writer's epoch and partition and
//!    `pending_outbox = outbound`, and a fresh `Commit` marker. A commit refused on a re-send
//!    (409/412 after the HTTP layer retried a timeout or 5xx), or failed with a transient
//!    error, reads the sentinel back: if it carries this checkpoint's marker, the first attempt
//!    landed and the commit stands. Once committed, what the new sentinel no longer names is
//!    deleted: the replaced outbox and spans blobs, and the rows and blobs of the generations
//!    below the current one (a clean-up cut short is finished by the next `prepare`, which
//!    sees `Oldest` below `Generation`).
//! 2. Enqueue `outbound`. 3. Write the instance row. 4. Delete `consumed` (stale receipts
//!    ignored). 5. Clear `pending_outbox` (a merge conditional on the ETag of step 1, read
//!    back like the commit when its answer is lost), then delete the outbox's blob.
//!
//! A checkpoint without history reads nothing from the History table and reports no history
//! ETag: its writer keeps the one it has (the history did not change).

use async_trait::async_trait;
use taskhub_core::InstanceId;
use taskhub_storage::{
    run_ordered_checkpoint, CheckpointOutcome, CheckpointPrimitives, CheckpointRequest,
    CheckpointStore, Dequeued, ETag, Expect, InstanceRow, LeaseFence, NoObserver, OutboundMessage,
    QueueName, Receipt, StepObserver, StorageError, StorageResult,
};

use crate::history::{
    blob_of, encode_outbox, event_key, sentinel_props, spans_text, SentinelState, SENTINEL,
};
use crate::store::{extend, num, AzureStore, INLINE_LIMIT};
use crate::tables::{entity, BatchOp, Entity, Row, BATCH_OVERHEAD, MAX_BATCH, MAX_BATCH_BYTES};

/// Azure's steps, for the driver (a view, so the primitives are not public store methods).
struct Primitives<'a>(&'a AzureStore);

/// What step 1 prepared: the batch that commits (the last rows and the sentinel), the
/// sentinel state it writes and the one it replaces.
pub(crate) struct Prepared {
    ops: Vec<BatchOp>,
    next: SentinelState,
    previous: Option<SentinelState>,
}

#[async_trait]
impl CheckpointPrimitives for Primitives<'_> {
    type Prepared = Prepared;

    async fn validate(&self, request: &CheckpointRequest) -> StorageResult<()> {
        for out in &request.outbound {
            self.0.queue_name(out.queue)?;
            taskhub_storage::check_messages(self.0, out.queue, [&out.message])?;
        }
        for (queue, _) in &request.consumed {
            self.0.queue_name(*queue)?;
        }
        taskhub_storage::checkpoint::check_instance_row(request)?;
        Ok(())
    }

    async fn prepare(&self, request: &CheckpointRequest) -> StorageResult<Prepared> {
        self.0.prepare_history(request).await
    }

    async fn check_fence(&self, fence: LeaseFence) -> StorageResult<()> {
        let row = self
            .0
            .partition_row(fence.partition)
            .await?
            .ok_or_else(|| StorageError::NotFound {
                what: format!("partition {}", fence.partition),
            })?;
        if row.epoch != fence.epoch {
            return Err(StorageError::Fenced {
                partition: fence.partition,
                attempted: fence.epoch,
                current: row.epoch,
            });
        }
        Ok(())
    }

    async fn commit(&self, request: &CheckpointRequest, prepared: Prepared) -> StorageResult<ETag> {
        let Prepared {
            ops,
            mut next,
            previous,
        } = prepared;
        let instance = &request.instance_id;
        next.etag = match self.0.tables.batch(&self.0.names.history, &ops).await {
            Ok(etags) => etags.last().cloned().unwrap_or_default(),
            Err(e) => {
                self.0
                    .read_back(instance, Landed::Commit(&next.commit), e)
                    .await?
            }
        };
        self.0
            .after_commit(instance, previous.as_ref(), &next)
            .await;
        Ok(next.to_etag())
    }

    async fn send(&self, out: &OutboundMessage) -> StorageResult<Option<Dequeued>> {
        match out.claim {
            Some(visibility) => self
                .0
                .put_claimed(out.queue, &out.message, visibility)
                .await
                .map(Some),
            None => self
                .0
                .put_message(out.queue, &out.message)
                .await
                .map(|()| None),
        }
    }

    async fn write_instance(&self, row: &InstanceRow, expect: &Expect) -> StorageResult<ETag> {
        taskhub_storage::InstanceStore::put_instance(self.0, row, expect.clone()).await
    }

    async fn delete_consumed(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        taskhub_storage::QueueStore::delete(self.0, queue, receipt).await
    }

    async fn clear_outbox(&self, instance: &InstanceId, committed: &ETag) -> StorageResult<ETag> {
        let mut state = SentinelState::from_etag(committed)?;
        let mut e = entity(instance.as_str(), SENTINEL, &[]);
        extend(
            &mut e,
            vec![
                ("Outbox".to_owned(), String::new()),
                ("OutboxBlob".to_owned(), String::new()),
                ("OutboxAt".to_owned(), String::new()),
            ],
        );
        let cleared = if self.0.injected_clear_failure() {
            Err(StorageError::Unavailable(
                "injected step-5 failure".to_owned(),
            ))
        } else {
            match self
                .0
                .tables
                .merge(&self.0.names.history, &e, Some(&state.etag))
                .await
            {
                Ok(etag) => Ok(etag),
                Err(e) => self.0.read_back(instance, Landed::Clear(&state), e).await,
            }
        };
        match cleared {
            Ok(etag) => {
                state.etag = etag;
                let blob = std::mem::take(&mut state.outbox_blob);
                self.0.delete_garbage_blob(instance, &blob).await;
                Ok(state.to_etag())
            }
            Err(e) => {
                // The checkpoint stands (step 1 committed it); its outbox stays pending and
                // the instance's next loader re-sends it once it is old enough.
                self.0
                    .outbox_clear_failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(%instance, error = %e, "could not clear the pending outbox (checkpoint step 5); the next load of the instance re-sends it");
                Err(e)
            }
        }
    }

    async fn history_etag(&self, _request: &CheckpointRequest) -> StorageResult<Option<ETag>> {
        // No history written (a client's start, an entity batch, an activity's result, a
        // turn that only repairs the row): the history's ETag did not change, and the one
        // writer that holds it (the instance's session) keeps it when the outcome carries
        // none. Reading the sentinel here cost one table read per such checkpoint.
        Ok(None)
    }
}

impl AzureStore {
    /// Step 1 up to the fence check: the epoch check against the sentinel's last writer, the
    /// rows that do not fit in the sentinel's batch (under a fresh token), the outbox blob if
    /// it is large, and the final batch.
    async fn prepare_history(&self, request: &CheckpointRequest) -> StorageResult<Prepared> {
        let instance = &request.instance_id;
        let Some(history) = &request.history else {
            return Err(StorageError::InvalidArgument("no history".to_owned()));
        };
        let previous = history
            .expected
            .as_ref()
            .map(SentinelState::from_etag)
            .transpose()?;
        if let Some(fence) = request.fence {
            // Epochs count per partition: only a writer of the same partition is compared (an
            // instance re-homed by a partition-count change keeps its sentinel, whose epoch
            // is then another partition's and says nothing about this lease).
            if let Some(prev) = previous
                .as_ref()
                .filter(|p| p.partition == Some(fence.partition))
            {
                if prev.epoch > fence.epoch {
                    return Err(StorageError::Fenced {
                        partition: fence.partition,
                        attempted: fence.epoch,
                        current: prev.epoch,
                    });
                }
            }
        }
        // A clean-up an earlier commit owes (cut short by a crash or a failure): the
        // generations below the loaded one are no one's, whoever wrote them.
        let floor = match &previous {
            Some(p) if p.oldest < p.generation => {
                match self
                    .collect_generations(instance, p.oldest, p.generation)
                    .await
                {
                    Ok(()) => p.generation,
                    Err(e) => {
                        tracing::warn!(%instance, error = %e, "could not delete the rows of earlier executions; the next checkpoint tries again");
                        p.oldest
                    }
                }
            }
            Some(p) => p.oldest,
            None => 0,
        };
        let mut next = match (&previous, history.new_execution) {
            (Some(p), true) => SentinelState {
                generation: p.generation + 1,
                ..SentinelState::default()
            },
            (Some(p), false) => p.clone(),
            (None, _) => SentinelState::default(),
        };
        next.oldest = floor;
        next.commit = uuid::Uuid::new_v4().simple().to_string();
        (next.epoch, next.partition) = match (request.fence, &previous) {
            (Some(f), _) => (f.epoch, Some(f.partition)),
            (None, Some(p)) => (p.epoch, p.partition),
            (None, None) => (0, None),
        };
        let first_seq = next.count;
        let n = u64::try_from(history.events.len()).unwrap_or(u64::MAX);
        next.count = first_seq + n;
        let table = &self.names.history;

        // The sentinel first (its size bounds what fits beside it in the final batch).
        let outbox = self
            .big_text(
                "Outbox",
                &encode_outbox(&request.outbound),
                &format!("outbox/{instance}/"),
            )
            .await?;
        next.outbox_blob = blob_of(&outbox, "OutboxBlob");
        // When the outbox was written (this store's clock): a loader re-sends it only once
        // its writer cannot still be sending it (`HistorySnapshot::pending_since`).
        let outbox_at = if request.outbound.is_empty() {
            String::new()
        } else {
            num(self.clock.now().as_millis())
        };
        let sentinel_entity = |next: &SentinelState, spans: Vec<(String, String)>| -> Entity {
            let mut e = entity(
                instance.as_str(),
                SENTINEL,
                &sentinel_props(&history.execution_id, next),
            );
            extend(&mut e, spans);
            extend(&mut e, outbox.clone());
            extend(&mut e, vec![("OutboxAt".to_owned(), outbox_at.clone())]);
            e
        };

        // The event rows' properties, then which of them fit in the sentinel's batch (the
        // last ones, by count and by body size); the rest go first, under a fresh token.
        let mut props = Vec::with_capacity(history.events.len());
        for event in &history.events {
            props.push(self.event_props(instance, event).await?);
        }
        let generation = next.generation;
        #[expect(
            clippy::indexing_slicing,
            reason = "`i` ranges over the events, and `props` holds one entry per event (built \
                      just above)"
        )]
        let row = |i: usize, tok: Option<&str>| {
            let seq = first_seq + u64::try_from(i).unwrap_or(0);
            let mut e = entity(
                instance.as_str(),
                &event_key(generation, seq, tok),
                &[("ExecutionId", history.execution_id.to_string())],
            );
            extend(&mut e, props[i].clone());
            BatchOp::Upsert(e)
        };
        // A token is at most 8 characters: size the rows with one so a row never grows.
        let probe = "00000000";
        let estimate = sentinel_entity(&next, spans_estimate(instance, &next.spans));
        let sentinel_op = match &previous {
            Some(p) => BatchOp::Replace(estimate, p.etag.clone()),
            None => BatchOp::Insert(estimate),
        };
        // The spans this checkpoint may add (two entries) are not in the sentinel yet.
        let mut bytes = BATCH_OVERHEAD + self.tables.op_size(table, &sentinel_op) + 128;
        let mut ahead = history.events.len();
        while ahead > 0 && history.events.len() - ahead < MAX_BATCH - 1 {
            let size = self.tables.op_size(table, &row(ahead - 1, Some(probe)));
            if bytes + size > MAX_BATCH_BYTES {
                break;
            }
            bytes += size;
            ahead -= 1;
        }
        let token = (ahead > 0).then(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned());
        if let Some(t) = &token {
            next.spans.push((first_seq, t.clone()));
            next.spans
                .push((first_seq + u64::try_from(ahead).unwrap_or(0), String::new()));
        }
        let ahead_rows: Vec<BatchOp> = (0..ahead).map(|i| row(i, token.as_deref())).collect();
        for chunk in self.tables.split(table, ahead_rows)? {
            self.tables.batch(table, &chunk).await?;
        }
        // The spans are part of the sentinel: write it now that they are known.
        let spans = self
            .spans_props(instance, &mut next, previous.as_ref())
            .await?;
        let sentinel = sentinel_entity(&next, spans);
        let final_rows: Vec<BatchOp> = (ahead..history.events.len())
            .map(|i| row(i, None))
            .collect();

        let mut ops = final_rows;
        ops.push(match &previous {
            Some(p) => BatchOp::Replace(sentinel, p.etag.clone()),
            None => BatchOp::Insert(sentinel),
        });
        Ok(Prepared {
            ops,
            next,
            previous,
        })
    }
}

/// The spans properties as they will be at most, for sizing the final batch before the
/// spans are known: inline if they fit (the new entries are in the margin), else a blob name.
fn spans_estimate(instance: &InstanceId, spans: &[(u64, String)]) -> Vec<(String, String)> {
    let text = spans_text(spans);
    if text.len() <= INLINE_LIMIT {
        vec![("Spans".to_owned(), text)]
    } else {
        vec![
            ("Spans".to_owned(), String::new()),
            (
                "SpansBlob".to_owned(),
                format!("history/{instance}/{}", "0".repeat(32)),
            ),
        ]
    }
}

/// What a read-back looks for in the sentinel after a write of a checkpoint failed
/// [`ambiguous`]ly.
enum Landed<'a> {
    /// The commit batch of the checkpoint marked with this marker: a refusal (409/412) may
    /// answer a re-send of a first attempt whose answer was lost, and a transient error may
    /// hide an attempt that landed. The sentinel carrying the marker says it committed.
    Commit(&'a str),
    /// The step-5 merge: the sentinel still carrying the commit this state names (no later
    /// checkpoint replaced it) with its outbox cleared and another ETag says it landed (only
    /// its writer merges into a sentinel it committed).
    Clear(&'a SentinelState),
}

impl Landed<'_> {
    /// Whether the sentinel `row` shows the write landed.
    fn shown_by(&self, row: &Row) -> bool {
        match self {
            Self::Commit(marker) => !marker.is_empty() && row.str("Commit") == *marker,
            Self::Clear(state) => {
                !state.commit.is_empty()
                    && row.str("Commit") == state.commit
                    && row.etag != state.etag
                    && row.str("Outbox").is_empty()
                    && row.str("OutboxBlob").is_empty()
            }
        }
    }
}

impl AzureStore {
    /// After the write `landed` names failed with `error`: if `error` is [`ambiguous`] and the
    /// sentinel shows the write landed, the sentinel's ETag; else `error`.
    async fn read_back(
        &self,
        instance: &InstanceId,
        landed: Landed<'_>,
        error: StorageError,
    ) -> StorageResult<String> {
        if !ambiguous(&error) {
            return Err(error);
        }
        match self.sentinel(instance).await {
            Ok(Some(row)) if landed.shown_by(&row) => {
                if matches!(landed, Landed::Commit(_)) {
                    tracing::info!(%instance, first = %error, "the commit's answer was lost, and the sentinel shows it landed");
                }
                Ok(row.etag)
            }
            _ => Err(error),
        }
    }

    /// What a commit leaves to delete: the blobs of the replaced sentinel that the new one
    /// does not name (its outbox and spans), and the rows and blobs of every generation
    /// below the new sentinel's. Failures are logged: the rows are deleted by the next
    /// checkpoint's `prepare` (the sentinel's `Oldest` says they may remain), blobs by the
    /// instance's purge.
    async fn after_commit(
        &self,
        instance: &InstanceId,
        previous: Option<&SentinelState>,
        next: &SentinelState,
    ) {
        if let Some(p) = previous {
            if p.outbox_blob != next.outbox_blob {
                self.delete_garbage_blob(instance, &p.outbox_blob).await;
            }
            if p.spans_blob != next.spans_blob {
                self.delete_garbage_blob(instance, &p.spans_blob).await;
            }
        }
        if next.oldest < next.generation && !self.injected_skip_collection() {
            if let Err(e) = self
                .collect_generations(instance, next.oldest, next.generation)
                .await
            {
                tracing::warn!(%instance, error = %e, "could not delete the rows of the previous execution; the next checkpoint tries again");
            }
        }
    }
}

/// An error that does not say whether a conditional write was applied: a refusal that may
/// answer a re-send of an applied first attempt, or a transient failure.
fn ambiguous(error: &StorageError) -> bool {
    matches!(
        error,
        StorageError::Conflict { .. } | StorageError::Busy { .. } | StorageError::Unavailable(_)
    )
}

#[async_trait]
impl CheckpointStore for AzureStore {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        self.checkpoint_observed(request, &NoObserver).await
    }

    async fn checkpoint_observed(
        &self,
        request: CheckpointRequest,
        observer: &dyn StepObserver,
    ) -> StorageResult<CheckpointOutcome> {
        run_ordered_checkpoint(&Primitives(self), &request, observer).await
    }
}
