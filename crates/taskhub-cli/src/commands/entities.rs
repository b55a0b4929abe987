//! `taskhub entities ...`: list, show, signal and delete durable entities.

use anyhow::{anyhow, bail};
use taskhub::settings::parse_duration;
use taskhub::{CleanEntities, EntityId, EntityQuery};

use super::{json_arg, json_out};
use crate::args::{EntitiesCmd, GlobalArgs};
use crate::settings;
use crate::table::{short, Table};
use crate::timefmt;

/// An entity ID from the command line, with the rule it breaks if it is invalid.
fn entity_id(text: &str) -> anyhow::Result<EntityId> {
    Ok(EntityId::parse(text)?)
}

/// Runs one `entities` subcommand.
pub async fn run(global: &GlobalArgs, cmd: EntitiesCmd) -> anyhow::Result<()> {
    let resolved = settings::resolve(global, &[])?;
    // An input is read (from its file or standard input) before the hub is opened.
    let input = match &cmd {
        EntitiesCmd::Signal { input, .. } => Some(json_arg(input.as_deref(), "the input")?),
        _ => None,
    };
    let hub = resolved.open_hub(true).await?;
    let client = hub.client();
    match cmd {
        EntitiesCmd::List {
            name,
            all,
            page_size,
            continuation,
            json,
        } => {
            if !(1..=1000).contains(&page_size) {
                bail!("--page-size must be 1 to 1000, got {page_size}");
            }
            let page = client
                .list_entities(&EntityQuery {
                    name,
                    include_stateless: all,
                    page_size,
                    continuation,
                    ..EntityQuery::default()
                })
                .await?;
            if json {
                let out = json_out::EntityListJson {
                    entities: page.entities.iter().map(json_out::entity_json).collect(),
                    continuation: page.continuation.clone(),
                };
                crate::outln!("{}", serde_json::to_string_pretty(&out)?);
                return Ok(());
            }
            let mut t = Table::new(&["ID", "STATE", "LAST MODIFIED", "LOCKED BY", "QUEUED"]);
            for e in &page.entities {
                t.row(vec![
                    e.id.to_string(),
                    e.state
                        .as_ref()
                        .map_or_else(|| "-".to_owned(), |s| short(s.as_str(), 40)),
                    timefmt::format(e.last_modified),
                    e.locked_by
                        .as_ref()
                        .map_or_else(|| "-".to_owned(), ToString::to_string),
                    e.queued.to_string(),
                ]);
            }
            crate::out!("{}", t.render());
            crate::outln!(
                "{} entit{}",
                page.entities.len(),
                if page.entities.len() == 1 { "y" } else { "ies" }
            );
            if let Some(token) = page.continuation {
                crate::outln!("more: --continuation {token}");
            }
            Ok(())
        }
        EntitiesCmd::Show { id } => {
            let id = entity_id(&id)?;
            let Some(e) = client.get_entity(&id).await? else {
                bail!("entity '{id}' not found");
            };
            crate::outln!(
                "{}",
                serde_json::to_string_pretty(&json_out::entity_json(&e))?
            );
            Ok(())
        }
        EntitiesCmd::Signal { id, op, .. } => {
            let id = entity_id(&id)?;
            let input = input.ok_or_else(|| anyhow!("no input"))?;
            client.signal_entity_payload(&id, &op, input).await?;
            crate::outln!("signalled {id} with '{op}'");
            Ok(())
        }
        EntitiesCmd::Delete {
            id,
            clean,
            min_idle,
        } => {
            if id.is_none() && !clean {
                bail!("name an entity to delete, or pass --clean");
            }
            if let Some(id) = id {
                let id = entity_id(&id)?;
                client.delete_entity(&id).await?;
                crate::outln!("deleting the state of {id} (after the requests sent before)");
            }
            if clean {
                let min_idle = parse_duration(&min_idle).ok_or_else(|| {
                    anyhow!("--min-idle {min_idle:?} is not a duration such as 60s, 500ms or 5m")
                })?;
                let done = client
                    .clean_entities(&CleanEntities {
                        min_idle,
                        ..CleanEntities::default()
                    })
                    .await?;
                crate::outln!(
                    "removed {} empty entit{}, released {} orphaned lock(s)",
                    done.removed,
                    if done.removed == 1 { "y" } else { "ies" },
                    done.locks_released
                );
            }
            Ok(())
        }
    }
}
