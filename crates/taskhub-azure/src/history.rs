//! The `<Hub>History` table: PartitionKey = instance ID, one row per event, plus one
//! `sentinel` row per instance.
//!
//! * Event rows: RowKey `GGGGGGGG-SSSSSSSS` (generation and sequence, hex) — or, for events
//!   written by a checkpoint too large for one batch, `GGGGGGGG-SSSSSSSS-TTTTTTTT` with a
//!   token of that checkpoint, so rows written ahead of a commit never overwrite committed
//!   ones. Property `Event` (the versioned JSON of the event) or `EventBlob`.
//! * The sentinel: `ExecutionId`, `Generation`, `Count` (events of the current execution),
//!   `Epoch` and `Partition` (the lease epoch of its last writer and the partition it held:
//!   epochs count per partition), `Spans`/`SpansBlob` (which sequence ranges carry a token;
//!   a blob once over the property limit), `Outbox`/`OutboxBlob` (the pending outbox),
//!   `Oldest` (the lowest generation whose rows may still be stored) and `Commit` (a random
//!   marker of the checkpoint that wrote it, to recognise its own commit on read-back). Its
//!   ETag versions the whole history: every checkpoint rewrites it in the same entity-group
//!   batch as the events, conditional on the ETag the writer loaded.
//!
//! A new execution takes the next generation, so its rows never touch the committed ones; a
//! reader reads the sentinel first and then only rows `0..Count` of its generation. Once a
//! generation is no longer the sentinel's, its rows and their blobs are garbage: the commit
//! that replaced it deletes them ([`AzureStore::collect_generations`]), and a clean-up cut
//! short (`Oldest` below `Generation`) is finished by the next checkpoint's preparation.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use taskhub_core::format::{decode_event, encode_event};
use taskhub_core::{ExecutionId, HistoryEvent, InstanceId, Timestamp};
use taskhub_storage::{
    ETag, HistorySnapshot, HistoryStore, NewQueueMessage, OutboundMessage, QueueName, StorageError,
    StorageResult,
};

use crate::store::{num, parse_num, AzureStore, INLINE_LIMIT};
use crate::tables::{lit, BatchOp, Row};

pub(crate) const SENTINEL: &str = "sentinel";

/// What the sentinel says, carried inside the [`ETag`] the seam hands out so that a
/// checkpoint needs no extra read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SentinelState {
    /// The table ETag of the sentinel row.
    pub etag: String,
    pub generation: u64,
    pub count: u64,
    pub epoch: u64,
    /// The partition whose lease `epoch` belongs to (epochs count per partition; `None` for
    /// a sentinel written before this was recorded).
    #[serde(default)]
    pub partition: Option<u32>,
    /// `(first sequence, token)`: rows from that sequence on (until the next span) carry the
    /// token in their RowKey.
    pub spans: Vec<(u64, String)>,
    /// The blob holding `spans` when they are over the property limit (empty: inline).
    #[serde(default)]
    pub spans_blob: String,
    /// The blob holding the pending outbox when it is over the property limit (empty: inline
    /// or none).
    #[serde(default)]
    pub outbox_blob: String,
    /// The lowest generation whose rows may still be stored (below `generation`: a
    /// clean-up is owed).
    #[serde(default)]
    pub oldest: u64,
    /// The marker of the checkpoint that wrote the sentinel.
    #[serde(default)]
    pub commit: String,
}

impl SentinelState {
    pub(crate) fn to_etag(&self) -> ETag {
        ETag(serde_json::to_string(self).unwrap_or_default())
    }

    pub(crate) fn from_etag(etag: &ETag) -> StorageResult<Self> {
        // An ETag this store did not make cannot be the current one.
        serde_json::from_str(&etag.0).map_err(|_| StorageError::Conflict {
            what: "history (an ETag not made by this store)".to_owned(),
        })
    }

