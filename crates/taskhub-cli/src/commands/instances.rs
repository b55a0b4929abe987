//! `taskhub instances ...`: list, show, history, start, raise, terminate, suspend, resume, rewind,
//! purge.
//!
//! A start goes through the client's start like every other front (its reuse policy, the
//! default one: an active instance under the ID refuses it); `--version V` names the version,
//! and `--wait` prints the outcome and exits 4 ([`super::NotCompleted`]) when the instance
//! ended Failed or Terminated. Only a start may create the task hub file.

use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::Value;
use taskhub::client::tags::{parse_tag, TagCaps};
use taskhub::{
    ExecutionId, InstanceQuery, ListOrder, OrchestrationStatus, Payload, RaiseOptions,
    StartOptions, StatusOptions, Tags, TaskHub,
};

use super::{instance_id, json_arg, json_out, statuses, view};
use crate::args::{GlobalArgs, InstanceFilter, InstancesCmd, ListArgs};
use crate::demo::workloads;
use crate::settings;
use crate::table::Table;
use crate::timefmt;

/// Runs one `instances` subcommand.
pub async fn run(global: &GlobalArgs, cmd: InstancesCmd) -> anyhow::Result<()> {
    let resolved = settings::resolve(global, &[])?;
    // Only a start may create the task hub file.
    let must_exist = !matches!(cmd, InstancesCmd::Start { .. });
    // A payload is read (from its file or standard input) before the hub is opened, so an
    // unreadable one creates nothing.
    let payload = payload_of(&cmd)?;
    let hub = resolved.open_hub(must_exist).await?;
    match cmd {
        InstancesCmd::List(args) => list(&hub, args).await,
        InstancesCmd::Show {
            id,
            execution: Some(execution),
            json,
        } => show_execution(&hub, &id, &execution, json).await,
        InstancesCmd::Show { id, json, .. } => show(&hub, &id, json).await,
        InstancesCmd::History { id, json } => history(&hub, &id, json).await,
        InstancesCmd::Start {
            name,
            id,
            version,
            wait,
            tags,
            ..
        } => {
            let options = StartOptions {
                instance_id: id.as_deref().map(instance_id).transpose()?,
                version,
                tags: parse_tags(&tags, &hub.settings().tag_caps())?,
                ..StartOptions::default()
            };
            start(&hub, &name, payload, options, wait).await
        }
        InstancesCmd::Raise {
            id,
            event,
            event_id,
            ..
        } => {
            let id = instance_id(&id)?;
            let options = RaiseOptions { event_id };
            // The text as given: a `serde_json::Value` would round integers beyond 64 bits.
            hub.client()
                .raise_event_payload(&id, &event, payload, options)
                .await?;
            crate::outln!("raised '{event}' on {id}");
            Ok(())
        }
        InstancesCmd::Terminate { id, reason } => {
            control(&hub, &id, Control::Terminate(&reason)).await
        }
        InstancesCmd::Suspend { id, reason } => {
            control(&hub, &id, Control::Suspend(reason.as_deref())).await
        }
        InstancesCmd::Resume { id, reason } => {
            control(&hub, &id, Control::Resume(reason.as_deref())).await
        }
        InstancesCmd::Rewind { id, reason } => {
            control(&hub, &id, Control::Rewind(reason.as_deref())).await
        }
        InstancesCmd::Purge {
            id,
            filter,
            time_budget,
        } => purge(&hub, id.as_deref(), &filter, time_budget.as_deref()).await,
    }
}

