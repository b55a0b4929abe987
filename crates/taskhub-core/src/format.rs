//! The versioned storage format of history events and messages.
//!
//! Both are stored as one JSON object each, with a format version in the field `v`:
//!
//! ```json
//! {"v":1,"ts":1700000000000,"event":{"TaskScheduled":{"task_id":0,"name":"SayHello","input":"\"Tokyo\""}}}
//! {"v":1,"id":"...","target":"order-1","episode":3,"enqueued_at":1700000000000,"event":{"EventRaised":{...}}}
//! ```
//!
//! * `event` is externally tagged: the variant name of [`EventKind`] is the key.
//! * Payloads are JSON text stored as a JSON string.
//! * Optional fields are omitted when empty; readers treat a missing optional field as empty.
//!
//! Compatibility rule: a version only ever adds optional fields or new variants, so a reader of
//! version N reads every version ≤ N. A record with a higher version is rejected with
//! [`CoreError::UnsupportedFormatVersion`] instead of being misread. The golden files in
//! `tests/golden/` pin version 1.

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::history::{EventKind, HistoryEvent};
use crate::ids::MessageId;
use crate::message::Message;
use crate::time::Timestamp;

/// The format version this build writes (and the highest it reads).
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct EventOut<'a> {
    v: u32,
    ts: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    msg: Option<&'a MessageId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tp: Option<&'a str>,
    event: &'a EventKind,
}

#[derive(Deserialize)]
struct EventIn {
    v: u32,
    ts: Timestamp,
    #[serde(default)]
    msg: Option<MessageId>,
    #[serde(default)]
    tp: Option<String>,
    event: EventKind,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    v: u32,
    #[serde(flatten)]
    message: &'a Message,
}

#[derive(Deserialize)]
struct VersionOnly {
    v: u32,
}

/// Encodes one history event in the current format.
#[must_use]
pub fn encode_event(event: &HistoryEvent) -> String {
    let out = EventOut {
        v: FORMAT_VERSION,
        ts: event.timestamp,
        msg: event.message_id.as_ref(),
        tp: event.trace.as_deref(),
        event: &event.event,
    };
    // Serializing plain structs, strings and integers into a String cannot fail.
    serde_json::to_string(&out).unwrap_or_default()
}

/// Decodes one history event.
///
/// # Errors
/// [`CoreError::UnsupportedFormatVersion`] for a newer format, [`CoreError::Malformed`] otherwise.
pub fn decode_event(text: &str) -> Result<HistoryEvent, CoreError> {
    match serde_json::from_str::<EventIn>(text) {
        Ok(e) => {
            check_version("history event", e.v)?;
            Ok(HistoryEvent {
                timestamp: e.ts,
                message_id: e.msg,
                trace: e.tp,
                event: e.event,
            })
        }
        Err(err) => Err(explain("history event", text, &err)),
    }
}

/// Encodes one message in the current format.
#[must_use]
pub fn encode_message(message: &Message) -> String {
    serde_json::to_string(&MessageOut {
        v: FORMAT_VERSION,
        message,
    })
    .unwrap_or_default()
}

/// Decodes one message.
///
/// # Errors
/// [`CoreError::UnsupportedFormatVersion`] for a newer format, [`CoreError::Malformed`] otherwise.
pub fn decode_message(text: &str) -> Result<Message, CoreError> {
    // [`encode_message`] writes the version first. Then the message is read directly (it
    // ignores the `v` field) instead of through serde's `flatten`, which buffers every field
    // into an intermediate map first: a third of a decode.
    if let Some(v) = leading_version(text) {
        check_version("message", v)?;
        return serde_json::from_str::<Message>(text).map_err(|err| explain("message", text, &err));
    }
    #[derive(Deserialize)]
    struct MessageIn {
        v: u32,
        #[serde(flatten)]
        message: Message,
    }
    match serde_json::from_str::<MessageIn>(text) {
        Ok(m) => {
            check_version("message", m.v)?;
            Ok(m.message)
        }
        Err(err) => Err(explain("message", text, &err)),
    }
}

/// The version of a record that starts `{"v":N,` (or is just `{"v":N}`), as this crate writes
/// them; `None` for any other layout (the caller then parses the record in full).
fn leading_version(text: &str) -> Option<u32> {
    let rest = text.strip_prefix("{\"v\":")?;
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    if end == 0 || !rest[end..].starts_with([',', '}']) {
        return None;
    }
    rest[..end].parse().ok()
}

fn check_version(what: &'static str, found: u32) -> Result<(), CoreError> {
    if found == 0 || found > FORMAT_VERSION {
        return Err(CoreError::UnsupportedFormatVersion {
            what,
            found,
            supported: FORMAT_VERSION,
        });
    }
    Ok(())
}

/// A decode failure is reported as a version problem when the record has a version this
/// build does not know, and as malformed data otherwise.
fn explain(what: &'static str, text: &str, err: &serde_json::Error) -> CoreError {
    if let Ok(VersionOnly { v }) = serde_json::from_str::<VersionOnly>(text) {
        if let Err(version_err) = check_version(what, v) {
            return version_err;
        }
    }
    CoreError::Malformed {
        what,
        detail: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::InstanceId;

    #[test]
    fn newer_version_is_rejected_clearly() {
        let err = decode_event(r#"{"v":2,"ts":0,"event":"Whatever"}"#).unwrap_err();
        assert!(
            matches!(err, CoreError::UnsupportedFormatVersion { found: 2, .. }),
            "{err}"
        );
        let err = decode_event(r#"{"v":9,"ts":0,"event":"OrchestratorStarted"}"#).unwrap_err();
        assert!(
            matches!(err, CoreError::UnsupportedFormatVersion { found: 9, .. }),
            "{err}"
        );
    }

    #[test]
    fn garbage_is_malformed() {
        let err = decode_message("not json").unwrap_err();
        assert!(
            matches!(
                err,
                CoreError::Malformed {
                    what: "message",
                    ..
                }
            ),
            "{err}"
        );
        let err = decode_event(r#"{"v":1,"ts":0,"event":{"TaskScheduled":{}}}"#).unwrap_err();
        assert!(err.to_string().contains("missing field"), "{err}");
    }

    /// A client's `OrchestratorStarted` for instance `i`.
    fn started_message() -> Message {
        Message::from_client(
            InstanceId::new("i").unwrap(),
            EventKind::OrchestratorStarted,
            Timestamp::from_millis(5),
        )
    }

    #[test]
    fn message_round_trip() {
        let m = started_message();
        assert_eq!(decode_message(&encode_message(&m)).unwrap(), m);
    }

    #[test]
    fn a_message_with_its_version_anywhere_decodes_the_same() {
        // The fast path reads records that start with the version; any other layout (a
        // writer that orders fields differently) takes the full path to the same result.
        let m = started_message();
        let text = encode_message(&m);
        assert_eq!(leading_version(&text), Some(FORMAT_VERSION));
        let body = text.strip_prefix("{\"v\":1,").unwrap();
        let last = format!("{{{},\"v\":1}}", body.strip_suffix('}').unwrap());
        assert_eq!(leading_version(&last), None);
        assert_eq!(decode_message(&last).unwrap(), m);
        let newer = format!("{{\"v\":7,{body}");
        assert!(matches!(
            decode_message(&newer),
            Err(CoreError::UnsupportedFormatVersion { found: 7, .. })
        ));
        for bad in ["{\"v\":1}", "{\"v\":01,\"id\":1}", "{\"v\":1,", "{\"v\":,}"] {
            assert!(
                matches!(decode_message(bad), Err(CoreError::Malformed { .. })),
                "{bad}"
            );
        }
    }
}
