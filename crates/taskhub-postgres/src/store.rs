//! [`PostgresStore`]: the pool, and opening, creating and deleting a hub's schema.

use std::sync::Arc;

use deadpool_postgres::{
    Hook, HookError, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime,
};
use taskhub_storage::{QueueName, QueueWake, StorageError, StorageResult, TaskHubStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::errors::{map_pool, PgResultExt};
use crate::notify::{listen_loop, send_loop, Listener, Publisher, Watchers};
use crate::options::{redact, PostgresOptions};
use crate::schema::{exists, migrate, schema_name};
use crate::session;

/// Whether opening may create the hub's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// The schema must exist ([`StorageError::NotFound`] otherwise; nothing is created).
    No,
    /// Create it if missing.
    IfMissing,
}

/// How long the server lets a transaction sit idle (its client neither sends the next
/// statement nor commits) before it ends the session and rolls it back. A worker process
/// stopped in the middle of a checkpoint holds its partition's fence `FOR SHARE`; the new
/// owner's lease write waits for it at most this long. A live worker's checkpoint is never
/// idle for more than a round trip.
pub use crate::session::IDLE_IN_TRANSACTION_TIMEOUT;

/// Gauge: connections the store's pool holds open.
pub const POOL_CONNECTIONS: &str = "taskhub_postgres_pool_connections";
/// Gauge: of those, idle in the pool.
pub const POOL_IDLE: &str = "taskhub_postgres_pool_idle_connections";
/// Gauge: callers waiting for a connection.
pub const POOL_WAITING: &str = "taskhub_postgres_pool_waiting";

/// Pool metrics: what [`PostgresStore::pool_status`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// The most connections the pool opens.
    pub max_size: usize,
    /// Connections open now.
    pub size: usize,
    /// Of those, idle in the pool.
    pub available: usize,
    /// Callers waiting for a connection.
    pub waiting: usize,
}

/// A task hub in one schema of a PostgreSQL database, shared by any number of worker
/// processes on any number of machines.
pub struct PostgresStore {
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    publisher: Option<Arc<Publisher>>,
    /// The queue of the group-committing checkpoint writer (see [`writer`](crate::writer)).
    pub(crate) writer: tokio::sync::mpsc::UnboundedSender<crate::writer::Job>,
    writer_stats: Arc<crate::writer::Counters>,
    watchers: Arc<Watchers>,
    place: String,
    schema_version: i64,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("place", &self.place)
            .field("schema", &self.schema)
            .field("schema_version", &self.schema_version)
            .finish_non_exhaustive()
    }
}

/// A connection's settings and TLS connector, from the options: the URL, the connect timeout,
/// the `application_name` (unless the URL names one) and the CA file.
pub(crate) fn connection(
    options: &PostgresOptions,
) -> StorageResult<(tokio_postgres::Config, MakeRustlsConnect)> {
    let url = options.url.as_deref().ok_or_else(|| {
        StorageError::InvalidArgument(
            "postgres.url is not set (TASKHUB_POSTGRES_URL=postgres://user:password@host:port/database)"
                .into(),
        )
    })?;
    let mut config: tokio_postgres::Config = url.parse().map_err(|_| {
        StorageError::InvalidArgument("postgres.url is not a PostgreSQL connection URL".into())
    })?;
    config.connect_timeout(options.connect_timeout);
    if config.get_application_name().is_none() {
        config.application_name(session::application_name());
    }
    let tls = crate::tls::connector(options.tls_ca_file.as_deref())?;
    Ok((config, tls))
}

