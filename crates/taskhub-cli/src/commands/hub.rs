//! `taskhub hub delete`: every object of a task hub (its backend's
//! `taskhub_backends::HubLocation::delete`: on SQLite its file and the `-wal`, `-shm` and
//! `-journal` beside it, on Azure its queues, tables and blob container) after a
//! confirmation, and only while no worker holds one of its partitions (unless `--force`).

use std::io::BufRead as _;

use anyhow::{bail, Context as _};
use taskhub::TaskHub;

use crate::args::{GlobalArgs, HubCmd};
use crate::settings;

/// Runs one `hub` subcommand.
pub async fn run(global: &GlobalArgs, cmd: HubCmd) -> anyhow::Result<()> {
    let HubCmd::Delete { yes, force } = cmd;
    let resolved = settings::resolve(global, &[])?;
    let what = format!("{} ({})", resolved.hub.describe(), resolved.hub.contents());
    let hub = resolved.open_hub(true).await?;
    if !force {
        refuse_while_held(&hub).await?;
    }
    if !yes {
        confirm(&what)?;
    }
    drop(hub);
    resolved
        .hub
        .delete()
        .await
        .with_context(|| format!("deleting {what}"))?;
    crate::outln!("deleted {what}");
    Ok(())
}

/// A hub whose partitions a worker holds is in use: deleting it under the worker would lose
/// its work, or (SQLite) leave it writing to a file nobody can open again.
async fn refuse_while_held(hub: &TaskHub) -> anyhow::Result<()> {
    let rows = hub.store().list_partitions().await?;
    let mut owners: Vec<&str> = rows.iter().filter_map(|r| r.owner.as_deref()).collect();
    owners.sort_unstable();
    owners.dedup();
    if !owners.is_empty() {
        bail!(
            "workers hold partitions of this hub ({}): stop them first, or pass --force \
             (a crashed worker's lease stays until another worker claims it)",
            owners.join(", ")
        );
    }
    Ok(())
}

/// Asks on stderr, reads one line from stdin; only `yes` goes on.
fn confirm(what: &str) -> anyhow::Result<()> {
    eprint!("Delete {what}, with every instance, history, message and dead letter? Type yes: ");
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the confirmation from standard input")?;
    if answer.trim() != "yes" {
        bail!("not confirmed: nothing was deleted (type yes, or pass --yes)");
    }
    Ok(())
}