    pub(crate) fn token_of(&self, seq: u64) -> Option<&str> {
        self.spans
            .iter()
            .rev()
            .find(|(first, _)| *first <= seq)
            .map(|(_, t)| t.as_str())
            .filter(|t| !t.is_empty())
    }
}

/// RowKey of an event row.
pub(crate) fn event_key(generation: u64, seq: u64, token: Option<&str>) -> String {
    match token {
        Some(t) => format!("{generation:08X}-{seq:08X}-{t}"),
        None => format!("{generation:08X}-{seq:08X}"),
    }
}

/// The stored form of an outbound message.
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredOutbound {
    queue: String,
    body: String,
    delay_ms: u64,
}

pub(crate) fn encode_outbox(outbox: &[OutboundMessage]) -> String {
    if outbox.is_empty() {
        return String::new();
    }
    let stored: Vec<StoredOutbound> = outbox
        .iter()
        .map(|o| StoredOutbound {
            queue: o.queue.to_string(),
            body: o.message.body.clone(),
            delay_ms: u64::try_from(o.message.delay.as_millis()).unwrap_or(u64::MAX),
        })
        .collect();
    serde_json::to_string(&stored).unwrap_or_default()
}

fn decode_outbox(text: &str, what: &str) -> StorageResult<Vec<OutboundMessage>> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let corrupt = |detail: String| StorageError::Corrupt {
        what: what.to_owned(),
        detail,
    };
    let stored: Vec<StoredOutbound> =
        serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
    stored
        .into_iter()
        .map(|s| {
            let queue = if s.queue == "workitems" {
                QueueName::WorkItems
            } else {
                s.queue
                    .strip_prefix("control-")
                    .and_then(|p| p.parse().ok())
                    .map(QueueName::Control)
                    .ok_or_else(|| corrupt(format!("unknown queue {}", s.queue)))?
            };
            Ok(OutboundMessage {
                claim: None,
                queue,
                message: NewQueueMessage {
                    body: s.body,
                    delay: std::time::Duration::from_millis(s.delay_ms),
                },
            })
        })
        .collect()
}

/// What a sentinel row says, with its spans' text (inline or read from `SpansBlob`).
fn parse_sentinel(row: &Row, spans: &str) -> StorageResult<SentinelState> {
    let what = format!("history sentinel of '{}'", row.str("PartitionKey"));
    Ok(SentinelState {
        spans_blob: row.str("SpansBlob").to_owned(),
        outbox_blob: row.str("OutboxBlob").to_owned(),
        oldest: match row.str("Oldest") {
            // Written before clean-ups were recorded: any older generation may be stored.
            "" => 0,
            n => parse_num(n, &what)?,
        },
        commit: row.str("Commit").to_owned(),
        etag: row.etag.clone(),
        generation: parse_num(row.str("Generation"), &what)?,
        count: parse_num(row.str("Count"), &what)?,
        epoch: parse_num(row.str("Epoch"), &what)?,
        partition: match row.str("Partition") {
            "" => None,
            p => Some(p.parse().map_err(|_| StorageError::Corrupt {
                what: what.clone(),
                detail: format!("Partition {p:?}"),
            })?),
        },
        spans: if spans.is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(spans).map_err(|e| StorageError::Corrupt {
                what: what.clone(),
                detail: e.to_string(),
            })?
        },
    })
}

/// The text of `Spans`.
pub(crate) fn spans_text(spans: &[(u64, String)]) -> String {
    if spans.is_empty() {
        String::new()
    } else {
        serde_json::to_string(spans).unwrap_or_default()
    }
}

impl AzureStore {
    pub(crate) async fn sentinel(&self, instance: &InstanceId) -> StorageResult<Option<Row>> {
        self.tables
            .get(&self.names.history, instance.as_str(), SENTINEL)
            .await
    }

    /// What a sentinel row says (its spans read from their blob if they are in one).
    pub(crate) async fn sentinel_state(&self, row: &Row) -> StorageResult<SentinelState> {
        let spans = self.read_big(row, "Spans").await?;
        parse_sentinel(row, &spans)
    }

