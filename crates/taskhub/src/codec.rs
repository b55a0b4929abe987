//! Queue message bodies: an encoded [`Message`], or a reference to its body in the
//! large-payload store when it is over the threshold.

use serde::{Deserialize, Serialize};
use taskhub_core::format::{decode_message, encode_message};
use taskhub_core::{InstanceId, Message};
use taskhub_storage::{PayloadStore, StorageError};

#[derive(Serialize, Deserialize)]
struct LargeRef {
    v: u32,
    large_payload: LargeTarget,
}

#[derive(Serialize, Deserialize)]
struct LargeTarget {
    instance: InstanceId,
    name: String,
}

/// Encodes `message`; a body over `threshold` bytes is stored in the payload store and the
/// queue carries a reference.
pub(crate) async fn encode(
    store: &dyn PayloadStore,
    message: &Message,
    threshold: usize,
) -> Result<String, StorageError> {
    let body = encode_message(message);
    if body.len() <= threshold {
        return Ok(body);
    }
    let name = format!("message-{}", message.id);
    store
        .put_payload(&message.target, &name, body.into_bytes())
        .await?;
    let reference = LargeRef {
        v: 1,
        large_payload: LargeTarget {
            instance: message.target.clone(),
            name,
        },
    };
    serde_json::to_string(&reference).map_err(|e| StorageError::Backend(e.to_string()))
}

/// Why a queue body could not be turned into a message.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// The body is not a message: dead-letter it.
    Malformed(String),
    /// Reading the large payload failed; retry later.
    Storage(StorageError),
}

/// Decodes a queue body, fetching a large payload if needed.
pub(crate) async fn decode(store: &dyn PayloadStore, body: &str) -> Result<Message, DecodeError> {
    if body.contains("\"large_payload\"") {
        if let Ok(r) = serde_json::from_str::<LargeRef>(body) {
            let bytes = store
                .get_payload(&r.large_payload.instance, &r.large_payload.name)
                .await
                .map_err(DecodeError::Storage)?
                .ok_or_else(|| {
                    DecodeError::Malformed(format!(
                        "large payload '{}' is missing",
                        r.large_payload.name
                    ))
                })?;
            let text = String::from_utf8(bytes)
                .map_err(|e| DecodeError::Malformed(format!("large payload is not UTF-8: {e}")))?;
            return decode_message(&text).map_err(|e| DecodeError::Malformed(e.to_string()));
        }
    }
    decode_message(body).map_err(|e| DecodeError::Malformed(e.to_string()))
}
