//! `taskhub dead-letters ...`: list dead-lettered (poison) messages and replay one.

use anyhow::bail;
use serde_json::json;

use crate::args::{DeadLettersCmd, GlobalArgs};
use crate::settings;
use crate::table::{short, Table};
use crate::timefmt;

/// Runs one `dead-letters` subcommand.
pub async fn run(global: &GlobalArgs, cmd: DeadLettersCmd) -> anyhow::Result<()> {
    let resolved = settings::resolve(global, &[])?;
    let hub = resolved.open_hub(true).await?;
    let client = hub.client();
    match cmd {
        DeadLettersCmd::List { limit, after, json } => {
            if limit == 0 {
                bail!("--limit must be at least 1");
            }
            let letters = client.list_dead_letters(after.as_deref(), limit).await?;
            if json {
                let out: Vec<_> = letters
                    .iter()
                    .map(|l| {
                        json!({
                            "id": l.id,
                            "queue": l.queue.to_string(),
                            "dequeue_count": l.dequeue_count,
                            "dead_lettered_at": timefmt::format(l.dead_lettered_at),
                            "reason": l.reason,
                            "body": l.body,
                        })
                    })
                    .collect();
                crate::outln!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(());
            }
            let mut t = Table::new(&["ID", "QUEUE", "DEQUEUES", "DEAD-LETTERED", "REASON", "BODY"]);
            for l in &letters {
                t.row(vec![
                    l.id.clone(),
                    l.queue.to_string(),
                    l.dequeue_count.to_string(),
                    timefmt::format(l.dead_lettered_at),
                    short(&l.reason, 50),
                    short(&l.body, 40),
                ]);
            }
            crate::out!("{}", t.render());
            crate::outln!("{} dead letter(s)", letters.len());
            Ok(())
        }
        DeadLettersCmd::Replay { id } => {
            if !client.replay_dead_letter(&id).await? {
                bail!("dead letter '{id}' not found (see `taskhub dead-letters list`)");
            }
            crate::outln!("replayed dead letter {id} into its queue");
            Ok(())
        }
    }
}
