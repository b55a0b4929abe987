//! The Durable Task Framework's entity messages, as a .NET orchestration sends them when its
//! worker does not convert them (`ConvertOrchestrationEntityEvents` off, the default outside
//! the managed scheduler): an event sent to the entity's instance `@name@key`, named `op` (an
//! operation or a lock request; `op@<time>` for a scheduled signal) or `release`, carrying
//! DT Core's `RequestMessage` as JSON (microsoft/durabletask-dotnet
//! `src/Shared/Grpc/EntityConversions.cs`, `RequestMessage` and `DecodeEntityMessageAction`).
//! [`request_of_event`] reads one as the [`EntityRequest`] it stands for, so the entity runs it;
//! the answer goes back as Taskhub's, which the gRPC endpoint hands the orchestration as the
//! protocol's `entityOperationCompleted` / `entityLockGranted` (which that worker reads as DT
//! Core's response event). [`sent_request_id`] names the calls and lock requests such an
//! event sent, so that their answers are recognised in the sender's history.

use serde::Deserialize;

use crate::entity::id::EntityId;
use crate::entity::protocol::{Caller, EntityRequest};
use crate::ids::{ExecutionId, InstanceId};
use crate::payload::Payload;
use crate::time::Timestamp;

/// DT Core's `RequestMessage` (the members the .NET SDK copied, by their JSON names).
#[derive(Debug, Deserialize)]
struct RequestMessage {
    /// The operation (`None`: a lock request).
    #[serde(default)]
    op: Option<String>,
    #[serde(default)]
    signal: bool,
    /// The operation's input, as serialized text.
    #[serde(default)]
    input: Option<String>,
    id: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default, rename = "parentExecution")]
    parent_execution: Option<String>,
    #[serde(default)]
    due: Option<String>,
    #[serde(default)]
    lockset: Option<Vec<LockEntity>>,
    #[serde(default)]
    pos: usize,
}

/// An entity of a lock set: DT Core's `EntityId` (`{"name", "key"}`) or its text `@name@key`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LockEntity {
    Parts { name: String, key: String },
    Text(String),
}

impl LockEntity {
    fn id(&self) -> Option<EntityId> {
        match self {
            Self::Parts { name, key } => EntityId::new(name, key).ok(),
            Self::Text(text) => EntityId::parse(text).ok(),
        }
    }
}

/// The name of an event that may carry a DT Core entity message.
fn is_entity_event_name(name: &str) -> bool {
    name == "op" || name == "release" || name.starts_with("op@")
}

fn parse(name: &str, input: &Payload) -> Option<RequestMessage> {
    if !is_entity_event_name(name) {
        return None;
    }
    serde_json::from_str(input.as_str()).ok()
}

/// A time as .NET writes it (`o` format, or Newtonsoft's ISO 8601).
fn time(text: &str) -> Option<Timestamp> {
    humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
        .ok()
        .map(Timestamp::from_system_time)
}

/// The caller: the message's parent when it names one, else the event's sender.
fn caller(m: &RequestMessage, sender: Option<&Caller>) -> Option<Caller> {
    match (&m.parent, &m.parent_execution) {
        (Some(p), Some(e)) => Some(Caller {
            instance_id: InstanceId::new(p.clone()).ok()?,
            execution_id: ExecutionId::new(e.clone()).ok()?,
        }),
        _ => sender.cloned(),
    }
}

/// The request an event named `name` with `input`, sent by `sender`, stands for, if it is a
/// DT Core entity message (see the module documentation).
#[must_use]
pub fn request_of_event(
    name: &str,
    input: &Payload,
    sender: Option<&Caller>,
) -> Option<EntityRequest> {
    let m = parse(name, input)?;
    // A message sent by an orchestration speaks for that orchestration only: one that names
    // another as its parent is not taken (it could hold a lock in another's name).
    if let (Some(sender), Some(parent)) = (sender, m.parent.as_deref()) {
        if sender.instance_id.as_str() != parent {
            return None;
        }
    }
    if name == "release" {
        let owner = m
            .parent
            .as_deref()
            .and_then(|p| InstanceId::new(p.to_owned()).ok())
            .or_else(|| sender.map(|s| s.instance_id.clone()))?;
        return Some(EntityRequest::Release { id: m.id, owner });
    }
    match &m.op {
        Some(op) => {
            let at = name
                .strip_prefix("op@")
                .and_then(time)
                .or_else(|| m.due.as_deref().and_then(time));
            Some(EntityRequest::Operation {
                id: m.id.clone(),
                op: op.clone(),
                input: m
                    .input
                    .as_deref()
                    .map_or_else(Payload::null, Payload::from_text),
                caller: if m.signal { None } else { caller(&m, sender) },
                at,
            })
        }
        None => {
            let lockset = m
                .lockset
                .as_ref()?
                .iter()
                .map(LockEntity::id)
                .collect::<Option<Vec<_>>>()?;
            Some(EntityRequest::Lock {
                owner: caller(&m, sender)?,
                id: m.id,
                lockset,
                position: m.pos,
            })
        }
    }
}

/// The request ID an event named `name` with `input` sent, if it is a DT Core call or lock
/// request (a signal and a release get no answer).
#[must_use]
pub fn sent_request_id(name: &str, input: &Payload) -> Option<String> {
    if name == "release" {
        return None;
    }
    let m = parse(name, input)?;
    (!m.signal).then_some(m.id)
}

#[cfg(test)]
#[path = "dt_core_tests.rs"]
mod tests;
