//! The instances table: one status row per instance, conditional writes judged in the same
//! statement as the write, filtered and paged listing (keyset pagination, as on SQLite).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use taskhub_core::{ExecutionId, FailureDetails, InstanceId, OrchestrationStatus, Payload};
use taskhub_storage::sql::instance_page;
use taskhub_storage::{
    ETag, Expect, InstancePage, InstanceQuery, InstanceRow, InstanceStore, StorageError,
    StorageResult, Tags,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::codec::{etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql};
use crate::errors::{corrupt, PgResultExt};
use crate::store::PostgresStore;

const WHAT: &str = "instances";

pub use taskhub_storage::sql::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

const COLUMNS: &str = "instance_id, name, version, execution_id, status, input, output, failure, \
     custom_status, created_at, updated_at, completed_at, scheduled_start, partition, etag, \
     tags::text, executions";

const INSERT: &str = "INSERT INTO instances (instance_id, name, version, execution_id, status, \
     input, output, failure, custom_status, created_at, updated_at, completed_at, \
     scheduled_start, partition, tags, executions, etag)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::text::jsonb, $16,
             nextval('versions'))";

const SET_ALL: &str = "name = excluded.name, version = excluded.version, \
     execution_id = excluded.execution_id, status = excluded.status, input = excluded.input, \
     output = excluded.output, failure = excluded.failure, \
     custom_status = excluded.custom_status, created_at = excluded.created_at, \
     updated_at = excluded.updated_at, completed_at = excluded.completed_at, \
     scheduled_start = excluded.scheduled_start, partition = excluded.partition, \
     tags = excluded.tags, executions = excluded.executions, etag = excluded.etag";

/// The statement for a condition; `$17` is its argument where it has one.
pub(crate) fn put_sql(expect: &Expect) -> String {
    match expect {
        Expect::Any => {
            format!("{INSERT} ON CONFLICT (instance_id) DO UPDATE SET {SET_ALL} RETURNING etag")
        }
        Expect::Absent => format!("{INSERT} ON CONFLICT (instance_id) DO NOTHING RETURNING etag"),
        Expect::AbsentOrPending(_) => format!(
            "{INSERT} ON CONFLICT (instance_id) DO UPDATE SET {SET_ALL}
             WHERE instances.status = 'Pending' AND instances.execution_id = $17 RETURNING etag"
        ),
        Expect::ETag(_) => "UPDATE instances SET name = $2, version = $3, execution_id = $4, \
             status = $5, input = $6, output = $7, failure = $8, custom_status = $9, \
             created_at = $10, updated_at = $11, completed_at = $12, scheduled_start = $13, \
             partition = $14, tags = $15::text::jsonb, executions = $16, \
             etag = nextval('versions')
             WHERE instance_id = $1 AND etag = $17 RETURNING etag"
            .to_owned(),
    }
}

/// Writes a row under its condition; returns the new ETag.
pub(crate) async fn put_in(
    client: &impl GenericClient,
    row: &InstanceRow,
    expect: &Expect,
) -> StorageResult<ETag> {
    let id = row.instance_id.as_str();
    let conflict = || StorageError::Conflict {
        what: format!("instance '{id}'"),
    };
    let json = |what: &str, v: Result<String, serde_json::Error>| {
        v.map_err(|e| StorageError::InvalidArgument(format!("{what} of instance '{id}': {e}")))
    };
    let failure = row
        .failure
        .as_ref()
        .map(|f| json("failure", serde_json::to_string(f)))
        .transpose()?;
    let tags = (!row.tags.is_empty())
        .then(|| json("tags", serde_json::to_string(&row.tags)))
        .transpose()?;
    let executions = (!row.executions.is_empty())
        .then(|| json("executions", serde_json::to_string(&row.executions)))
        .transpose()?;
    debug_assert_eq!(
        OrchestrationStatus::Pending.as_str(),
        "Pending",
        "put_sql names the Pending status"
    );
    let name = row.name.as_str();
    let version = row.version.as_deref();
    let execution = row.execution_id.as_str();
    let status = row.status.as_str();
    let input = row.input.as_str();
    let output = row.output.as_ref().map(|p| p.as_str());
    let custom = row.custom_status.as_ref().map(|p| p.as_str());
    let created = ts_to_sql(row.created_at);
    let updated = ts_to_sql(row.updated_at);
    let completed = row.completed_at.map(ts_to_sql);
    let scheduled = row.scheduled_start.map(ts_to_sql);
    let partition = i64::from(row.partition);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &id,
        &name,
        &version,
        &execution,
        &status,
        &input,
        &output,
        &failure,
        &custom,
        &created,
        &updated,
        &completed,
        &scheduled,
        &partition,
        &tags,
        &executions,
    ];
    let etag_arg: i64;
    let execution_arg: String;
    match expect {
        Expect::ETag(expected) => {
            let Some(v) = etag_in(expected) else {
                return Err(conflict());
            };
            etag_arg = v;
            params.push(&etag_arg);
        }
        Expect::AbsentOrPending(e) => {
            execution_arg = e.as_str().to_owned();
            params.push(&execution_arg);
        }
        _ => {}
    }
    let stmt = client.prepare_cached(&put_sql(expect)).await.ctx(WHAT)?;
    match client.query_opt(&stmt, &params).await.ctx(WHAT)? {
        Some(r) => Ok(etag_out(r.get(0))),
        None => Err(conflict()),
    }
}

