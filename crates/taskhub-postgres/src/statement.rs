//! One statement on a pooled client, outside any transaction: [`PostgresStore::prepared`].

use deadpool_postgres::Object;
use taskhub_storage::StorageResult;
use tokio_postgres::Statement;

use crate::errors::PgResultExt;
use crate::store::PostgresStore;

impl PostgresStore {
    /// A pooled client and `sql` prepared on it (cached per connection), a failure mapped to
    /// the error of `what`.
    pub(crate) async fn prepared(
        &self,
        what: &str,
        sql: &str,
    ) -> StorageResult<(Object, Statement)> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.ctx(what)?;
        Ok((client, stmt))
    }
}
