//! `taskhub workers processes`: the hub's process registry (every worker, `serve` and
//! endpoint announces itself there with its schema version and renews a heartbeat).

use serde_json::json;
use taskhub::{ProcessRecord, TaskHub};

use crate::table::Table;
use crate::timefmt;

/// Prints every process record, as a table or JSON.
pub async fn list(hub: &TaskHub, json: bool) -> anyhow::Result<()> {
    let records = hub.store().list_processes().await?;
    let now = hub.clock().now();
    if json {
        let rows: Vec<serde_json::Value> = records.iter().map(|r| to_json(r, now)).collect();
        crate::outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    if records.is_empty() {
        crate::outln!("no processes announced");
        return Ok(());
    }
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
    for r in &records {
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
    Ok(())
}

fn state(r: &ProcessRecord, now: taskhub::Timestamp) -> &'static str {
    if r.is_live(now) {
        "live"
    } else {
        "stale"
    }
}

fn to_json(r: &ProcessRecord, now: taskhub::Timestamp) -> serde_json::Value {
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
