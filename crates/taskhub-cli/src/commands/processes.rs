//! `taskhub workers processes`: the hub's process registry (every worker, `serve` and
//! endpoint announces itself there with its schema version and renews a heartbeat), and
//! forgetting records in it.

use serde_json::json;
use taskhub::{ProcessRecord, ProcessRegistry, TaskHub, Timestamp};
use taskhub_storage::PROCESS_LIVENESS_WINDOW;

use crate::table::Table;
use crate::timefmt;

/// Which records to remove before listing.
#[derive(Debug, Default)]
pub struct Forget {
    /// These IDs.
    pub ids: Vec<String>,
    /// Every stale record.
    pub stale: bool,
}

/// Removes what `forget` names (an unknown ID is an error naming it), then prints every
/// remaining record, as a table or JSON.
pub async fn run(hub: &TaskHub, json: bool, forget: Forget) -> anyhow::Result<()> {
    for id in &forget.ids {
        if !hub.forget_process(id).await? {
            anyhow::bail!("no process record {id:?} (see `taskhub workers processes`)");
        }
        crate::outln!("forgot process {id}");
    }
    if forget.stale {
        let gone = hub
            .forget_processes_older_than(PROCESS_LIVENESS_WINDOW)
            .await?;
        crate::outln!("forgot {} stale process record(s)", gone.len());
    }
    let registry = hub.processes().await?;
    if json {
        print_json(&registry)
    } else {
        print_table(&registry);
        Ok(())
    }
}

fn print_json(registry: &ProcessRegistry) -> anyhow::Result<()> {
    let rows: Vec<serde_json::Value> = registry
        .records
        .iter()
        .map(|r| to_json(r, registry.now))
        .collect();
    crate::outln!("{}", serde_json::to_string_pretty(&rows)?);
    Ok(())
}

fn print_table(registry: &ProcessRegistry) {
    if registry.records.is_empty() {
        crate::outln!("no processes announced");
        return;
    }
    let now = registry.now;
    let mut t = Table::new(&[
        "ID",
        "KIND",
        "HOST",
        "PID",
        "SCHEMA",
        "BUILD",
        "HEARTBEAT",
        "STATE",
    ]);
    for r in &registry.records {
        t.row(vec![
            r.id.clone(),
            r.kind.to_string(),
            r.host.clone(),
            r.pid.to_string(),
            r.schema_version.to_string(),
            r.build_version.clone(),
            format!("{}s ago", now.saturating_since(r.heartbeat_at).as_secs()),
            state(r, now).to_owned(),
        ]);
    }
    crate::outln!("{}", t.render());
}

fn state(r: &ProcessRecord, now: Timestamp) -> &'static str {
    if r.is_live(now) {
        "live"
    } else {
        "stale"
    }
}

fn to_json(r: &ProcessRecord, now: Timestamp) -> serde_json::Value {
    json!({
        "id": r.id,
        "kind": r.kind.as_str(),
        "host": r.host,
        "pid": r.pid,
        "schema_version": r.schema_version,
        "build_version": r.build_version,
        "started_at": timefmt::format(r.started_at),
        "heartbeat_at": timefmt::format(r.heartbeat_at),
        "live": r.is_live(now),
    })
}
