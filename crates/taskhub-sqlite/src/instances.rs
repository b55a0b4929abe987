//! The instances table: one status row per instance, ETag-conditional writes, filtered and
//! paged listing (by instance ID, the token being the last ID of a page; or by creation time,
//! the token being the last row's (time, ID)).

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, Row};
use taskhub_core::{ExecutionId, FailureDetails, InstanceId, OrchestrationStatus, Payload};
use taskhub_storage::{
    CreatedCursor, ETag, Expect, InstancePage, InstanceQuery, InstanceRow, InstanceStore,
    ListOrder, StorageError, StorageResult,
};

use crate::codec::{etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql};
use crate::errors::{corrupt, SqlResultExt};
use crate::store::SqliteStore;
use crate::writer::Tx;

const WHAT: &str = "instances";

/// The page size when a query gives 0.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The largest page size a query may ask for.
pub const MAX_PAGE_SIZE: usize = 1000;

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

/// The smallest string greater than every string that starts with `prefix` (under SQLite's
/// BINARY collation, which orders UTF-8 by code point), or `None` if there is none.
fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = u32::from(last) + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Adds a parameter; returns its placeholder.
fn bind(v: Value, values: &mut Vec<Value>) -> String {
    values.push(v);
    format!("?{}", values.len())
}

/// The SQL and parameters of one page of a query.
fn page_sql(query: &InstanceQuery, limit: usize) -> StorageResult<(String, Vec<Value>)> {
    let mut clauses: Vec<String> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    if !query.statuses.is_empty() {
        let marks: Vec<String> = query
            .statuses
            .iter()
            .map(|s| bind(Value::Text(s.as_str().to_owned()), &mut values))
            .collect();
        clauses.push(format!("status IN ({})", marks.join(", ")));
    }
    if let Some(name) = &query.name {
        let m = bind(Value::Text(name.clone()), &mut values);
        clauses.push(format!("name = {m}"));
    }
    if let Some(from) = query.created_from {
        let m = bind(Value::Integer(ts_to_sql(from)), &mut values);
        clauses.push(format!("created_at >= {m}"));
    }
    if let Some(to) = query.created_to {
        let m = bind(Value::Integer(ts_to_sql(to)), &mut values);
        clauses.push(format!("created_at < {m}"));
    }
    // Time ranges on the completion and last change (no index: filters of an operator's
    // listing or clean-up, combined with the indexed ones where given).
    for (bound, column, op) in [
        (query.completed_from, "completed_at", ">="),
        (query.completed_to, "completed_at", "<"),
        (query.updated_from, "updated_at", ">="),
        (query.updated_to, "updated_at", "<"),
    ] {
        if let Some(t) = bound {
            let m = bind(Value::Integer(ts_to_sql(t)), &mut values);
            clauses.push(format!("{column} {op} {m}"));
        }
    }
    if let Some(prefix) = query
        .instance_id_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        let m = bind(Value::Text(prefix.to_owned()), &mut values);
        clauses.push(format!("instance_id >= {m}"));
        if let Some(upper) = prefix_upper_bound(prefix) {
            let m = bind(Value::Text(upper), &mut values);
            clauses.push(format!("instance_id < {m}"));
        }
    }
    // Entities (IDs starting with '@') are left out unless asked for: the two ranges around
    // the '@' prefix, a condition on the primary key.
    if !query.include_entities {
        clauses.push("(instance_id < '@' OR instance_id >= 'A')".to_owned());
    }
    // Each tag filter: the row's tags hold the key with that value (no index).
    for (key, value) in &query.tags {
        let k = bind(Value::Text(key.clone()), &mut values);
        let v = bind(Value::Text(value.clone()), &mut values);
        clauses.push(format!(
            "EXISTS (SELECT 1 FROM json_each(instances.tags) WHERE key = {k} AND value = {v})"
        ));
    }
    // The order's key and, after a page, the keyset condition that resumes past its last row
    // (rows in creation-time order walk the (created_at, instance_id) index).
    let (order_by, after) = match query.order {
        ListOrder::NewestFirst => ("created_at DESC, instance_id DESC", "<"),
        ListOrder::OldestFirst => ("created_at ASC, instance_id ASC", ">"),
        _ => ("instance_id", ">"),
    };
    if let Some(token) = &query.continuation {
        if query.order == ListOrder::InstanceId {
            let m = bind(Value::Text(token.clone()), &mut values);
            clauses.push(format!("instance_id > {m}"));
        } else {
            let c = CreatedCursor::parse(token)?;
            let t = bind(Value::Integer(ts_to_sql(c.created_at)), &mut values);
            let id = bind(Value::Text(c.instance_id), &mut values);
            clauses.push(format!("(created_at, instance_id) {after} ({t}, {id})"));
        }
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let m = bind(
        Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)),
        &mut values,
    );
    Ok((
        format!("SELECT {COLUMNS} FROM instances {filter} ORDER BY {order_by} LIMIT {m}"),
        values,
    ))
}

fn list(conn: &Connection, query: &InstanceQuery, page_size: usize) -> StorageResult<InstancePage> {
    // One row more than the page tells whether another page exists.
    let (sql, values) = page_sql(query, page_size + 1)?;
    let raws: Vec<RawRow> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(rusqlite::params_from_iter(values), raw)?
                .collect()
        })
        .ctx(WHAT)?;
    let more = raws.len() > page_size;
    let instances = raws
        .into_iter()
        .take(page_size)
        .map(decode)
        .collect::<StorageResult<Vec<_>>>()?;
    let continuation = if more {
        instances.last().map(|r| match query.order {
            ListOrder::InstanceId => r.instance_id.as_str().to_owned(),
            _ => CreatedCursor::of(r).token(),
        })
    } else {
        None
    };
    Ok(InstancePage {
        instances,
        continuation,
    })
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
        let page_size = match query.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n if n > MAX_PAGE_SIZE => {
                return Err(StorageError::InvalidArgument(format!(
                    "page size {n}: it must be 1 to {MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})"
                )))
            }
            n => n,
        };
        let query = query.clone();
        self.read(move |tx| list(tx, &query, page_size)).await
    }

    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool> {
        let instance = instance.clone();
        self.write(move |tx| {
            let n = tx
                .conn
                .prepare_cached("DELETE FROM instances WHERE instance_id = ?1")
                .and_then(|mut s| s.execute([instance.as_str()]))
                .ctx(WHAT)?;
            Ok(n > 0)
        })
        .await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}"), None);
        assert_eq!(
            prefix_upper_bound("a\u{D7FF}").as_deref(),
            Some("a\u{E000}")
        );
    }
}
