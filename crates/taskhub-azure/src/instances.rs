//! The `<Hub>Instances` table: PartitionKey = instance ID, RowKey = "". Queryable columns
//! (`Name`, `RuntimeStatus`, `CreatedTime`, and one `Tag_<hex of key>` per tag) next to the
//! whole row as JSON (`Data`, or `DataBlob` when over the property limit).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use taskhub_core::{
    ExecutionId, FailureDetails, InstanceId, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_storage::list_order::page_by_created;
use taskhub_storage::{
    CreatedCursor, ETag, ExecutionRecord, Expect, InstancePage, InstanceQuery, InstanceRow,
    InstanceStore, ListOrder, StorageError, StorageResult, Tags,
};

use crate::row_etag;
use crate::store::{extend, num, parse_num, AzureStore};
use crate::tables::{entity, lit, Row};

const RK: &str = "";

/// The stored form of a row (everything but the ETag).
#[derive(Serialize, Deserialize)]
struct Data {
    instance_id: InstanceId,
    name: String,
    version: Option<String>,
    execution_id: ExecutionId,
    status: OrchestrationStatus,
    input: Payload,
    output: Option<Payload>,
    failure: Option<FailureDetails>,
    custom_status: Option<Payload>,
    created_at: Timestamp,
    updated_at: Timestamp,
    completed_at: Option<Timestamp>,
    scheduled_start: Option<Timestamp>,
    partition: u32,
    #[serde(default, skip_serializing_if = "Tags::is_empty")]
    tags: Tags,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    executions: Vec<ExecutionRecord>,
}

/// The property that carries a tag, filterable server-side: property names allow only
/// letters, digits and `_`, so the key is hex-encoded (a key is at most 64 characters).
fn tag_property(key: &str) -> String {
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    format!("Tag_{hex}")
}

fn status_text(status: OrchestrationStatus) -> String {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{status:?}"),
    }
}

/// The smallest string greater than every string starting with `prefix` (None: no bound).
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(u32::from(last) + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn filter(query: &InstanceQuery) -> String {
    let mut parts = vec![format!("RowKey eq {}", lit(RK))];
    if !query.statuses.is_empty() {
        let any: Vec<String> = query
            .statuses
            .iter()
            .map(|s| format!("RuntimeStatus eq {}", lit(&status_text(*s))))
            .collect();
        parts.push(format!("({})", any.join(" or ")));
    }
    if let Some(name) = &query.name {
        parts.push(format!("Name eq {}", lit(name)));
    }
    if let Some(from) = query.created_from {
        parts.push(format!("CreatedTime ge {}", lit(&num(from.as_millis()))));
    }
    if let Some(to) = query.created_to {
        parts.push(format!("CreatedTime lt {}", lit(&num(to.as_millis()))));
    }
    for (bound, property, op) in [
        (query.completed_from, "CompletedTime", "ge"),
        (query.completed_to, "CompletedTime", "lt"),
        (query.updated_from, "LastUpdatedTime", "ge"),
        (query.updated_to, "LastUpdatedTime", "lt"),
    ] {
        if let Some(t) = bound {
            parts.push(format!("{property} {op} {}", lit(&num(t.as_millis()))));
        }
    }
    if query.completed_from.is_some() || query.completed_to.is_some() {
        // A running instance's CompletedTime is empty, which sorts before every time.
        parts.push(format!("CompletedTime gt {}", lit("")));
    }
    for (key, value) in &query.tags {
        parts.push(format!("{} eq {}", tag_property(key), lit(value)));
    }
    if !query.include_entities {
        // Entities' IDs start with '@': the key ranges on either side of that prefix.
        parts.push(format!(
            "(PartitionKey lt {} or PartitionKey ge {})",
            lit("@"),
            lit("A")
        ));
    }
    if let Some(prefix) = query
        .instance_id_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        parts.push(format!("PartitionKey ge {}", lit(prefix)));
        if let Some(end) = prefix_end(prefix) {
            parts.push(format!("PartitionKey lt {}", lit(&end)));
        }
    }
    parts.join(" and ")
}

