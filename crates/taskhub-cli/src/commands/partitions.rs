//! `taskhub partitions ...`, `taskhub workers ...` and `taskhub scale`: the leases of a task
//! hub, their manual control, and a scale recommendation.

use std::time::Duration;

use anyhow::{anyhow, bail};
use serde_json::json;
use taskhub::admin::PartitionStatus;
use taskhub::settings::parse_duration;
use taskhub::TaskHub;

use crate::args::{GlobalArgs, PartitionsCmd, WorkersCmd};
use crate::settings;
use crate::table::Table;
use crate::timefmt;

async fn hub(global: &GlobalArgs) -> anyhow::Result<TaskHub> {
    let resolved = settings::resolve(global, &[])?;
    resolved.open_hub(true).await
}

/// The configured partition count (settings) and the hub's, as JSON.
fn counts_json(hub: &TaskHub) -> serde_json::Value {
    json!({
        "configured": hub.settings().partition_count,
        "hub": hub.partition_count(),
    })
}

/// The line above the partitions table: the hub's count, and the configured one if it differs.
fn counts_text(hub: &TaskHub) -> String {
    let configured = hub.settings().partition_count;
    let actual = hub.partition_count();
    if configured == actual {
        format!("partition count: {actual}")
    } else {
        format!(
            "partition count: {actual} (the hub's; configured: {configured}, not in force — \
             `taskhub partitions resize {configured}` changes it)"
        )
    }
}

fn duration(text: &str, what: &str) -> anyhow::Result<Duration> {
    parse_duration(text)
        .ok_or_else(|| anyhow!("{what} {text:?} is not a duration such as 60s, 500ms or 2m"))
}

fn age(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".to_owned(), |d| format!("{:.1}s", d.as_secs_f64()))
}

fn as_json(p: &PartitionStatus) -> serde_json::Value {
    json!({
        "partition": p.row.partition,
        "owner": p.row.owner,
        "next_owner": p.row.next_owner,
        "epoch": p.row.epoch,
        "draining": p.row.draining,
        "retiring": p.row.retiring,
        "offline": p.row.offline,
        "updated_at": timefmt::format(p.row.updated_at),
        "lease_age_ms": u64::try_from(p.lease_age.as_millis()).unwrap_or(u64::MAX),
        "queue_length": p.queue_length,
        "turns": p.row.turns,
        "oldest_message_age_ms": p.oldest_message_age.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
    })
}

fn table(rows: &[PartitionStatus]) -> String {
    let mut t = Table::new(&[
        "PARTITION",
        "OWNER",
        "NEXT OWNER",
        "EPOCH",
        "STATE",
        "LEASE AGE",
        "QUEUE",
        "OLDEST",
    ]);
    for p in rows {
        let mut state = Vec::new();
        if p.row.draining {
            state.push("draining");
        }
        if p.row.retiring {
            state.push("retiring");
        }
        if p.row.offline {
            state.push("offline");
        }
        t.row(vec![
            p.row.partition.to_string(),
            p.row.owner.clone().unwrap_or_else(|| "-".to_owned()),
            p.row.next_owner.clone().unwrap_or_else(|| "-".to_owned()),
            p.row.epoch.to_string(),
            if state.is_empty() {
                "live".to_owned()
            } else {
                state.join(",")
            },
            age(Some(p.lease_age)),
            p.queue_length.to_string(),
            age(p.oldest_message_age),
        ]);
    }
    t.render()
}

/// The bearer token the CLI's settings give for the HTTP API (`http_token`), if any.
fn api_token(global: &GlobalArgs) -> anyhow::Result<Option<String>> {
    let resolved = settings::resolve(global, &[])?;
    Ok(Some(resolved.own.http_token.expose().to_owned()).filter(|t| !t.is_empty()))
}

/// The line under the partitions table for the `unmatched` report of `/api/stats` at `api`.
fn unmatched_text(api: &str, u: &serde_json::Value) -> String {
    if u.is_null() {
        return format!(
            "the process at {api} serves no SDK workers (no --grpc): no work waits there for \
             a worker's filters"
        );
    }
    let n = |k: &str| u.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let (o, a, e) = (n("orchestrations"), n("activities"), n("entities"));
    if o + a + e == 0 {
        return format!("no work waits for an SDK worker whose filters take it (at {api})");
    }
    let mut names: Vec<String> = u
        .get("names")
        .and_then(serde_json::Value::as_array)
        .map(|names| {
            names
                .iter()
                .map(|x| {
                    let s = |k: &str| x.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
                    let version = x
                        .get("version")
                        .and_then(serde_json::Value::as_str)
                        .map_or_else(String::new, |v| format!(" version '{v}'"));
                    let items = x
                        .get("items")
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(0);
                    format!("{} '{}'{version} ({items})", s("kind"), s("name"))
                })
                .collect()
        })
        .unwrap_or_default();
    if n("omitted") > 0 {
        names.push(format!("{} more", n("omitted")));
    }
    let workers = n("workers");
    let who = if workers == 0 {
        "no SDK worker is connected".to_owned()
    } else {
        format!("none of the {workers} connected SDK worker(s) has filters that take them")
    };
    format!(
        "waiting for an SDK worker whose filters take them (at {api}; Pending, not failed): \
         {o} orchestration(s), {a} activity(ies), {e} entity batch(es); {who}: {}",
        names.join(", ")
    )
}

