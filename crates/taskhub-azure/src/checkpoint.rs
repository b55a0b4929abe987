//! The ordered checkpoint of [`CheckpointStore`] on Azure Storage (no transaction spans two
//! tables, a queue and a table). See `docs/ARCHITECTURE.md`, "Azure Storage backend", for what
//! this guarantees.
//!
//! 0. Reject what a later step could not carry out (sizes, queues, a row of another instance).
//! 1. **Commit point.** Read the partition row: its epoch must equal `fence.epoch`
//!    (`Fenced` otherwise). The sentinel's last writer epoch (carried in the history ETag)
//!    must not be above `fence.epoch` if that writer held the same partition (`Fenced`). Then one entity-group batch in the
//!    instance's History partition: the new event rows plus the sentinel, written only if
//!    its ETag is still the one the writer loaded (`Conflict` otherwise), carrying the
//!    writer's epoch and `pending_outbox = outbound`. A checkpoint with more events than one
//!    batch holds writes the extra rows first, under keys no committed row uses; they are
//!    invisible until the sentinel batch commits.
//! 2. Enqueue `outbound`. 3. Write the instance row. 4. Delete `consumed` (stale receipts
//!    ignored). 5. Clear `pending_outbox` (a merge conditional on the ETag of step 1).

use async_trait::async_trait;
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, CheckpointStore, ETag, StorageError, StorageResult,
};

use crate::history::{
    encode_outbox, event_key, parse_sentinel, sentinel_props, SentinelState, SENTINEL,
};
use crate::store::{extend, AzureStore};
use crate::tables::{entity, BatchOp, MAX_BATCH};

impl AzureStore {
    fn check_checkpoint(&self, request: &CheckpointRequest) -> StorageResult<()> {
        for out in &request.outbound {
            self.queue_name(out.queue)?;
            self.check_message(&out.message)?;
        }
        for (queue, _) in &request.consumed {
            self.queue_name(*queue)?;
        }
        if let Some((row, _)) = &request.instance {
            if row.instance_id != request.instance_id {
                return Err(StorageError::InvalidArgument(format!(
                    "checkpoint of instance '{}' carries the row of instance '{}'",
                    request.instance_id, row.instance_id
                )));
            }
        }
        Ok(())
    }

    /// Step 1. Returns the sentinel state after the commit.
    async fn commit_history(&self, request: &CheckpointRequest) -> StorageResult<SentinelState> {
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
        let mut next = match (&previous, history.new_execution) {
            (Some(p), true) => SentinelState {
                generation: p.generation + 1,
                ..SentinelState::default()
            },
            (Some(p), false) => p.clone(),
            (None, _) => SentinelState::default(),
        };
        (next.epoch, next.partition) = match (request.fence, &previous) {
            (Some(f), _) => (f.epoch, Some(f.partition)),
            (None, Some(p)) => (p.epoch, p.partition),
            (None, None) => (0, None),
        };
        let first_seq = next.count;
        let n = u64::try_from(history.events.len()).unwrap_or(u64::MAX);
        // Rows that do not fit in the sentinel's batch go first, under a fresh token.
        let in_final = history.events.len().min(MAX_BATCH - 1);
        let ahead = history.events.len() - in_final;
        let token = (ahead > 0).then(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned());
        if let Some(t) = &token {
            next.spans.push((first_seq, t.clone()));
            next.spans
                .push((first_seq + u64::try_from(ahead).unwrap_or(0), String::new()));
        }
        let mut rows = Vec::with_capacity(history.events.len());
        for (i, event) in history.events.iter().enumerate() {
            let seq = first_seq + u64::try_from(i).unwrap_or(0);
            let tok = if i < ahead { token.as_deref() } else { None };
            let mut e = entity(
                instance.as_str(),
                &event_key(next.generation, seq, tok),
                &[("ExecutionId", history.execution_id.to_string())],
            );
            extend(&mut e, self.event_props(instance, event).await?);
            rows.push(BatchOp::Upsert(e));
        }
        let final_rows = rows.split_off(ahead);
        for chunk in rows.chunks(MAX_BATCH) {
            self.tables.batch(&self.names.history, chunk).await?;
        }
        next.count = first_seq + n;

        // The fence read, as late as possible before the commit.
        if let Some(fence) = request.fence {
            let row = self.partition_row(fence.partition).await?.ok_or_else(|| {
                StorageError::NotFound {
                    what: format!("partition {}", fence.partition),
                }
            })?;
            if row.epoch != fence.epoch {
                return Err(StorageError::Fenced {
                    partition: fence.partition,
                    attempted: fence.epoch,
                    current: row.epoch,
                });
            }
        }
        let mut sentinel = entity(
            instance.as_str(),
            SENTINEL,
            &sentinel_props(&history.execution_id, &next),
        );
        extend(
            &mut sentinel,
            self.big_text(
                "Outbox",
                &encode_outbox(&request.outbound),
                &format!("outbox/{instance}/"),
            )
            .await?,
        );
        let mut ops = final_rows;
        ops.push(match &previous {
            Some(p) => BatchOp::Replace(sentinel, p.etag.clone()),
            None => BatchOp::Insert(sentinel),
        });
        let etags = self.tables.batch(&self.names.history, &ops).await?;
        next.etag = etags.last().cloned().unwrap_or_default();
        Ok(next)
    }

