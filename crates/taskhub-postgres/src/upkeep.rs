//! The tables' storage settings a build keeps up to date without a schema version: each
//! migration (at every create and open, under the migration lock) compares them with what
//! `pg_class` holds and sets the ones that differ, so an existing hub gets them without a
//! version bump that would stop a rolling upgrade.
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

/// Sets each table's [`TABLE_SETTINGS`] that `pg_class` does not already hold (the
/// transaction's `search_path` is the hub's schema).
pub(crate) async fn tune_tables(tx: &Transaction<'_>, what: &str) -> StorageResult<()> {
    for (table, settings) in TABLE_SETTINGS {
        let held: Option<Vec<String>> = tx
            .query_one(
                "SELECT reloptions FROM pg_class WHERE oid = $1::text::regclass",
                &[table],
            )
            .await
            .ctx(what)?
            .get(0);
        let held = held.unwrap_or_default();
        if settings.iter().all(|s| held.iter().any(|h| h == s)) {
            continue;
        }
        tx.batch_execute(&format!(
            "ALTER TABLE {table} SET ({})",
            settings.join(", ")
        ))
        .await
        .ctx(what)?;
    }
    Ok(())
}