/// A request to an instance that the CLI only asks for (the worker carries it out), with its
/// reason.
enum Control<'a> {
    Terminate(&'a str),
    Suspend(Option<&'a str>),
    Resume(Option<&'a str>),
    Rewind(Option<&'a str>),
}

/// Sends `what` to instance `id` and says it was requested.
async fn control(hub: &TaskHub, id: &str, what: Control<'_>) -> anyhow::Result<()> {
    let id = instance_id(id)?;
    let client = hub.client();
    let (sent, verb) = match what {
        Control::Terminate(reason) => (client.terminate(&id, reason).await, "terminate"),
        Control::Suspend(reason) => (client.suspend(&id, reason).await, "suspend"),
        Control::Resume(reason) => (client.resume(&id, reason).await, "resume"),
        Control::Rewind(reason) => (client.rewind(&id, reason).await, "rewind"),
    };
    sent?;
    crate::outln!("{verb} requested for {id}");
    Ok(())
}

/// The JSON payload a start or raise carries: the positional argument or the option, inline,
/// `@path` or `-` (`null` if neither is given, and for the other commands, which carry none).
fn payload_of(cmd: &InstancesCmd) -> anyhow::Result<Payload> {
    let (arg, what) = match cmd {
        InstancesCmd::Start {
            input,
            input_option,
            ..
        } => (input.as_deref().or(input_option.as_deref()), "the input"),
        InstancesCmd::Raise {
            data, data_option, ..
        } => (data.as_deref().or(data_option.as_deref()), "the event data"),
        _ => (None, "no payload"),
    };
    json_arg(arg, what)
}

/// `--tag KEY=VALUE` values as tags, checked against the hub's caps (an error names the bad
/// one and the cap's setting).
fn parse_tags(texts: &[String], caps: &TagCaps) -> anyhow::Result<Tags> {
    texts
        .iter()
        .map(|t| parse_tag(t, caps).map_err(|e| anyhow::anyhow!("--tag {t:?}: {e}")))
        .collect()
}

/// The query of a filter (its tags checked against `caps`, the hub's).
fn query(
    filter: &InstanceFilter,
    page_size: usize,
    caps: &TagCaps,
) -> anyhow::Result<InstanceQuery> {
    if !(1..=1000).contains(&page_size) {
        bail!("--page-size must be 1 to 1000, got {page_size}");
    }
    let time = |t: &Option<String>, flag: &str| -> anyhow::Result<_> {
        t.as_deref()
            .map(timefmt::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("{flag}: {e}"))
    };
    Ok(InstanceQuery {
        statuses: statuses(&filter.statuses)?,
        name: filter.name.clone(),
        created_from: time(&filter.created_from, "--created-from")?,
        created_to: time(&filter.created_to, "--created-to")?,
        completed_from: time(&filter.completed_from, "--completed-from")?,
        completed_to: time(&filter.completed_to, "--completed-to")?,
        updated_from: time(&filter.updated_from, "--updated-from")?,
        updated_to: time(&filter.updated_to, "--updated-to")?,
        instance_id_prefix: filter.prefix.clone(),
        tags: parse_tags(&filter.tags, caps)?,
        page_size,
        ..InstanceQuery::default()
    })
}

async fn list(hub: &TaskHub, args: ListArgs) -> anyhow::Result<()> {
    let ListArgs {
        filter,
        order,
        page_size,
        continuation,
        all,
        include_entities,
        json,
    } = args;
    let mut q = query(&filter, page_size, &hub.settings().tag_caps())?;
    q.include_entities = include_entities;
    q.order = ListOrder::parse(&order)
        .map_err(|_| anyhow::anyhow!("--order must be id, newest or oldest, got {order:?}"))?;
    q.continuation = continuation;
    let client = hub.client();
    let mut rows = Vec::new();
    let next = loop {
        let page = client.list(&q).await?;
        rows.extend(page.instances);
        match page.continuation {
            Some(c) if all => q.continuation = Some(c),
            other => break other,
        }
    };
    if json {
        let out = json_out::ListJson {
            instances: rows.iter().map(json_out::row_json).collect(),
            continuation: next,
        };
        crate::outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let mut t = Table::new(&view::LIST_HEADERS);
    for row in &rows {
        t.row(view::list_row(row));
    }
    crate::out!("{}", t.render());
    crate::outln!("{} instance(s)", rows.len());
    if let Some(token) = next {
        crate::outln!("more: --continuation {token}  (or --all)");
    }
    Ok(())
}

async fn show(hub: &TaskHub, id: &str, json: bool) -> anyhow::Result<()> {
    let id = instance_id(id)?;
    let Some(status) = hub
        .client()
        .get_status(&id, StatusOptions::default())
        .await?
    else {
        bail!("instance '{id}' not found");
    };
    if json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&json_out::row_json(&status.row))?
        );
    } else {
        crate::out!("{}", view::show_text(&status.row));
    }
    Ok(())
}

async fn show_execution(
    hub: &TaskHub,
    id: &str,
    execution: &str,
    json: bool,
) -> anyhow::Result<()> {
    let id = instance_id(id)?;
    let execution = ExecutionId::new(execution).map_err(|e| anyhow::anyhow!("--execution: {e}"))?;
    let status = hub.client().get_execution(&id, &execution).await?;
    if json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&json_out::execution_json(&status))?
        );
    } else {
        crate::out!("{}", view::execution_text(&status));
    }
    Ok(())
}