    /// Step 5: clears the outbox if the sentinel is still the one step 1 wrote; returns the
    /// sentinel state to hand out.
    async fn clear_outbox(
        &self,
        request: &CheckpointRequest,
        mut state: SentinelState,
    ) -> SentinelState {
        let mut e = entity(request.instance_id.as_str(), SENTINEL, &[]);
        extend(
            &mut e,
            vec![
                ("Outbox".to_owned(), String::new()),
                ("OutboxBlob".to_owned(), String::new()),
            ],
        );
        let cleared = if self.injected_clear_failure() {
            Err(StorageError::Unavailable(
                "injected step-5 failure".to_owned(),
            ))
        } else {
            self.tables
                .merge(&self.names.history, &e, Some(&state.etag))
                .await
        };
        match cleared {
            Ok(etag) => state.etag = etag,
            Err(e) => {
                // The checkpoint stands (step 1 committed it); its outbox stays pending and
                // the instance's next loader re-sends it, de-duplicated by message ID.
                self.outbox_clear_failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(instance = %request.instance_id, error = %e, "could not clear the pending outbox (checkpoint step 5); the next load of the instance re-sends it");
            }
        }
        state
    }
}

#[async_trait]
impl CheckpointStore for AzureStore {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        self.check_checkpoint(&request)?;
        let committed = if request.history.is_some() {
            Some(self.commit_history(&request).await?)
        } else {
            if let Some(fence) = request.fence {
                let row = self.partition_row(fence.partition).await?.ok_or_else(|| {
                    StorageError::NotFound {
                        what: format!("partition {}", fence.partition),
                    }
                })?;
                if row.epoch != fence.epoch {
                    return Err(StorageError::Fenced {
                        partition: fence.partition,
                        attempted: fence.epoch,
                        current: row.epoch,
                    });
                }
            }
            None
        };
        for out in &request.outbound {
            self.put_message(out.queue, &out.message).await?;
        }
        let instance_etag = match &request.instance {
            Some((row, expect)) => Some(self.put_instance_row(row, expect.clone()).await?),
            None => None,
        };
        for (queue, receipt) in &request.consumed {
            match taskhub_storage::QueueStore::delete(self, *queue, receipt).await {
                Ok(()) | Err(StorageError::ReceiptExpired { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let history_etag = match committed {
            Some(state) if !request.outbound.is_empty() => {
                Some(self.clear_outbox(&request, state).await.to_etag())
            }
            Some(state) => Some(state.to_etag()),
            // Neither history nor instance row written (an activity's result): nobody holds
            // an ETag to refresh, so spare the table read (one per activity otherwise).
            None if request.instance.is_none() => None,
            None => match self.sentinel(&request.instance_id).await? {
                Some(row) => Some(parse_sentinel(&row)?.to_etag()),
                None => None,
            },
        };
        Ok(CheckpointOutcome {
            history_etag,
            instance_etag,
        })
    }
}

impl AzureStore {
    async fn put_instance_row(
        &self,
        row: &taskhub_storage::InstanceRow,
        expect: taskhub_storage::Expect,
    ) -> StorageResult<ETag> {
        taskhub_storage::InstanceStore::put_instance(self, row, expect).await
    }
}