impl AzureStore {
    /// A page in creation-time order. The table is keyed by instance ID, so this reads every
    /// matching row's key and creation time only (`$select`; one query page per 1,000 rows),
    /// sorts them, and reads the page's rows one by one (a row deleted meanwhile is skipped).
    async fn list_by_created(
        &self,
        query: &InstanceQuery,
        size: usize,
    ) -> StorageResult<InstancePage> {
        let rows = self
            .tables
            .query_all_of(
                &self.names.instances,
                &filter(query),
                Some("PartitionKey,CreatedTime"),
            )
            .await?;
        let mut keyed: Vec<(CreatedCursor, CreatedCursor)> = Vec::with_capacity(rows.len());
        for row in &rows {
            let what = format!("instance row '{}'", row.str("PartitionKey"));
            let cursor = CreatedCursor {
                created_at: Timestamp::from_millis(parse_num(row.str("CreatedTime"), &what)?),
                instance_id: row.str("PartitionKey").to_owned(),
            };
            keyed.push((cursor.clone(), cursor));
        }
        let (page, more) =
            page_by_created(keyed, query.order, query.continuation.as_deref(), size)?;
        let mut instances = Vec::with_capacity(page.len());
        for key in &page {
            let id =
                InstanceId::new(key.instance_id.as_str()).map_err(|e| StorageError::Corrupt {
                    what: format!("instance row '{}'", key.instance_id),
                    detail: e.to_string(),
                })?;
            if let Some(found) = self.get_instance(&id).await? {
                instances.push(found);
            }
        }
        // Resume after the page's last key, even if its row was deleted meanwhile.
        let continuation = more
            .then(|| page.last().map(CreatedCursor::token))
            .flatten();
        Ok(InstancePage {
            instances,
            continuation,
        })
    }

    /// Deletes a data blob no row version refers to any more; a failure leaves only space
    /// behind (the instance's purge deletes its blobs), so it is logged, not reported.
    async fn delete_unused_blob(&self, instance: &InstanceId, blob: &str) {
        if let Err(e) = self.blobs.delete(blob).await {
            tracing::warn!(%instance, blob, error = %e, "could not delete an unused row blob");
        }
    }

    async fn parse_instance(&self, row: &Row) -> StorageResult<InstanceRow> {
        let what = format!("instance row '{}'", row.str("PartitionKey"));
        let text = self.read_big(row, "Data").await?;
        let d: Data = serde_json::from_str(&text).map_err(|e| StorageError::Corrupt {
            what,
            detail: e.to_string(),
        })?;
        Ok(InstanceRow {
            instance_id: d.instance_id,
            name: d.name,
            version: d.version,
            execution_id: d.execution_id,
            status: d.status,
            input: d.input,
            output: d.output,
            failure: d.failure,
            custom_status: d.custom_status,
            created_at: d.created_at,
            updated_at: d.updated_at,
            completed_at: d.completed_at,
            scheduled_start: d.scheduled_start,
            partition: d.partition,
            tags: d.tags,
            executions: d.executions,
            etag: Some(row_etag::encode(&row.etag, row.str("DataBlob"))),
        })
    }
}

impl AzureStore {
    /// The stored row's service ETag if the row is exactly `row` (ETag aside), as after a
    /// write whose answer was lost: its re-sent copy is refused although the first landed.
    async fn own_row(&self, row: &InstanceRow) -> StorageResult<Option<String>> {
        let Some(stored) = self
            .tables
            .get(&self.names.instances, row.instance_id.as_str(), RK)
            .await?
        else {
            return Ok(None);
        };
        let parsed = self.parse_instance(&stored).await?;
        let same = InstanceRow {
            etag: None,
            ..parsed
        } == InstanceRow {
            etag: None,
            ..row.clone()
        };
        Ok(same.then(|| stored.etag.clone()))
    }

    /// A condition the Table service can check: `AbsentOrPending` becomes an insert (no row)
    /// or an `If-Match` on the Pending row just read (a row that changes meanwhile fails the
    /// write), and a row further along is refused here.
    async fn resolve_expect(&self, row: &InstanceRow, expect: Expect) -> StorageResult<Expect> {
        if !matches!(expect, Expect::AbsentOrPending(_)) {
            return Ok(expect);
        }
        let stored = self.get_instance(&row.instance_id).await?;
        if !expect.allows(stored.as_ref()) {
            return Err(StorageError::Conflict {
                what: format!("instance '{}' (a newer row)", row.instance_id),
            });
        }
        Ok(stored
            .and_then(|r| r.etag)
            .map_or(Expect::Absent, Expect::ETag))
    }
}

#[async_trait]
impl InstanceStore for AzureStore {
    async fn get_instance(&self, instance: &InstanceId) -> StorageResult<Option<InstanceRow>> {
        match self
            .tables
            .get(&self.names.instances, instance.as_str(), RK)
            .await?
        {
            Some(row) => self.parse_instance(&row).await.map(Some),
            None => Ok(None),
        }
    }

