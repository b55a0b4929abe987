//! Test hooks (feature `testing`): damage a stored event, run a statement on the hub's schema,
//! for the runtime's tests of a corrupt store and the backend's own fence tests.

use taskhub_core::InstanceId;
use taskhub_storage::backend::{OpenedStore, OptionValue};
use taskhub_storage::test_hub::server_variable;
use taskhub_storage::{StorageError, StorageResult};

use crate::errors::PgResultExt;
use crate::store::PostgresStore;
use crate::PostgresBackend;

/// The variable naming the server the tests put their hubs on (a throwaway cluster), exported
/// by `scripts/with-postgres.sh`.
pub const TEST_URL: &str = "TASKHUB_TEST_POSTGRES_URL";

impl PostgresBackend {
    /// A hub opened again by its name on the server is the same hub.
    pub const TEST_HUBS_SHARED: bool = true;

    /// The options of a test's fresh hub: the hub (schema) `hub_name` on the test server
    /// ([`TEST_URL`]), a pool of 8 (`dir` is not used).
    ///
    /// # Panics
    /// When the variable is unset, saying how to run the test.
    #[must_use]
    pub fn test_hub_options(_dir: &std::path::Path, _hub_name: &str) -> Vec<OptionValue> {
        let url = server_variable(
            TEST_URL,
            "a PostgreSQL server (a private, throwaway cluster on a free port)",
            "scripts/with-postgres.sh",
        );
        vec![
            OptionValue::new("postgres.url", url, TEST_URL),
            OptionValue::new("postgres.pool_size", "8", "the test"),
        ]
    }

    /// [`PostgresStore::corrupt_history_event`] on the PostgreSQL store `opened` holds.
    ///
    /// # Errors
    /// `InvalidArgument` if `opened` is not a PostgreSQL store; as the hook.
    pub async fn corrupt_history_event(
        opened: &OpenedStore,
        id: &InstanceId,
        seq: u64,
    ) -> StorageResult<()> {
        opened
            .require::<PostgresStore>("a PostgreSQL store")?
            .corrupt_history_event(id, seq)
            .await
    }
}

impl PostgresStore {
    /// Overwrites event `seq` of the instance's current execution with text that is not an
    /// event.
    ///
    /// # Errors
    /// `NotFound` if there is no such event; as any statement otherwise.
    pub async fn corrupt_history_event(&self, id: &InstanceId, seq: u64) -> StorageResult<()> {
        let seq = i64::try_from(seq).map_err(|_| StorageError::InvalidArgument("seq".into()))?;
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE history_events e SET event = '{\"v\":1,\"garbage'
                 FROM histories h
                 WHERE e.instance_id = $1 AND e.seq = $2
                   AND h.instance_id = e.instance_id AND h.execution_id = e.execution_id",
                &[&id.as_str(), &seq],
            )
            .await
            .ctx("history")?;
        if n == 1 {
            Ok(())
        } else {
            Err(StorageError::NotFound {
                what: format!("event {seq} of instance '{id}'"),
            })
        }
    }

    /// The server's plan of a dequeue (`EXPLAIN`), one line per node.
    ///
    /// # Errors
    /// As any statement.
    pub async fn explain_dequeue(&self) -> StorageResult<String> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!("EXPLAIN {}", crate::queues::dequeue_sql()),
                &[&0_i64, &32_i64, &1000_i64],
            )
            .await
            .ctx("queue messages")?;
        Ok(rows
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// A connection of the store's pool (its `search_path` is the hub's schema), for tests
    /// that drive transactions by hand.
    ///
    /// # Errors
    /// As any checkout from the pool.
    pub async fn raw_client(&self) -> StorageResult<deadpool_postgres::Object> {
        self.client().await
    }

    /// Runs this build's migrations plus `next` (a migration of a newer build) on the hub's
    /// schema, as a newer build opening it would; returns the version reached.
    ///
    /// # Errors
    /// As a migration on open (`OlderProcesses` while an older process is alive).
    pub async fn migrate_with_next(&self, next: &'static str) -> StorageResult<i64> {
        let mut scripts = crate::schema::MIGRATIONS.to_vec();
        scripts.push(next);
        let mut client = self.client().await?;
        crate::schema::migrate_with(&mut client, &self.schema, false, &scripts).await
    }
}
