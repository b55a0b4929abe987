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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use taskhub_core::{EventKind, Timestamp};
    use taskhub_storage::memory::MemoryStore;
    use taskhub_storage::ManualClock;

    fn setup() -> (tokio::runtime::Runtime, MemoryStore, Vec<String>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let store = MemoryStore::new(Arc::new(ManualClock::new(Timestamp::from_millis(0))));
        let small = Message::from_client(
            InstanceId::new("order-1").unwrap(),
            EventKind::EventRaised {
                name: "approval".into(),
                input: taskhub_core::Payload::from_json("true").unwrap(),
            },
            Timestamp::from_millis(5),
        );
        let large = Message::from_client(
            InstanceId::new("order-2").unwrap(),
            EventKind::EventRaised {
                name: "big".into(),
                input: taskhub_core::Payload::from_json(format!("\"{}\"", "x".repeat(200)))
                    .unwrap(),
            },
            Timestamp::from_millis(6),
        );
        let bodies = rt.block_on(async {
            vec![
                encode(&store, &small, 1_000).await.unwrap(),
                encode(&store, &large, 100).await.unwrap(),
            ]
        });
        assert!(bodies[1].contains("large_payload"));
        (rt, store, bodies)
    }

    fn check(rt: &tokio::runtime::Runtime, store: &MemoryStore, body: &str) {
        match rt.block_on(decode(store, body)) {
            Ok(m) => assert_eq!(decode_message(&encode_message(&m)).unwrap(), m),
            Err(DecodeError::Malformed(why)) => assert!(!why.is_empty()),
            Err(DecodeError::Storage(e)) => panic!("the memory store does not fail: {e}"),
        }
    }

    #[test]
    fn valid_bodies_decode() {
        let (rt, store, bodies) = setup();
        for body in &bodies {
            assert!(rt.block_on(decode(&store, body)).is_ok(), "{body}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn random_bodies_are_malformed_never_a_panic(text in ".{0,200}") {
            let (rt, store, _) = setup();
            check(&rt, &store, &text);
            check(&rt, &store, &format!("{{\"v\":1,\"large_payload\":{text}}}"));
        }

        #[test]
        fn mutated_bodies_are_malformed_never_a_panic(
            which in 0usize..2,
            cut in any::<usize>(),
            at in any::<usize>(),
            insert in prop_oneof![
                Just(String::new()), Just("\"".to_owned()), Just("}".to_owned()),
                Just("null".to_owned()), Just("\"large_payload\"".to_owned()),
                Just("\\ud800".to_owned()), ".{0,6}",
            ],
            flip in any::<(usize, u8)>(),
        ) {
            let (rt, store, bodies) = setup();
            let body = &bodies[which];
            let mut bytes = body.as_bytes().to_vec();
            let i = flip.0 % bytes.len();
            bytes[i] ^= flip.1;
            let flipped = String::from_utf8_lossy(&bytes).into_owned();
            check(&rt, &store, &flipped);
            let mut cut = cut % (body.len() + 1);
            while !body.is_char_boundary(cut) { cut -= 1; }
            check(&rt, &store, &body[..cut]);
            let mut at = at % (body.len() + 1);
            while !body.is_char_boundary(at) { at -= 1; }
            check(&rt, &store, &format!("{}{insert}{}", &body[..at], &body[at..]));
        }
    }
}
