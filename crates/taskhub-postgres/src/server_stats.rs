//! The server's own counters, for the benchmarks' figures per unit of work: transactions
//! (`pg_stat_database`, the hub's database), statements (`pg_stat_statements`, when the server
//! loads it), WAL bytes (`pg_stat_wal`, the whole cluster) and, when the server runs on this
//! machine and the role may read `data_directory`, the postmaster's process ID (its CPU and its
//! children's are the server's).
//!
//! Each reading opens a connection of its own: a backend reports its transactions to the
//! statistics only now and then (at most every second, and when it exits), so a reading taken
//! after the store is closed counts all the store's work, each pool connection having exited.

use tokio_postgres::Client;
use tokio_postgres_rustls::MakeRustlsConnect;

use taskhub_storage::{StorageError, StorageResult};

use crate::errors::PgResultExt;
use crate::options::PostgresOptions;

/// One reading of the server's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Transactions committed and rolled back in the database (one per statement run outside
    /// a transaction).
    pub transactions: u64,
    /// Statements run in the database, if `pg_stat_statements` is loaded
    /// (`shared_preload_libraries`).
    pub statements: Option<u64>,
    /// WAL bytes the cluster wrote (PostgreSQL 14 or later).
    pub wal_bytes: Option<u64>,
    /// The postmaster's process ID, if the role may read `data_directory` and its
    /// `postmaster.pid` is on this machine.
    pub postmaster_pid: Option<u32>,
}

impl ServerStats {
    /// The counters' growth since `earlier` (the postmaster's ID is this reading's).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let delta = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.saturating_sub(b));
        Self {
            transactions: self.transactions.saturating_sub(earlier.transactions),
            statements: delta(self.statements, earlier.statements),
            wal_bytes: delta(self.wal_bytes, earlier.wal_bytes),
            postmaster_pid: self.postmaster_pid,
        }
    }
}

/// Reads [`ServerStats`] on connections of its own to the server the options name.
#[derive(Clone)]
pub struct ServerProbe {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
}

impl std::fmt::Debug for ServerProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerProbe").finish_non_exhaustive()
    }
}

impl ServerProbe {
    /// A probe of the server `options.url` names.
    ///
    /// # Errors
    /// `InvalidArgument` for a missing or bad URL or CA file.
    pub fn new(options: &PostgresOptions) -> StorageResult<Self> {
        let (config, tls) = crate::store::connection(options)?;
        Ok(Self { config, tls })
    }

    /// Creates the `pg_stat_statements` extension (in `public`) if the server loads it and the
    /// role may, so that [`read`](Self::read) counts statements; true if it is there.
    ///
    /// # Errors
    /// As connecting.
    pub async fn enable_statement_counts(&self) -> StorageResult<bool> {
        let connection = self.connect().await?;
        Ok(connection
            .client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements WITH SCHEMA public")
            .await
            .is_ok())
    }

    /// Reads the counters now; `statements` is `None` without `pg_stat_statements`
    /// ([`enable_statement_counts`](Self::enable_statement_counts)).
    ///
    /// # Errors
    /// As connecting and reading `pg_stat_database`.
    pub async fn read(&self) -> StorageResult<ServerStats> {
        read_on(&self.connect().await?.client).await
    }

    /// A connection of its own, closed when dropped.
    async fn connect(&self) -> StorageResult<OwnConnection> {
        let (client, connection) = self
            .config
            .connect(self.tls.clone())
            .await
            .ctx("server statistics")?;
        Ok(OwnConnection {
            client,
            task: tokio::spawn(connection),
        })
    }
}

/// A probe's connection and the task that drives it, aborted with it.
struct OwnConnection {
    client: Client,
    task: tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
}

impl Drop for OwnConnection {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ServerProbe {
    /// How many other connections of this process (by its `application_name`) the server
    /// still has: a store's pool once closed has none, and its backends have reported their
    /// statistics as they exited.
    ///
    /// # Errors
    /// As connecting and reading `pg_stat_activity`.
    pub async fn connections_of_this_process(&self) -> StorageResult<u64> {
        let connection = self.connect().await?;
        let row = connection
            .client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = current_setting('application_name')
                   AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .ctx("server activity")?;
        to_u64(row.get(0))
    }
}

async fn read_on(client: &Client) -> StorageResult<ServerStats> {
    let row = client
        .query_one(
            "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database
             WHERE datname = current_database()",
            &[],
        )
        .await
        .ctx("server statistics")?;
    let transactions = to_u64(row.get(0))?;
    let statements = optional(
        client,
        "SELECT COALESCE(sum(calls), 0)::bigint FROM public.pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .await;
    let wal_bytes = optional(client, "SELECT wal_bytes::bigint FROM pg_stat_wal").await;
    let postmaster_pid = postmaster_pid(client).await;
    Ok(ServerStats {
        transactions,
        statements,
        wal_bytes,
        postmaster_pid,
    })
}

/// A count the server may not offer (an extension not loaded, an older version): `None`.
async fn optional(client: &Client, sql: &str) -> Option<u64> {
    let row = client.query_one(sql, &[]).await.ok()?;
    u64::try_from(row.try_get::<_, i64>(0).ok()?).ok()
}

async fn postmaster_pid(client: &Client) -> Option<u32> {
    let row = client.query_one("SHOW data_directory", &[]).await.ok()?;
    let dir: String = row.try_get(0).ok()?;
    let text = std::fs::read_to_string(std::path::Path::new(&dir).join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

fn to_u64(n: i64) -> StorageResult<u64> {
    u64::try_from(n).map_err(|_| StorageError::Backend(format!("a negative counter: {n}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_per_counter_and_absent_counters_stay_absent() {
        let before = ServerStats {
            transactions: 10,
            statements: Some(100),
            wal_bytes: None,
            postmaster_pid: Some(7),
        };
        let after = ServerStats {
            transactions: 25,
            statements: Some(160),
            wal_bytes: Some(4096),
            postmaster_pid: Some(7),
        };
        let d = after.since(&before);
        assert_eq!(d.transactions, 15);
        assert_eq!(d.statements, Some(60));
        assert_eq!(d.wal_bytes, None);
        assert_eq!(d.postmaster_pid, Some(7));
    }
}