/// Runs `taskhub partitions [SUBCOMMAND]`; `api`: the address of the HTTP API of the process
/// serving the SDK workers, whose work waiting for matching filters is shown too.
pub async fn run(
    global: &GlobalArgs,
    cmd: Option<PartitionsCmd>,
    json: bool,
    api: Option<&str>,
) -> anyhow::Result<()> {
    let hub = hub(global).await?;
    let admin = hub.admin();
    let changed = match cmd {
        None => {
            let rows = admin.partitions().await?;
            // Held in the serving process's memory, not in storage: only its API knows.
            let unmatched = match api {
                Some(addr) => {
                    let stats = super::api_read::get_json(
                        addr,
                        "/api/stats",
                        api_token(global)?.as_deref(),
                    )
                    .await?;
                    Some(stats.get("unmatched").cloned().unwrap_or_default())
                }
                None => None,
            };
            if json {
                let out = json!({
                    "partition_count": counts_json(&hub),
                    "partitions": rows.iter().map(as_json).collect::<Vec<_>>(),
                    "unmatched": unmatched.clone().unwrap_or_default(),
                });
                crate::outln!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                crate::outln!("{}", counts_text(&hub));
                crate::out!("{}", table(&rows));
                if let (Some(addr), Some(u)) = (api, &unmatched) {
                    crate::outln!("{}", unmatched_text(addr, u));
                }
            }
            return Ok(());
        }
        Some(PartitionsCmd::DetectStale { threshold }) => {
            let threshold = duration(&threshold, "--threshold")?;
            let stale = admin.stale(threshold).await?;
            if json {
                let out: Vec<_> = stale.iter().map(as_json).collect();
                crate::outln!("{}", serde_json::to_string_pretty(&out)?);
            } else if stale.is_empty() {
                crate::outln!("no stale partitions (threshold {threshold:?})");
            } else {
                crate::out!("{}", table(&stale));
            }
            if !stale.is_empty() {
                bail!(
                    "{} partition(s) unowned or with a lease older than {threshold:?}",
                    stale.len()
                );
            }
            return Ok(());
        }
        Some(PartitionsCmd::Resize { count }) => {
            admin.set_partition_count(count).await?;
            crate::outln!(
                "partition count is now {count}; removed partitions retire once their queues stay empty"
            );
            return Ok(());
        }
        Some(PartitionsCmd::Bump { partition }) => admin.bump(partition).await?,
        Some(PartitionsCmd::Offline { partition }) => admin.set_offline(partition, true).await?,
        Some(PartitionsCmd::Online { partition }) => admin.set_offline(partition, false).await?,
    };
    crate::outln!(
        "partition {}: epoch {}, owner {}, {}",
        changed.partition,
        changed.epoch,
        changed.owner.as_deref().unwrap_or("-"),
        if changed.offline { "offline" } else { "online" }
    );
    Ok(())
}

/// Runs `taskhub workers ...`.
pub async fn workers(global: &GlobalArgs, cmd: WorkersCmd) -> anyhow::Result<()> {
    let hub = hub(global).await?;
    let admin = hub.admin();
    let list = match cmd {
        WorkersCmd::Prohibit { name } => admin.set_prohibited(&name, true).await?,
        WorkersCmd::Allow { name } => admin.set_prohibited(&name, false).await?,
        WorkersCmd::List => admin.prohibited().await?,
        WorkersCmd::Processes {
            json,
            forget,
            forget_stale,
        } => {
            let forgetting = super::processes::Forget {
                ids: forget,
                stale: forget_stale,
            };
            return super::processes::run(&hub, json, forgetting).await;
        }
    };
    if list.is_empty() {
        crate::outln!("no prohibited workers");
    } else {
        for w in list {
            crate::outln!("{w}");
        }
    }
    Ok(())
}

/// Runs `taskhub scale`: prints the recommendation as JSON. With `api`, the process serving
/// its HTTP API there makes it (`GET /api/scale`), seeing the work its SDK workers' filters
/// leave waiting; from storage alone that is unknown (`"unmatched": null`).
pub async fn scale(
    global: &GlobalArgs,
    samples: usize,
    interval: &str,
    api: Option<&str>,
) -> anyhow::Result<()> {
    if samples == 0 {
        bail!("--samples must be at least 1");
    }
    let interval = duration(interval, "--interval")?;
    if let Some(addr) = api {
        let path = format!(
            "/api/scale?samples={samples}&intervalMs={}",
            interval.as_millis()
        );
        let rec = super::api_read::get_json(addr, &path, api_token(global)?.as_deref()).await?;
        crate::outln!("{}", serde_json::to_string_pretty(&rec)?);
        return Ok(());
    }
    let hub = hub(global).await?;
    let rec = hub.admin().scale(samples, interval).await?;
    crate::outln!("{}", serde_json::to_string_pretty(&rec)?);
    Ok(())
}
