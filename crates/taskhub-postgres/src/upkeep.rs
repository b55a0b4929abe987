//! The tables' storage settings a build sets without a schema version: each migration (at
//! every create and open, under the migration lock) sets those `pg_class` does not hold at all,
//! so an existing hub gets them without a version bump that would stop a rolling upgrade, and a
//! value a DBA chose for one of them is kept.
//!
//! * `instances` and `histories`: their rows are rewritten at every turn, so dead versions
//!   come fast and the server's default (vacuum at 20 % of the table dead) lets a large hub
//!   bloat; they are vacuumed and analysed at 2 % (and 1,000 rows).
//! * `history_events`: appended to at every turn and deleted from by purges and
//!   continue-as-new; insert-driven vacuums (PostgreSQL 13) keep its visibility map current.
//!
//! (The queue table's own settings, tighter still, are in its `CREATE TABLE`: `schema.rs`.)

use deadpool_postgres::Transaction;
use taskhub_storage::StorageResult;

use crate::errors::PgResultExt;

/// Each table's storage parameters, as `pg_class.reloptions` spells them.
pub const TABLE_SETTINGS: &[(&str, &[&str])] = &[
    ("instances", HOT_ROWS),
    ("histories", HOT_ROWS),
    (
        "history_events",
        &[
            "autovacuum_vacuum_scale_factor=0.05",
            "autovacuum_vacuum_insert_scale_factor=0.05",
            "autovacuum_analyze_scale_factor=0.05",
        ],
    ),
];

/// The settings of a table whose rows are rewritten at every turn.
const HOT_ROWS: &[&str] = &[
    "autovacuum_vacuum_scale_factor=0.02",
    "autovacuum_vacuum_threshold=1000",
    "autovacuum_analyze_scale_factor=0.02",
];

/// Sets each table's [`TABLE_SETTINGS`] that `pg_class` does not hold at all (the
/// transaction's `search_path` is the hub's schema): a value a DBA set for one of them stays.
/// Best effort: the `ALTER TABLE` waits at most five seconds for its lock (behind a long
/// `VACUUM` or index build), and a failure is logged and leaves the open to go on.
pub(crate) async fn tune_tables(tx: &mut Transaction<'_>, what: &str) -> StorageResult<()> {
    for (table, settings) in TABLE_SETTINGS {
        let held: Option<Vec<String>> = tx
            .query_one(
                "SELECT reloptions FROM pg_class WHERE oid = $1::text::regclass",
                &[table],
            )
            .await
            .ctx(what)?
            .get(0);
        let missing = missing(settings, &held.unwrap_or_default());
        if missing.is_empty() {
            continue;
        }
        let sql = format!(
            "SET LOCAL lock_timeout = '5s'; ALTER TABLE {table} SET ({})",
            missing.join(", ")
        );
        let savepoint = tx.savepoint("tune").await.ctx(what)?;
        match savepoint.batch_execute(&sql).await {
            Ok(()) => savepoint.commit().await.ctx(what)?,
            Err(e) => {
                tracing::warn!(table, error = %e, "could not set the table's autovacuum settings");
                savepoint.rollback().await.ctx(what)?;
            }
        }
    }
    Ok(())
}

/// The settings of `wanted` whose name `held` does not set.
fn missing<'a>(wanted: &[&'a str], held: &[String]) -> Vec<&'a str> {
    wanted
        .iter()
        .filter(|w| {
            let name = w.split('=').next().unwrap_or(w);
            !held.iter().any(|h| h.split('=').next() == Some(name))
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_settings_nobody_set_are_missing() {
        let held = vec![
            "autovacuum_vacuum_scale_factor=0.1".to_owned(),
            "fillfactor=80".to_owned(),
        ];
        assert_eq!(
            missing(HOT_ROWS, &held),
            vec![
                "autovacuum_vacuum_threshold=1000",
                "autovacuum_analyze_scale_factor=0.02"
            ]
        );
        assert!(missing(HOT_ROWS, &[]).len() == HOT_ROWS.len());
    }
}
