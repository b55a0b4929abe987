//! The non-demo commands and the argument parsing they share.

mod announce;
mod api_read;
pub mod dead_letters;
pub mod entities;
mod grpc;
mod http;
pub mod hub;
pub mod instances;
pub mod json_input;
mod json_out;
mod listen;
pub mod partitions;
mod processes;
pub mod serve;
mod view;
pub mod worker;

use taskhub::{InstanceId, OrchestrationStatus, Payload};

/// The exit code of a `--wait` whose instance ended Failed or Terminated (see [`NotCompleted`]).
pub const EXIT_NOT_COMPLETED: u8 = 4;

/// An instance ID from the command line, with the rule it breaks if it is invalid.
pub fn instance_id(text: &str) -> anyhow::Result<InstanceId> {
    Ok(InstanceId::new(text)?)
}

/// JSON from the command line (`null` if absent): inline, `@path` or `-` (standard input).
pub fn json_arg(text: Option<&str>, what: &str) -> anyhow::Result<Payload> {
    Ok(json_input::read_json(text, what)?)
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

/// A command that did part of its work and says so on stdout (a purge whose time budget ran
/// out): the process exits with code 3 and no error line.
#[derive(Debug)]
pub struct Unfinished;

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unfinished: run the command again to go on")
    }
}

impl std::error::Error for Unfinished {}

/// A `--wait` that saw its instance end, but not Completed (Failed or Terminated): the
/// instance's status is on stdout, this one line on stderr, and the process exits with
/// [`EXIT_NOT_COMPLETED`], so a script tells it from success (0) and from an error (1: also a
/// wait that timed out).
#[derive(Debug)]
pub struct NotCompleted {
    /// The instance.
    pub instance_id: InstanceId,
    /// How it ended.
    pub status: OrchestrationStatus,
}

impl std::fmt::Display for NotCompleted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "instance '{}' did not complete: it ended {}",
            self.instance_id, self.status
        )
    }
}

impl std::error::Error for NotCompleted {}
