//! The non-demo commands and the argument parsing they share.

pub mod dead_letters;
mod http;
pub mod instances;
pub mod partitions;
pub mod serve;
mod view;
pub mod worker;

use anyhow::Context as _;
use taskhub::{InstanceId, OrchestrationStatus, Payload};

/// An instance ID from the command line, with the rule it breaks if it is invalid.
pub fn instance_id(text: &str) -> anyhow::Result<InstanceId> {
    Ok(InstanceId::new(text)?)
}

/// JSON text from the command line (`null` if absent).
pub fn json_arg(text: Option<&str>, what: &str) -> anyhow::Result<Payload> {
    let text = text.unwrap_or("null");
    Payload::from_json(text).with_context(|| format!("{what} is not valid JSON: {text}"))
}

/// `--status` values.
pub fn statuses(texts: &[String]) -> anyhow::Result<Vec<OrchestrationStatus>> {
    texts
        .iter()
        .map(|s| {
            s.parse::<OrchestrationStatus>()
                .map_err(anyhow::Error::from)
        })
        .collect()
}
