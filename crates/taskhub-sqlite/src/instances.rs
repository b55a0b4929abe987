//! The instances table: one status row per instance, ETag-conditional writes, filtered and
//! paged listing (by instance ID, the token being the last ID of a page; or by creation time,
//! the token being the last row's (time, ID); the statement is built by
//! `taskhub_storage::sql::instance_page`). An update assigns an indexed column (status, name,
//! creation time) only when its value changes, so an unchanged index is not rewritten.

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, Row};
use taskhub_core::{ExecutionId, FailureDetails, InstanceId, OrchestrationStatus, Payload};
use taskhub_storage::sql::instance_page;
use taskhub_storage::{
    ETag, Expect, InstancePage, InstanceQuery, InstanceRow, InstanceStore, StorageError,
    StorageResult, Tags,
};

use crate::codec::{etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql};
use crate::errors::{corrupt, SqlResultExt};
use crate::store::SqliteStore;
use crate::writer::Tx;

const WHAT: &str = "instances";

pub use taskhub_storage::sql::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

const COLUMNS: &str = "instance_id, name, version, execution_id, status, input, output, failure, \
     custom_status, created_at, updated_at, completed_at, scheduled_start, partition, etag, tags, \
     executions";

/// What a row holds before a write: what its condition is checked against, and the indexed
/// columns an update leaves alone when they keep their value.
struct Current {
    etag: i64,
    status: String,
    execution_id: String,
    name: String,
    created_at: i64,
}

/// Writes a row under its condition; returns the new ETag.
pub(crate) fn put_in(tx: &Tx<'_>, row: &InstanceRow, expect: &Expect) -> StorageResult<ETag> {
    let id = row.instance_id.as_str();
    let current: Option<Current> = tx
        .conn
        .prepare_cached(
            "SELECT etag, status, execution_id, name, created_at FROM instances
             WHERE instance_id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([id], |r| {
                Ok(Current {
                    etag: r.get(0)?,
                    status: r.get(1)?,
                    execution_id: r.get(2)?,
                    name: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })
            .optional()
        })
        .ctx(WHAT)?;
    let allowed = match (expect, &current) {
        (Expect::Any, _) | (Expect::Absent | Expect::AbsentOrPending(_), None) => true,
        (Expect::ETag(expected), Some(found)) => etag_in(expected) == Some(found.etag),
        (Expect::AbsentOrPending(execution), Some(found)) => {
            found.status == OrchestrationStatus::Pending.as_str()
                && found.execution_id == execution.as_str()
        }
        _ => false,
    };
    if !allowed {
        return Err(StorageError::Conflict {
            what: format!("instance '{id}'"),
        });
    }
    let failure = row
        .failure
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StorageError::InvalidArgument(format!("failure of instance '{id}': {e}")))?;
    let json = |what: &str, v: Result<String, serde_json::Error>| {
        v.map_err(|e| StorageError::InvalidArgument(format!("{what} of instance '{id}': {e}")))
    };
    let tags = (!row.tags.is_empty())
        .then(|| json("tags", serde_json::to_string(&row.tags)))
        .transpose()?;
    let executions = (!row.executions.is_empty())
        .then(|| json("executions", serde_json::to_string(&row.executions)))
        .transpose()?;
    let etag = tx.next_version();
    let created_at = ts_to_sql(row.created_at);
    let sql = match &current {
        None => format!(
            "INSERT INTO instances ({COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
        ),
        Some(found) => update_sql(&IndexedChanges {
            name: found.name != row.name,
            status: found.status != row.status.as_str(),
            created_at: found.created_at != created_at,
        }),
    };
    tx.conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.execute(params![
                id,
                row.name,
                row.version,
                row.execution_id.as_str(),
                row.status.as_str(),
                row.input.as_str(),
                row.output.as_ref().map(|p| p.as_str()),
                failure,
                row.custom_status.as_ref().map(|p| p.as_str()),
                created_at,
                ts_to_sql(row.updated_at),
                row.completed_at.map(ts_to_sql),
                row.scheduled_start.map(ts_to_sql),
                row.partition,
                etag,
                tags,
                executions,
            ])
        })
        .ctx(WHAT)?;
    Ok(etag_out(etag))
}