    /// The sentinel properties `Spans`/`SpansBlob` for `next.spans`: inline while they fit in
    /// a property, else a blob — the previous sentinel's if the spans did not change (most
    /// checkpoints add none), a fresh one otherwise. Sets `next.spans_blob`.
    pub(crate) async fn spans_props(
        &self,
        instance: &InstanceId,
        next: &mut SentinelState,
        previous: Option<&SentinelState>,
    ) -> StorageResult<Vec<(String, String)>> {
        let text = spans_text(&next.spans);
        let props = match previous {
            Some(p)
                if text.len() > INLINE_LIMIT
                    && !p.spans_blob.is_empty()
                    && p.spans == next.spans =>
            {
                vec![
                    ("Spans".to_owned(), String::new()),
                    ("SpansBlob".to_owned(), p.spans_blob.clone()),
                ]
            }
            _ => {
                self.big_text("Spans", &text, &format!("history/{instance}/"))
                    .await?
            }
        };
        next.spans_blob = blob_of(&props, "SpansBlob");
        Ok(props)
    }

    /// Deletes the event rows of generations `from..to` of an instance, and their blobs (the
    /// blobs first: a row left behind still names its blob for the next attempt). Rows that
    /// are already gone are fine.
    pub(crate) async fn collect_generations(
        &self,
        instance: &InstanceId,
        from: u64,
        to: u64,
    ) -> StorageResult<()> {
        let filter = format!(
            "PartitionKey eq {} and RowKey ge {} and RowKey lt {}",
            lit(instance.as_str()),
            lit(&format!("{from:08X}-")),
            lit(&format!("{to:08X}-")),
        );
        let table = &self.names.history;
        let rows = self
            .tables
            .query_all_of(table, &filter, Some("PartitionKey,RowKey,EventBlob"))
            .await?;
        for row in &rows {
            let blob = row.str("EventBlob");
            if !blob.is_empty() {
                self.blobs.delete(blob).await?;
            }
        }
        let deletes: Vec<BatchOp> = rows
            .iter()
            .map(|r| BatchOp::Delete(instance.as_str().to_owned(), r.str("RowKey").to_owned()))
            .collect();
        for ops in self.tables.split(table, deletes)? {
            self.tables.delete_all(table, &ops).await?;
        }
        Ok(())
    }

    /// Deletes a blob no committed row names any more; a failure leaves only space behind
    /// (the instance's purge deletes its blobs), so it is logged, not reported.
    pub(crate) async fn delete_garbage_blob(&self, instance: &InstanceId, blob: &str) {
        if blob.is_empty() {
            return;
        }
        if let Err(e) = self.blobs.delete(blob).await {
            tracing::warn!(%instance, blob, error = %e, "could not delete a history blob no row names");
        }
    }

    /// The event-row properties of one event (inline, or a blob with a random name).
    pub(crate) async fn event_props(
        &self,
        instance: &InstanceId,
        event: &HistoryEvent,
    ) -> StorageResult<Vec<(String, String)>> {
        self.big_text(
            "Event",
            &encode_event(event),
            &format!("history/{instance}/"),
        )
        .await
    }
}

