//! A small Table service REST client: point reads, conditional writes, queries with
//! continuation, and entity-group batches whose every operation status is checked.
//!
//! Every property is a string (numbers are zero-padded so that they compare in order), so no
//! OData type annotations are needed.

use serde_json::{Map, Value};
use taskhub_storage::{StorageError, StorageResult};

use crate::http::{encode, status_error, Http, Req, Resp, Service};

/// An entity's properties (PartitionKey and RowKey included).
pub(crate) type Entity = Map<String, Value>;

/// The most operations one batch may hold.
pub(crate) const MAX_BATCH: usize = 100;

/// The largest request body of one batch (the service's limit is 4 MiB; the margin covers
/// the batch's own boundaries and headers).
pub(crate) const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024 - 16 * 1024;

/// A row as read: its properties and ETag.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub entity: Entity,
    pub etag: String,
}

impl Row {
    pub(crate) fn str(&self, name: &str) -> &str {
        self.entity
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// Builds an entity from key and string properties.
pub(crate) fn entity(pk: &str, rk: &str, props: &[(&str, String)]) -> Entity {
    let mut e = Map::new();
    e.insert("PartitionKey".to_owned(), Value::String(pk.to_owned()));
    e.insert("RowKey".to_owned(), Value::String(rk.to_owned()));
    for (k, v) in props {
        e.insert((*k).to_owned(), Value::String(v.clone()));
    }
    e
}

/// A string literal for a `$filter`.
pub(crate) fn lit(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub(crate) enum BatchOp {
    /// Insert; fails if the row exists.
    Insert(Entity),
    /// Insert or replace, unconditionally.
    Upsert(Entity),
    /// Replace if the ETag matches.
    Replace(Entity, String),
    /// Delete, unconditionally.
    Delete(String, String),
}

/// The Table service.
#[derive(Debug, Clone)]
pub(crate) struct Tables {
    pub(crate) http: Http,
}

fn entity_path(table: &str, pk: &str, rk: &str) -> String {
    format!(
        "/{table}(PartitionKey='{}',RowKey='{}')",
        encode(&pk.replace('\'', "''")),
        encode(&rk.replace('\'', "''"))
    )
}

fn key(e: &Entity, k: &str) -> String {
    e.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn json_req(method: &'static str, path: String) -> Req {
    Req::new(Service::Table, method, path)
        .header("accept", "application/json;odata=minimalmetadata")
        .header("dataserviceversion", "3.0")
        .header("maxdataserviceversion", "3.0;NetFx")
}

fn etag_of(resp: &Resp) -> String {
    resp.header("etag").unwrap_or_default().to_owned()
}

fn parse_entity(value: Value, what: &str) -> StorageResult<Row> {
    let Value::Object(mut entity) = value else {
        return Err(StorageError::Corrupt {
            what: what.to_owned(),
            detail: "an entity is not a JSON object".to_owned(),
        });
    };
    let etag = entity
        .remove("odata.etag")
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    entity.retain(|k, _| !k.starts_with("odata.") && !k.contains("@odata"));
    Ok(Row { entity, etag })
}

fn parse_json(resp: &Resp, what: &str) -> StorageResult<Value> {
    serde_json::from_slice(&resp.body).map_err(|e| StorageError::Corrupt {
        what: what.to_owned(),
        detail: format!("bad JSON from the Table service: {e}"),
    })
}

impl Tables {
    /// Creates a table; an existing one is fine (one still being deleted is waited for).
    pub(crate) async fn create_table(&self, table: &str) -> StorageResult<()> {
        let body = serde_json::json!({ "TableName": table }).to_string();
        let req = json_req("POST", "/Tables".to_owned())
            .header("content-type", "application/json")
            .header("prefer", "return-no-content")
            .body(body);
        self.http
            .create(&req, &format!("table {table}"))
            .await
            .map(|_| ())
    }

    /// Reads one row.
    pub(crate) async fn get(&self, table: &str, pk: &str, rk: &str) -> StorageResult<Option<Row>> {
        let what = format!("{table} row {pk}/{rk}");
        let resp = self
            .http
            .send(&json_req("GET", entity_path(table, pk, rk)))
            .await?;
        if resp.status == 404 {
            return Ok(None);
        }
        if !resp.ok() {
            return Err(status_error(&resp, &what));
        }
        let mut row = parse_entity(parse_json(&resp, &what)?, &what)?;
        row.etag = etag_of(&resp);
        Ok(Some(row))
    }

    /// Inserts a row; `Conflict` if it exists. Returns the new ETag.
    pub(crate) async fn insert(&self, table: &str, e: &Entity) -> StorageResult<String> {
        let what = format!(
            "{table} row {}/{}",
            key(e, "PartitionKey"),
            key(e, "RowKey")
        );
        let resp = self
            .http
            .send(
                &json_req("POST", format!("/{table}"))
                    .header("content-type", "application/json")
                    .header("prefer", "return-no-content")
                    .body(Value::Object(e.clone()).to_string()),
            )
            .await?;
        if resp.ok() {
            Ok(etag_of(&resp))
        } else {
            Err(status_error(&resp, &what))
        }
    }

    /// Replaces a row: if `if_match` is `Some`, only if its ETag matches (`Conflict` else, and
    /// when the row is missing); if `None`, inserts or replaces. Returns the new ETag.
    pub(crate) async fn replace(
        &self,
        table: &str,
        e: &Entity,
        if_match: Option<&str>,
    ) -> StorageResult<String> {
        self.write("PUT", table, e, if_match).await
    }

    /// Merges properties into a row (same conditions as [`replace`](Self::replace)).
    pub(crate) async fn merge(
        &self,
        table: &str,
        e: &Entity,
        if_match: Option<&str>,
    ) -> StorageResult<String> {
        self.write("MERGE", table, e, if_match).await
    }

    async fn write(
        &self,
        method: &'static str,
        table: &str,
        e: &Entity,
        if_match: Option<&str>,
    ) -> StorageResult<String> {
        let (pk, rk) = (key(e, "PartitionKey"), key(e, "RowKey"));
        let what = format!("{table} row {pk}/{rk}");
        let mut req = json_req(method, entity_path(table, &pk, &rk))
            .header("content-type", "application/json")
            .body(Value::Object(e.clone()).to_string());
        if let Some(etag) = if_match {
            req = req.header("if-match", etag);
        }
        let resp = self.http.send(&req).await?;
        match resp.status {
            s if (200..300).contains(&s) => Ok(etag_of(&resp)),
            // A missing row, or an ETag the service cannot even parse, is not the expected one.
            404 if if_match.is_some() => Err(StorageError::Conflict { what }),
            400 if if_match.is_some() && resp.error_code() == "InvalidInput" => {
                Err(StorageError::Conflict { what })
            }
            _ => Err(status_error(&resp, &what)),
        }
    }

    /// Deletes a row (any ETag); returns whether it existed.
    pub(crate) async fn delete(&self, table: &str, pk: &str, rk: &str) -> StorageResult<bool> {
        let resp = self
            .http
            .send(&json_req("DELETE", entity_path(table, pk, rk)).header("if-match", "*"))
            .await?;
        match resp.status {
            404 => Ok(false),
            s if (200..300).contains(&s) => Ok(true),
            _ => Err(status_error(&resp, &format!("{table} row {pk}/{rk}"))),
        }
    }

    /// Deletes the rows of `ops` (deletes of one partition, one batch's worth): as one batch,
    /// or, when the batch is refused because one of its rows is already gone (the whole batch
    /// fails then), row by row, a missing row being no error. Every row the batch names is gone
    /// afterwards (a purge or clean-up that skipped the batch left the others behind).
    pub(crate) async fn delete_all(&self, table: &str, ops: &[BatchOp]) -> StorageResult<()> {
        if ops.is_empty() {
            return Ok(());
        }
        match self.batch(table, ops).await {
            Ok(_) => Ok(()),
            Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {
                for op in ops {
                    if let BatchOp::Delete(pk, rk) = op {
                        self.delete(table, pk, rk).await?;
                    }
                }
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes a row if its ETag is `etag` (`If-Match`); returns whether it did: false when
    /// the row changed (412) or is gone (404).
    pub(crate) async fn delete_if(
        &self,
        table: &str,
        pk: &str,
        rk: &str,
        etag: &str,
    ) -> StorageResult<bool> {
        let resp = self
            .http
            .send(&json_req("DELETE", entity_path(table, pk, rk)).header("if-match", etag))
            .await?;
        match resp.status {
            404 | 412 => Ok(false),
            // An ETag the service cannot parse is not the row's.
            400 if resp.error_code() == "InvalidInput" => Ok(false),
            s if (200..300).contains(&s) => Ok(true),
            _ => Err(status_error(&resp, &format!("{table} row {pk}/{rk}"))),
        }
    }

    /// One page of a query. `continuation` is the service's (NextPartitionKey, NextRowKey).
    pub(crate) async fn query_page(
        &self,
        table: &str,
        filter: &str,
        top: Option<usize>,
        continuation: Option<&(String, String)>,
    ) -> StorageResult<(Vec<Row>, Option<(String, String)>)> {
        self.query_page_of(table, filter, None, top, continuation)
            .await
    }

    /// [`query_page`](Self::query_page) returning only the `select`ed properties (e.g.
    /// `PartitionKey,CreatedTime`), when given.
    pub(crate) async fn query_page_of(
        &self,
        table: &str,
        filter: &str,
        select: Option<&str>,
        top: Option<usize>,
        continuation: Option<&(String, String)>,
    ) -> StorageResult<(Vec<Row>, Option<(String, String)>)> {
        let what = format!("query of {table}");
        let mut req = json_req("GET", format!("/{table}()")).query("$filter", filter);
        if let Some(select) = select {
            req = req.query("$select", select);
        }
        if let Some(top) = top {
            req = req.query("$top", top.to_string());
        }
        if let Some((pk, rk)) = continuation {
            req = req.query("NextPartitionKey", pk.clone());
            if !rk.is_empty() {
                req = req.query("NextRowKey", rk.clone());
            }
        }
        let resp = self.http.send(&req).await?;
        if resp.status == 404 {
            return Ok((Vec::new(), None));
        }
        if !resp.ok() {
            return Err(status_error(&resp, &what));
        }
        let value = parse_json(&resp, &what)?;
        let rows = match value.get("value") {
            Some(Value::Array(items)) => items
                .iter()
                .cloned()
                .map(|v| parse_entity(v, &what))
                .collect::<StorageResult<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let next = resp.header("x-ms-continuation-nextpartitionkey").map(|pk| {
            (
                pk.to_owned(),
                resp.header("x-ms-continuation-nextrowkey")
                    .unwrap_or_default()
                    .to_owned(),
            )
        });
        Ok((rows, next))
    }

    /// Every row a query matches, following continuation tokens.
    pub(crate) async fn query_all(&self, table: &str, filter: &str) -> StorageResult<Vec<Row>> {
        self.query_all_of(table, filter, None).await
    }

    /// Every row matching `filter`, with only the `select`ed properties when given.
    pub(crate) async fn query_all_of(
        &self,
        table: &str,
        filter: &str,
        select: Option<&str>,
    ) -> StorageResult<Vec<Row>> {
        let mut rows = Vec::new();
        let mut next = None;
        loop {
            let (page, cont) = self
                .query_page_of(table, filter, select, None, next.as_ref())
                .await?;
            rows.extend(page);
            match cont {
                Some(c) => next = Some(c),
                None => return Ok(rows),
            }
        }
    }

    /// Runs one entity-group transaction (at most [`MAX_BATCH`] operations, one
    /// PartitionKey). Checks every operation's status: the first failure is returned mapped
    /// (409/412/404 → `Conflict`), and then nothing was written. Returns each operation's new
    /// ETag (empty for deletes).
    pub(crate) async fn batch(&self, table: &str, ops: &[BatchOp]) -> StorageResult<Vec<String>> {
        if ops.is_empty() || ops.len() > MAX_BATCH {
            return Err(StorageError::InvalidArgument(format!(
                "a table batch holds 1 to {MAX_BATCH} operations, not {}",
                ops.len()
            )));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (batch, changeset) = (format!("batch_{id}"), format!("changeset_{id}"));
        let mut body =
            format!("--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n");
        for (i, op) in ops.iter().enumerate() {
            body.push_str(&format!("--{changeset}\r\n"));
            body.push_str(&self.op_part(table, i, op));
        }
        let size = body.len();
        if size > MAX_BATCH_BYTES {
            return Err(StorageError::TooLarge {
                what: format!("batch on {table}"),
                size,
                limit: MAX_BATCH_BYTES,
            });
        }
        body.push_str(&format!("--{changeset}--\r\n--{batch}--\r\n"));
        let what = format!("batch on {table}");
        let resp = self
            .http
            .send(
                &json_req("POST", "/$batch".to_owned())
                    .header("content-type", format!("multipart/mixed; boundary={batch}"))
                    .body(body),
            )
            .await?;
        if !resp.ok() {
            return Err(status_error(&resp, &what));
        }
        check_batch_response(&resp.text(), ops.len(), &what)
    }

    /// One operation's part of a batch body (without its changeset boundary line).
    fn op_part(&self, table: &str, i: usize, op: &BatchOp) -> String {
        let (method, path, json, if_match) = match op {
            BatchOp::Insert(e) => ("POST", format!("/{table}"), Some(e), None),
            BatchOp::Upsert(e) => (
                "PUT",
                entity_path(table, &key(e, "PartitionKey"), &key(e, "RowKey")),
                Some(e),
                None,
            ),
            BatchOp::Replace(e, etag) => (
                "PUT",
                entity_path(table, &key(e, "PartitionKey"), &key(e, "RowKey")),
                Some(e),
                Some(etag.as_str()),
            ),
            BatchOp::Delete(pk, rk) => ("DELETE", entity_path(table, pk, rk), None, Some("*")),
        };
        let mut part = format!(
            "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n{method} {} HTTP/1.1\r\nContent-ID: {i}\r\nAccept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n",
            self.http.table_url(&path)
        );
        if method == "POST" {
            part.push_str("Prefer: return-no-content\r\n");
        }
        if let Some(etag) = if_match {
            part.push_str(&format!("If-Match: {etag}\r\n"));
        }
        match json {
            Some(e) => {
                let text = Value::Object(e.clone()).to_string();
                part.push_str(&format!(
                    "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}\r\n",
                    text.len()
                ));
            }
            None => part.push_str("\r\n"),
        }
        part
    }

    /// How many bytes `op` adds to a batch body on `table` (its part and boundary line).
    pub(crate) fn op_size(&self, table: &str, op: &BatchOp) -> usize {
        // "--changeset_<32 hex>\r\n" and a three-digit Content-ID at most.
        self.op_part(table, MAX_BATCH, op).len() + 2 + 10 + 32 + 2
    }

    /// Splits `ops` in order into batches that each hold at most [`MAX_BATCH`] operations and
    /// [`MAX_BATCH_BYTES`] of body. `TooLarge` if one operation alone is over the byte limit.
    pub(crate) fn split(&self, table: &str, ops: Vec<BatchOp>) -> StorageResult<Vec<Vec<BatchOp>>> {
        let mut out: Vec<Vec<BatchOp>> = Vec::new();
        let mut current = Vec::new();
        let mut bytes = BATCH_OVERHEAD;
        for op in ops {
            let size = self.op_size(table, &op);
            if BATCH_OVERHEAD + size > MAX_BATCH_BYTES {
                return Err(StorageError::TooLarge {
                    what: format!("one operation of a batch on {table}"),
                    size,
                    limit: MAX_BATCH_BYTES - BATCH_OVERHEAD,
                });
            }
            if current.len() == MAX_BATCH || bytes + size > MAX_BATCH_BYTES {
                out.push(std::mem::take(&mut current));
                bytes = BATCH_OVERHEAD;
            }
            bytes += size;
            current.push(op);
        }
        if !current.is_empty() {
            out.push(current);
        }
        Ok(out)
    }
}

/// The bytes of a batch body besides its operations (the batch and changeset boundaries).
pub(crate) const BATCH_OVERHEAD: usize = 256;

/// Reads each operation's status line (and ETag) from a batch response.
fn check_batch_response(text: &str, count: usize, what: &str) -> StorageResult<Vec<String>> {
    let mut etags = Vec::new();
    let parts = text.split("HTTP/1.1 ").skip(1);
    for part in parts {
        let status: u16 = part
            .get(..3)
            .and_then(|s| s.parse().ok())
            .unwrap_or_default();
        if !(200..300).contains(&status) {
            let detail: String = part.chars().take(400).collect();
            return Err(match status {
                404 | 409 | 412 => StorageError::Conflict {
                    what: what.to_owned(),
                },
                413 => StorageError::TooLarge {
                    what: what.to_owned(),
                    size: 0,
                    limit: 0,
                },
                500 | 503 => StorageError::Busy { retry_after: None },
                _ => StorageError::Backend(format!("{what}: {detail}")),
            });
        }
        let etag = part
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("etag")
                    .then(|| v.trim().to_owned())
            })
            .unwrap_or_default();
        etags.push(etag);
    }
    if etags.len() != count {
        return Err(StorageError::Backend(format!(
            "{what}: {count} operations sent, {} statuses in the response",
            etags.len()
        )));
    }
    Ok(etags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_operation_in_a_batch_response_is_an_error() {
        let ok = "--b\r\nHTTP/1.1 204 No Content\r\nETag: W/\"1\"\r\n\r\n--b\r\nHTTP/1.1 201 Created\r\nETag: W/\"2\"\r\n";
        assert_eq!(
            check_batch_response(ok, 2, "t").unwrap(),
            vec!["W/\"1\"", "W/\"2\""]
        );
        let failed = "--b\r\nHTTP/1.1 412 Precondition Failed\r\n\r\n{}";
        assert!(matches!(
            check_batch_response(failed, 2, "t"),
            Err(StorageError::Conflict { .. })
        ));
    }
}