/// Which indexed columns an update changes.
struct IndexedChanges {
    name: bool,
    status: bool,
    created_at: bool,
}

/// The `UPDATE` of an existing row (parameters numbered as in [`COLUMNS`]). An indexed column
/// that keeps its value is left out of the `SET` list: SQLite rewrites the index entries of
/// every column it assigns, even to the same value, and each one is a dirty page to commit.
fn update_sql(changes: &IndexedChanges) -> String {
    let mut set = String::from(
        "version = ?3, execution_id = ?4, input = ?6, output = ?7, failure = ?8, \
         custom_status = ?9, updated_at = ?11, completed_at = ?12, scheduled_start = ?13, \
         partition = ?14, etag = ?15, tags = ?16, executions = ?17",
    );
    if changes.name {
        set.push_str(", name = ?2");
    }
    if changes.status {
        set.push_str(", status = ?5");
    }
    if changes.created_at {
        set.push_str(", created_at = ?10");
    }
    format!("UPDATE instances SET {set} WHERE instance_id = ?1")
}

/// The raw column values of one row, decoded outside rusqlite's row callback so that decode
/// errors become `Corrupt` with a useful message.
struct RawRow {
    instance_id: String,
    name: String,
    version: Option<String>,
    execution_id: String,
    status: String,
    input: String,
    output: Option<String>,
    failure: Option<String>,
    custom_status: Option<String>,
    created_at: i64,
    updated_at: i64,
    completed_at: Option<i64>,
    scheduled_start: Option<i64>,
    partition: i64,
    etag: i64,
    tags: Option<String>,
    executions: Option<String>,
}

fn raw(r: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        instance_id: r.get(0)?,
        name: r.get(1)?,
        version: r.get(2)?,
        execution_id: r.get(3)?,
        status: r.get(4)?,
        input: r.get(5)?,
        output: r.get(6)?,
        failure: r.get(7)?,
        custom_status: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        completed_at: r.get(11)?,
        scheduled_start: r.get(12)?,
        partition: r.get(13)?,
        etag: r.get(14)?,
        tags: r.get(15)?,
        executions: r.get(16)?,
    })
}

fn decode(raw: RawRow) -> StorageResult<InstanceRow> {
    let what = format!("instance row '{}'", raw.instance_id);
    let bad = |e: &dyn std::fmt::Display| corrupt(&what, e);
    let failure = raw
        .failure
        .map(|f| serde_json::from_str::<FailureDetails>(&f))
        .transpose()
        .map_err(|e| bad(&e))?;
    Ok(InstanceRow {
        instance_id: InstanceId::new(raw.instance_id.clone()).map_err(|e| bad(&e))?,
        name: raw.name,
        version: raw.version,
        execution_id: ExecutionId::new(raw.execution_id).map_err(|e| bad(&e))?,
        status: raw
            .status
            .parse::<OrchestrationStatus>()
            .map_err(|e| bad(&e))?,
        input: Payload::from_text(raw.input),
        output: raw.output.map(Payload::from_text),
        failure,
        custom_status: raw.custom_status.map(Payload::from_text),
        created_at: ts_from_sql(&what, raw.created_at)?,
        updated_at: ts_from_sql(&what, raw.updated_at)?,
        completed_at: raw
            .completed_at
            .map(|t| ts_from_sql(&what, t))
            .transpose()?,
        scheduled_start: raw
            .scheduled_start
            .map(|t| ts_from_sql(&what, t))
            .transpose()?,
        partition: u32_from_sql(&what, raw.partition)?,
        tags: raw
            .tags
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| bad(&e))?
            .unwrap_or_default(),
        executions: raw
            .executions
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| bad(&e))?
            .unwrap_or_default(),
        etag: Some(etag_out(raw.etag)),
    })
}