impl AzureStore {
    /// The history a sentinel row names.
    async fn load_from(
        &self,
        instance: &InstanceId,
        sentinel: &Row,
    ) -> StorageResult<HistorySnapshot> {
        let state = self.sentinel_state(sentinel).await?;
        let what = format!("history of '{instance}'");
        let gen_prefix = format!("{:08X}-", state.generation);
        let filter = format!(
            "PartitionKey eq {} and RowKey gt {} and RowKey lt {}",
            lit(instance.as_str()),
            lit(&gen_prefix),
            lit(&format!("{:08X}.", state.generation)),
        );
        let rows = self.tables.query_all(&self.names.history, &filter).await?;
        let mut by_key: std::collections::HashMap<&str, &Row> =
            rows.iter().map(|r| (r.str("RowKey"), r)).collect();
        let mut events = Vec::with_capacity(usize::try_from(state.count).unwrap_or(0));
        for seq in 0..state.count {
            let key = event_key(state.generation, seq, state.token_of(seq));
            let row = by_key
                .remove(key.as_str())
                .ok_or_else(|| StorageError::Corrupt {
                    what: what.clone(),
                    detail: format!("event row {key} is missing"),
                })?;
            let text = self.read_big(row, "Event").await?;
            events.push(decode_event(&text).map_err(|e| StorageError::Corrupt {
                what: what.clone(),
                detail: e.to_string(),
            })?);
        }
        let outbox_text = self.read_big(sentinel, "Outbox").await?;
        let execution_id =
            ExecutionId::new(sentinel.str("ExecutionId")).map_err(|e| StorageError::Corrupt {
                what: what.clone(),
                detail: e.to_string(),
            })?;
        Ok(HistorySnapshot {
            execution_id,
            events,
            etag: state.to_etag(),
            pending_outbox: decode_outbox(&outbox_text, &what)?,
            pending_since: match sentinel.str("OutboxAt") {
                "" => None,
                at => Some(Timestamp::from_millis(parse_num(at, &what)?)),
            },
        })
    }
}

/// The blob a `big_text` property list names under `name` (empty: inline).
pub(crate) fn blob_of(props: &[(String, String)], name: &str) -> String {
    props
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

#[async_trait]
impl HistoryStore for AzureStore {
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
        // A commit that replaced the sentinel just after it was read may have deleted what it
        // named (the previous generation's rows, a replaced outbox or spans blob): a row or
        // blob missing while the sentinel has moved on is read again from the new sentinel.
        let mut attempts = 0;
        loop {
            let Some(sentinel) = self.sentinel(instance).await? else {
                return Ok(None);
            };
            match self.load_from(instance, &sentinel).await {
                Err(e @ StorageError::Corrupt { .. }) if attempts < 3 => {
                    attempts += 1;
                    let now = self.sentinel(instance).await?;
                    if now.as_ref().map(|r| r.etag.as_str()) == Some(sentinel.etag.as_str()) {
                        // The sentinel did not move: the damage is real.
                        return Err(e);
                    }
                }
                other => return other.map(Some),
            }
        }
    }

    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()> {
        let filter = format!("PartitionKey eq {}", lit(instance.as_str()));
        let rows = self.tables.query_all(&self.names.history, &filter).await?;
        // The sentinel last: a reader never sees a sentinel whose rows are gone... except
        // while the purge runs, which the runtime does only for finished instances.
        let (sentinel, events): (Vec<&Row>, Vec<&Row>) =
            rows.iter().partition(|r| r.str("RowKey") == SENTINEL);
        let deletes = |rows: Vec<&Row>| -> Vec<BatchOp> {
            rows.iter()
                .map(|r| BatchOp::Delete(instance.as_str().to_owned(), r.str("RowKey").to_owned()))
                .collect()
        };
        let mut batches = self.tables.split(&self.names.history, deletes(events))?;
        batches.push(deletes(sentinel));
        for ops in batches {
            self.tables.delete_all(&self.names.history, &ops).await?;
        }
        self.blobs
            .delete_prefix(&format!("history/{instance}/"))
            .await?;
        self.blobs
            .delete_prefix(&format!("outbox/{instance}/"))
            .await?;
        Ok(())
    }
}

/// A sentinel's properties but the spans and the outbox.
pub(crate) fn sentinel_props(
    execution: &ExecutionId,
    state: &SentinelState,
) -> Vec<(&'static str, String)> {
    vec![
        ("ExecutionId", execution.to_string()),
        ("Generation", num(state.generation)),
        ("Count", num(state.count)),
        ("Epoch", num(state.epoch)),
        (
            "Partition",
            state.partition.map(|p| p.to_string()).unwrap_or_default(),
        ),
        ("Oldest", num(state.oldest)),
        ("Commit", state.commit.clone()),
    ]
}