async fn history(hub: &TaskHub, id: &str, json: bool) -> anyhow::Result<()> {
    let id = instance_id(id)?;
    let options = StatusOptions { history: true };
    let Some(status) = hub.client().get_status(&id, options).await? else {
        bail!("instance '{id}' not found");
    };
    let events = status.history.unwrap_or_default();
    if json {
        let out: Vec<Value> = events
            .iter()
            .enumerate()
            .map(|(i, e)| view::event_json(i, e))
            .collect();
        crate::outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for (i, e) in events.iter().enumerate() {
        crate::outln!("{}", view::event_line(i, e));
    }
    Ok(())
}

async fn start(
    hub: &TaskHub,
    name: &str,
    input: Payload,
    options: StartOptions,
    wait: Option<u64>,
) -> anyhow::Result<()> {
    let registry = workloads::registry();
    if !registry.has_orchestration(name) {
        eprintln!(
            "warning: '{name}' is not one of the orchestrations `taskhub worker` runs ({})",
            registry.orchestration_names().join(", ")
        );
    } else if !registry.has_orchestration_version(name, options.version.as_deref()) {
        eprintln!("warning: `taskhub worker` runs no version of '{name}' that this start names");
    }
    let client = hub.client();
    let id = client
        .start_payload(name, input, options)
        .await
        .with_context(|| format!("cannot start '{name}'"))?;
    crate::outln!("{id}");
    if let Some(secs) = wait {
        let status = client
            .wait_for_completion(&id, Duration::from_secs(secs))
            .await?;
        crate::out!("{}", view::show_text(&status.row));
        if status.status() != OrchestrationStatus::Completed {
            return Err(super::NotCompleted {
                instance_id: id,
                status: status.status(),
            }
            .into());
        }
    }
    Ok(())
}

async fn purge(
    hub: &TaskHub,
    id: Option<&str>,
    filter: &InstanceFilter,
    budget: Option<&str>,
) -> anyhow::Result<()> {
    let client = hub.client();
    if let Some(id) = id {
        let id = instance_id(id)?;
        if !client.purge(&id).await? {
            bail!("instance '{id}' not found");
        }
        crate::outln!("purged {id}");
        return Ok(());
    }
    if filter.is_empty() {
        bail!("give an instance ID or at least one filter (--status, --name, --prefix, --created-from/-to, --completed-from/-to, --updated-from/-to, --tag)");
    }
    let q = query(filter, 1000, &hub.settings().tag_caps())?;
    let budget = match budget {
        Some(text) => taskhub::settings::parse_duration(text).ok_or_else(|| {
            anyhow::anyhow!("--time-budget {text:?} is not a duration such as 30s, 500ms or 5m")
        })?,
        None => Duration::MAX,
    };
    let done = client.purge_where_within(&q, budget).await?;
    if done.finished {
        crate::outln!("purged {} instance(s)", done.purged);
        Ok(())
    } else {
        crate::outln!(
            "purged {} instance(s); the time budget ran out with more left: run it again",
            done.purged
        );
        Err(crate::commands::Unfinished.into())
    }
}