fn get(conn: &Connection, instance: &InstanceId) -> StorageResult<Option<InstanceRow>> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM instances WHERE instance_id = ?1"
        ))
        .and_then(|mut s| s.query_row([instance.as_str()], raw).optional())
        .ctx(WHAT)?;
    found.map(decode).transpose()
}

/// SQLite's parameters of a listing: `?N` placeholders, a status list bound value by value,
/// each tag filter a lookup in the row's JSON.
#[derive(Default)]
struct SqliteParams(Vec<Value>);

impl SqliteParams {
    fn bind(&mut self, v: Value) -> String {
        self.0.push(v);
        instance_page::question_mark(self.0.len())
    }
}

impl instance_page::Params for SqliteParams {
    fn text(&mut self, value: String) -> String {
        self.bind(Value::Text(value))
    }

    fn integer(&mut self, value: i64) -> String {
        self.bind(Value::Integer(value))
    }

    fn status_in(&mut self, statuses: Vec<String>) -> String {
        let marks: Vec<String> = statuses.into_iter().map(|s| self.text(s)).collect();
        format!("status IN ({})", marks.join(", "))
    }

    /// Each tag filter: the row's tags hold the key with that value (no index).
    fn tags_hold(&mut self, tags: &Tags) -> StorageResult<String> {
        let each = tags.iter().map(|(key, value)| {
            let k = self.text(key.clone());
            let v = self.text(value.clone());
            format!(
                "EXISTS (SELECT 1 FROM json_each(instances.tags) WHERE key = {k} AND value = {v})"
            )
        });
        Ok(each.collect::<Vec<_>>().join(" AND "))
    }
}

fn list(conn: &Connection, query: &InstanceQuery, page_size: usize) -> StorageResult<InstancePage> {
    // One row more than the page tells whether another page exists.
    let mut params = SqliteParams::default();
    let sql = instance_page::select_page(query, COLUMNS, page_size + 1, &mut params)?;
    let raws: Vec<RawRow> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(rusqlite::params_from_iter(params.0), raw)?
                .collect()
        })
        .ctx(WHAT)?;
    instance_page::finish_page(query, raws, page_size, decode)
}

#[async_trait]
impl InstanceStore for SqliteStore {
    async fn get_instance(&self, instance: &InstanceId) -> StorageResult<Option<InstanceRow>> {
        let instance = instance.clone();
        self.read_point(move |conn| get(conn, &instance)).await
    }

    async fn put_instance(&self, row: &InstanceRow, expect: Expect) -> StorageResult<ETag> {
        let row = row.clone();
        self.write(move |tx| put_in(tx, &row, &expect)).await
    }

    async fn list_instances(&self, query: &InstanceQuery) -> StorageResult<InstancePage> {
        let page_size = instance_page::page_size(query)?;
        let query = query.clone();
        self.read(move |tx| list(tx, &query, page_size)).await
    }

    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool> {
        let sql = "DELETE FROM instances WHERE instance_id = ?1";
        Ok(self.delete_rows_of(WHAT, sql, instance).await? > 0)
    }

    async fn delete_instance_if(&self, instance: &InstanceId, etag: &ETag) -> StorageResult<bool> {
        // An ETag this store did not issue matches no row.
        let Some(version) = etag_in(etag) else {
            return Ok(false);
        };
        let instance = instance.clone();
        self.write(move |tx| {
            let n = tx
                .conn
                .prepare_cached("DELETE FROM instances WHERE instance_id = ?1 AND etag = ?2")
                .and_then(|mut s| s.execute(params![instance.as_str(), version]))
                .ctx(WHAT)?;
            Ok(n > 0)
        })
        .await
    }
}