/// A connection's settings and TLS connector, and the pool of a hub made of them: each
/// connection runs the hub's [`session`] settings.
pub(crate) fn pool(
    options: &PostgresOptions,
    schema: &str,
) -> StorageResult<(Pool, tokio_postgres::Config, MakeRustlsConnect)> {
    let (config, tls) = connection(options)?;
    let manager = Manager::from_config(
        config.clone(),
        tls.clone(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let settings = Arc::new(session::settings_sql(schema, options));
    let pool = Pool::builder(manager)
        .max_size(options.pool_size)
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(options.connect_timeout))
        .post_create(Hook::async_fn(move |client, _| {
            let settings = settings.clone();
            Box::pin(async move {
                client
                    .batch_execute(&settings)
                    .await
                    .map_err(HookError::Backend)
            })
        }))
        .build()
        .map_err(|e| StorageError::InvalidArgument(format!("connection pool: {e}")))?;
    Ok((pool, config, tls))
}

impl PostgresStore {
    /// Opens the hub called `hub` (schema `taskhub_<hub>`) on the server `options.url` names,
    /// creating it if `create` allows, and migrates its schema.
    ///
    /// # Errors
    /// `NotFound` for a missing hub under [`Create::No`]; `Corrupt` naming both versions for a
    /// hub made by a newer build; `Unavailable` if the server does not answer;
    /// `InvalidArgument` for a bad URL, hub name or CA file.
    pub async fn open(options: &PostgresOptions, hub: &str, create: Create) -> StorageResult<Self> {
        let schema = schema_name(hub)?;
        let (pool, config, tls) = pool(options, &schema)?;
        let place = options.url.as_deref().map(redact).unwrap_or_default();
        let mut client = pool.get().await.map_err(map_pool)?;
        session::check_server(&client).await?;
        if create == Create::No && !exists(&client, &schema).await? {
            return Err(StorageError::NotFound {
                what: format!("task hub '{hub}' (schema {schema}) on {place}"),
            });
        }
        let schema_version = migrate(&mut client, &schema, create == Create::IfMissing).await?;
        drop(client);
        let watchers = Arc::new(Watchers::default());
        let publisher = options.notify.then(|| {
            let publisher = Arc::new(Publisher::default());
            tokio::spawn(send_loop(publisher.clone(), pool.clone(), schema.clone()));
            tokio::spawn(listen_loop(Listener {
                watchers: Arc::downgrade(&watchers),
                publisher: publisher.clone(),
                config,
                tls,
                channel: schema.clone(),
            }));
            publisher
        });
        let (writer, jobs) = tokio::sync::mpsc::unbounded_channel();
        let writer_stats = Arc::new(crate::writer::Counters::default());
        let jobs = Arc::new(tokio::sync::Mutex::new(jobs));
        for _ in 0..crate::writer::WRITERS {
            tokio::spawn(crate::writer::run(
                pool.clone(),
                jobs.clone(),
                options.max_batch,
                writer_stats.clone(),
            ));
        }
        Ok(Self {
            pool,
            schema,
            writer,
            writer_stats,
            publisher,
            watchers,
            place,
            schema_version,
        })
    }

    /// Drops the hub's schema and everything in it; true if it existed.
    ///
    /// # Errors
    /// As any statement.
    pub async fn delete_hub(options: &PostgresOptions, hub: &str) -> StorageResult<bool> {
        let schema = schema_name(hub)?;
        let (pool, _, _) = pool(options, &schema)?;
        let client = pool.get().await.map_err(map_pool)?;
        let existed = exists(&client, &schema).await?;
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await
            .ctx("task hub schema")?;
        Ok(existed)
    }

    /// The schema of this hub.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The schema version (after migration).
    #[must_use]
    pub fn schema_version(&self) -> i64 {
        self.schema_version
    }

    /// Where the hub is, without secrets: `user@host:port/database`.
    #[must_use]
    pub fn place(&self) -> &str {
        &self.place
    }

    /// How many checkpoints the group-committing writer ran, in how many transactions.
    #[must_use]
    pub fn writer_stats(&self) -> crate::writer::WriterStats {
        self.writer_stats.snapshot()
    }

    /// The pool's metrics now.
    #[must_use]
    pub fn pool_status(&self) -> PoolStatus {
        let s = self.pool.status();
        PoolStatus {
            max_size: s.max_size,
            size: s.size,
            available: s.available,
            waiting: s.waiting,
        }
    }

    /// Tells other processes (`NOTIFY`) that `queue` has new visible messages.
    pub(crate) fn announce(&self, queue: QueueName) {
        if let Some(p) = &self.publisher {
            p.mark(queue);
        }
    }

    /// A pooled connection; records the pool's gauges.
    pub(crate) async fn client(&self) -> StorageResult<Object> {
        let got = self.pool.get().await.map_err(map_pool);
        self.record_pool();
        if let Ok(client) = &got {
            session::bound_statement_cache(client);
        }
        got
    }

    /// Sets the pool's gauges ([`POOL_CONNECTIONS`], [`POOL_IDLE`], [`POOL_WAITING`]),
    /// labelled with the hub's schema.
    pub(crate) fn record_pool(&self) {
        let s = self.pool.status();
        let hub = self.schema.clone();
        #[expect(
            clippy::cast_precision_loss,
            reason = "connection counts stay far below 2^52"
        )]
        {
            metrics::gauge!(POOL_CONNECTIONS, "hub" => hub.clone()).set(s.size as f64);
            metrics::gauge!(POOL_IDLE, "hub" => hub.clone()).set(s.available as f64);
            metrics::gauge!(POOL_WAITING, "hub" => hub).set(s.waiting as f64);
        }
    }
}

impl TaskHubStore for PostgresStore {
    fn backend_name(&self) -> &'static str {
        "postgres"
    }

    /// Visibility timeouts, delays and enqueue times run on the server's clock.
    fn owns_time(&self) -> bool {
        true
    }

    fn atomic_checkpoints(&self) -> bool {
        true
    }

    /// `stats` counts held messages too (one `SELECT` over the table).
    fn stats_count_held_messages(&self) -> bool {
        true
    }

    /// Other processes' writes arrive by `LISTEN/NOTIFY` (unless `notify` is off).
    fn watch_queues(&self, wake: QueueWake) {
        self.watchers.add(wake);
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        if let Some(p) = &self.publisher {
            p.close();
        }
    }
}