    async fn put_instance(&self, row: &InstanceRow, expect: Expect) -> StorageResult<ETag> {
        let expect = self.resolve_expect(row, expect).await?;
        let data = Data {
            instance_id: row.instance_id.clone(),
            name: row.name.clone(),
            version: row.version.clone(),
            execution_id: row.execution_id.clone(),
            status: row.status,
            input: row.input.clone(),
            output: row.output.clone(),
            failure: row.failure.clone(),
            custom_status: row.custom_status.clone(),
            created_at: row.created_at,
            updated_at: row.updated_at,
            completed_at: row.completed_at,
            scheduled_start: row.scheduled_start,
            partition: row.partition,
            tags: row.tags.clone(),
            executions: row.executions.clone(),
        };
        let text = serde_json::to_string(&data)
            .map_err(|e| StorageError::InvalidArgument(format!("instance row: {e}")))?;
        let mut e = entity(
            row.instance_id.as_str(),
            RK,
            &[
                ("Name", row.name.clone()),
                ("RuntimeStatus", status_text(row.status)),
                ("CreatedTime", num(row.created_at.as_millis())),
                ("LastUpdatedTime", num(row.updated_at.as_millis())),
                // Empty while the instance runs: no time range matches it.
                (
                    "CompletedTime",
                    row.completed_at
                        .map_or_else(String::new, |t| num(t.as_millis())),
                ),
            ],
        );
        for (key, value) in &row.tags {
            e.insert(tag_property(key), serde_json::Value::String(value.clone()));
        }
        let prefix = format!("instances/{}/", row.instance_id);
        let data = self.big_text("Data", &text, &prefix).await?;
        let new_blob = data
            .iter()
            .find(|(k, _)| k == "DataBlob")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        extend(&mut e, data);
        let table = &self.names.instances;
        let (written, replaced) = match &expect {
            Expect::Any => (self.tables.replace(table, &e, None).await, None),
            Expect::Absent | Expect::AbsentOrPending(_) => {
                (self.tables.insert(table, &e).await, None)
            }
            Expect::ETag(etag) => {
                let (service, old_blob) = row_etag::decode(etag);
                let replaced = row_etag::replaced_blob(old_blob, &prefix, &new_blob);
                (
                    self.tables.replace(table, &e, Some(service)).await,
                    replaced,
                )
            }
        };
        // The version replaced is the one `expect` named: its blob is no one's now. (A write
        // that failed keeps the blob it wrote: a refusal may follow a lost answer to an attempt
        // that did write the row, and the row would then name a deleted blob. The instance's
        // purge deletes such a blob.)
        let etag = match written {
            // The HTTP layer re-sends a request whose answer it lost (a timeout, a dropped
            // connection, 5xx): the re-sent write is refused (409 on an insert, 412 on a
            // replace) when the first one landed. Read the row back: if it is exactly the row
            // this write carries, the write stands.
            Err(StorageError::Conflict { what }) => match self.own_row(row).await? {
                Some(stored) => stored,
                None => return Err(StorageError::Conflict { what }),
            },
            other => other?,
        };
        if let Some(blob) = replaced {
            self.delete_unused_blob(&row.instance_id, blob).await;
        }
        Ok(row_etag::encode(&etag, &new_blob))
    }

    async fn list_instances(&self, query: &InstanceQuery) -> StorageResult<InstancePage> {
        let size = match query.page_size {
            0 => 100,
            n if n <= 1000 => n,
            n => {
                return Err(StorageError::InvalidArgument(format!(
                    "page size {n} is over 1,000"
                )))
            }
        };
        if query.order != ListOrder::InstanceId {
            return self.list_by_created(query, size).await;
        }
        let continuation = match &query.continuation {
            Some(token) => Some(
                token
                    .split_once('\n')
                    .map(|(pk, rk)| (pk.to_owned(), rk.to_owned()))
                    .ok_or_else(|| {
                        StorageError::InvalidArgument("bad continuation token".to_owned())
                    })?,
            ),
            None => None,
        };
        let (rows, next) = self
            .tables
            .query_page(
                &self.names.instances,
                &filter(query),
                Some(size),
                continuation.as_ref(),
            )
            .await?;
        let mut instances = Vec::with_capacity(rows.len());
        for row in &rows {
            instances.push(self.parse_instance(row).await?);
        }
        Ok(InstancePage {
            instances,
            continuation: next.map(|(pk, rk)| format!("{pk}\n{rk}")),
        })
    }

    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool> {
        let existed = self
            .tables
            .delete(&self.names.instances, instance.as_str(), RK)
            .await?;
        self.blobs
            .delete_prefix(&format!("instances/{instance}/"))
            .await?;
        Ok(existed)
    }

    async fn delete_instance_if(&self, instance: &InstanceId, etag: &ETag) -> StorageResult<bool> {
        let table = &self.names.instances;
        // The ETag names the version's blob, if it has one: once the conditional delete
        // succeeds, that version was the row, and a newer row's blobs stay. (ETags are
        // compared by the service only: the header and the listing's `odata.etag` may escape
        // them differently.)
        let (service, blob) = row_etag::decode(etag);
        if !self
            .tables
            .delete_if(table, instance.as_str(), RK, service)
            .await?
        {
            return Ok(false);
        }
        let prefix = format!("instances/{instance}/");
        if let Some(blob) = row_etag::replaced_blob(blob, &prefix, "") {
            self.delete_unused_blob(instance, blob).await;
        }
        Ok(true)
    }
}