fn decode(r: &Row) -> StorageResult<InstanceRow> {
    let instance_id: String = r.get(0);
    let what = format!("instance row '{instance_id}'");
    let bad = |e: &dyn std::fmt::Display| corrupt(&what, e);
    let failure = r
        .get::<_, Option<String>>(7)
        .map(|f| serde_json::from_str::<FailureDetails>(&f))
        .transpose()
        .map_err(|e| bad(&e))?;
    Ok(InstanceRow {
        instance_id: InstanceId::new(instance_id.clone()).map_err(|e| bad(&e))?,
        name: r.get(1),
        version: r.get(2),
        execution_id: ExecutionId::new(r.get::<_, String>(3)).map_err(|e| bad(&e))?,
        status: r
            .get::<_, String>(4)
            .parse::<OrchestrationStatus>()
            .map_err(|e| bad(&e))?,
        input: Payload::from_text(r.get::<_, String>(5)),
        output: r.get::<_, Option<String>>(6).map(Payload::from_text),
        failure,
        custom_status: r.get::<_, Option<String>>(8).map(Payload::from_text),
        created_at: ts_from_sql(&what, r.get(9))?,
        updated_at: ts_from_sql(&what, r.get(10))?,
        completed_at: r
            .get::<_, Option<i64>>(11)
            .map(|t| ts_from_sql(&what, t))
            .transpose()?,
        scheduled_start: r
            .get::<_, Option<i64>>(12)
            .map(|t| ts_from_sql(&what, t))
            .transpose()?,
        partition: u32_from_sql(&what, r.get(13))?,
        etag: Some(etag_out(r.get(14))),
        tags: r
            .get::<_, Option<String>>(15)
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| bad(&e))?
            .unwrap_or_default(),
        executions: r
            .get::<_, Option<String>>(16)
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| bad(&e))?
            .unwrap_or_default(),
    })
}

/// PostgreSQL's parameters of a listing: `$N` placeholders, a status list as one array,
/// the tag filter as one JSON containment.
#[derive(Default)]
struct PgParams(Vec<Box<dyn ToSql + Sync + Send>>);

impl PgParams {
    fn bind(&mut self, v: Box<dyn ToSql + Sync + Send>) -> String {
        self.0.push(v);
        instance_page::dollar(self.0.len())
    }
}

impl instance_page::Params for PgParams {
    fn text(&mut self, value: String) -> String {
        self.bind(Box::new(value))
    }

    fn integer(&mut self, value: i64) -> String {
        self.bind(Box::new(value))
    }

    fn status_in(&mut self, statuses: Vec<String>) -> String {
        format!("status = ANY({}::text[])", self.bind(Box::new(statuses)))
    }

    fn tags_hold(&mut self, tags: &Tags) -> StorageResult<String> {
        let text = serde_json::to_string(tags)
            .map_err(|e| StorageError::InvalidArgument(format!("tag filter: {e}")))?;
        Ok(format!("tags @> {}::text::jsonb", self.text(text)))
    }
}

#[async_trait]
impl InstanceStore for PostgresStore {
    async fn get_instance(&self, instance: &InstanceId) -> StorageResult<Option<InstanceRow>> {
        let sql = format!("SELECT {COLUMNS} FROM instances WHERE instance_id = $1");
        let (client, stmt) = self.prepared(WHAT, &sql).await?;
        let row = client
            .query_opt(&stmt, &[&instance.as_str()])
            .await
            .ctx(WHAT)?;
        row.as_ref().map(decode).transpose()
    }

    async fn put_instance(&self, row: &InstanceRow, expect: Expect) -> StorageResult<ETag> {
        let client = self.client().await?;
        put_in(&client, row, &expect).await
    }

    async fn list_instances(&self, query: &InstanceQuery) -> StorageResult<InstancePage> {
        let page_size = instance_page::page_size(query)?;
        // One row more than the page tells whether another page exists.
        let mut values = PgParams::default();
        let sql = instance_page::select_page(query, COLUMNS, page_size + 1, &mut values)?;
        let params: Vec<&(dyn ToSql + Sync)> = values
            .0
            .iter()
            .map(|v| &**v as &(dyn ToSql + Sync))
            .collect();
        let (client, stmt) = self.prepared(WHAT, &sql).await?;
        let rows = client.query(&stmt, &params).await.ctx(WHAT)?;
        instance_page::finish_page(query, &rows, page_size, decode)
    }

    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool> {
        let (client, stmt) = self
            .prepared(WHAT, "DELETE FROM instances WHERE instance_id = $1")
            .await?;
        let n = client
            .execute(&stmt, &[&instance.as_str()])
            .await
            .ctx(WHAT)?;
        Ok(n > 0)
    }

    async fn delete_instance_if(&self, instance: &InstanceId, etag: &ETag) -> StorageResult<bool> {
        let Some(version) = etag_in(etag) else {
            return Ok(false);
        };
        let (client, stmt) = self
            .prepared(
                WHAT,
                "DELETE FROM instances WHERE instance_id = $1 AND etag = $2",
            )
            .await?;
        let n = client
            .execute(&stmt, &[&instance.as_str(), &version])
            .await
            .ctx(WHAT)?;
        Ok(n > 0)
    }
}
