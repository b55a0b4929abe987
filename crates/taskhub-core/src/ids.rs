//! Instance, execution and message identifiers.
//!
//! An [`InstanceId`] is validated (1 to [`MAX_INSTANCE_ID_BYTES`] bytes of UTF-8, no control
//! characters, none of `/ \ # ?`) and routed to a partition by FNV-1a ([`fnv1a_32`]). A
//! [`MessageId`] is random, or derived from its sender and purpose, so a turn that runs again
//! derives the same IDs and receivers can de-duplicate.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// The longest instance ID accepted, in UTF-8 bytes.
pub const MAX_INSTANCE_ID_BYTES: usize = 256;

/// The longest caller-chosen event ID ([`MessageId::for_raised_event`]), in bytes.
pub const MAX_EVENT_ID_BYTES: usize = 256;

/// Characters that cannot appear in an instance ID because they are not allowed in
/// table keys on every backend (Azure Table keys forbid them).
const FORBIDDEN_CHARS: [char; 4] = ['/', '\\', '#', '?'];

/// The user-visible, unique name of one orchestration instance.
///
/// Valid IDs are 1 to [`MAX_INSTANCE_ID_BYTES`] bytes of UTF-8 with no control characters
/// and none of `/ \ # ?`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct InstanceId(String);

impl InstanceId {
    /// Validates `id` and wraps it.
    ///
    /// # Errors
    /// [`CoreError::InvalidInstanceId`] naming the broken rule.
    pub fn new(id: impl Into<String>) -> Result<Self, CoreError> {
        let id = id.into();
        let reject = |reason| {
            Err(CoreError::InvalidInstanceId {
                id: id.chars().take(300).collect(),
                reason,
            })
        };
        if id.is_empty() {
            return reject("it is empty");
        }
        if id.len() > MAX_INSTANCE_ID_BYTES {
            return reject("it is longer than 256 bytes");
        }
        if id.chars().any(char::is_control) {
            return reject("it contains a control character");
        }
        if id.chars().any(|c| FORBIDDEN_CHARS.contains(&c)) {
            return reject("it contains one of the characters / \\ # ?");
        }
        Ok(Self(id))
    }

    /// A fresh random instance ID (a UUID v4 in simple form).
    #[must_use]
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4().simple().to_string())
    }

    /// The partition this instance belongs to: FNV-1a-32 of the UTF-8 ID modulo `partition_count`.
    ///
    /// A `partition_count` of 0 is treated as 1.
    #[must_use]
    pub fn partition(&self, partition_count: u32) -> u32 {
        fnv1a_32(self.0.as_bytes()) % partition_count.max(1)
    }
}

impl<'de> Deserialize<'de> for InstanceId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<&str> for InstanceId {
    type Error = CoreError;
    fn try_from(s: &str) -> Result<Self, CoreError> {
        Self::new(s)
    }
}

impl TryFrom<String> for InstanceId {
    type Error = CoreError;
    fn try_from(s: String) -> Result<Self, CoreError> {
        Self::new(s)
    }
}

/// FNV-1a, 32-bit, as used by the original provider to route instances to partitions.
#[must_use]
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Identifies one execution (generation) of an instance; continue-as-new starts a new one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExecutionId(String);

impl ExecutionId {
    /// Wraps an existing execution ID (1 to 64 bytes).
    ///
    /// # Errors
    /// [`CoreError::InvalidExecutionId`] if empty or too long.
    pub fn new(id: impl Into<String>) -> Result<Self, CoreError> {
        let id = id.into();
        if id.is_empty() || id.len() > 64 {
            return Err(CoreError::InvalidExecutionId {
                reason: "it must be 1 to 64 bytes",
                id,
            });
        }
        Ok(Self(id))
    }

    /// A fresh random execution ID.
    #[must_use]
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4().simple().to_string())
    }

    /// The execution ID that deterministically follows this one after continue-as-new.
    #[must_use]
    pub fn next_generation(&self) -> Self {
        Self(
            name_uuid(&[self.0.as_bytes(), b"continue-as-new"])
                .simple()
                .to_string(),
        )
    }
}

/// A unique message ID, used by receivers to apply a message at most once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(String);

impl MessageId {
    /// A fresh random message ID (for messages that do not come from an orchestration turn,
    /// such as a client's start or raise-event).
    #[must_use]
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4().simple().to_string())
    }

    /// A message ID derived from who sent it and why.
    ///
    /// An orchestration turn that is re-run after a crash derives the same IDs, so the
    /// receiver can recognise the resent message as a duplicate.
    #[must_use]
    pub fn derived(instance: &InstanceId, execution: &ExecutionId, purpose: &str) -> Self {
        Self(
            name_uuid(&[
                instance.as_str().as_bytes(),
                execution.as_str().as_bytes(),
                purpose.as_bytes(),
            ])
            .simple()
            .to_string(),
        )
    }

    /// The message ID of a client's raise-event with a caller-chosen event ID (an idempotency
    /// key): the same for every retry of that raise, so the receiver applies it once.
    ///
    /// # Errors
    /// `InvalidEventId` if `event_id` is empty or longer than [`MAX_EVENT_ID_BYTES`].
    pub fn for_raised_event(instance: &InstanceId, event_id: &str) -> Result<Self, CoreError> {
        let reason = if event_id.is_empty() {
            Some("must not be empty")
        } else if event_id.len() > MAX_EVENT_ID_BYTES {
            Some("must be at most 256 bytes")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(CoreError::InvalidEventId {
                id: event_id.chars().take(300).collect(),
                reason,
            });
        }
        Ok(Self(
            name_uuid(&[
                instance.as_str().as_bytes(),
                b"raised-event",
                event_id.as_bytes(),
            ])
            .simple()
            .to_string(),
        ))
    }

    /// Wraps an existing message ID as read from storage.
    #[must_use]
    pub fn from_stored(id: impl Into<String>) -> Self {
        Self(id.into())
    }
}

/// The text of each ID type, a newtype over its `String`: `as_str` and `Display`.
macro_rules! id_text {
    ($($id:ty),+) => {$(
        impl $id {
            /// The ID as a string slice.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )+};
}

id_text!(InstanceId, ExecutionId, MessageId);

/// A name-based (v5) UUID over the given parts, separated so that part boundaries matter.
pub(crate) fn name_uuid(parts: &[&[u8]]) -> uuid::Uuid {
    let mut bytes = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for part in parts {
        bytes.extend_from_slice(part);
        bytes.push(0);
    }
    uuid::Uuid::new_v5(&TASKHUB_NAMESPACE, &bytes)
}

/// The UUID namespace of deterministic Taskhub IDs.
const TASKHUB_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6b1e_2c0a_8d4f_4e57_9c1a_5d0f_3a2b_7e11);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_instance_ids_with_reason() {
        let err = InstanceId::new("").unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
        let err = InstanceId::new("a".repeat(257)).unwrap_err();
        assert!(err.to_string().contains("256 bytes"), "{err}");
        let err = InstanceId::new("a\nb").unwrap_err();
        assert!(err.to_string().contains("control character"), "{err}");
        let err = InstanceId::new("a/b").unwrap_err();
        assert!(err.to_string().contains("/ \\ # ?"), "{err}");
        assert!(InstanceId::new("a".repeat(256)).is_ok());
        assert!(InstanceId::new("order-42:東京").is_ok());
    }

    #[test]
    fn deserializing_validates() {
        let err = serde_json::from_str::<InstanceId>("\"\"").unwrap_err();
        assert!(err.to_string().contains("empty"));
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Reference values of FNV-1a 32-bit.
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
        let id = InstanceId::new("foobar").unwrap();
        assert_eq!(id.partition(4), 0xbf9c_f968 % 4);
        assert_eq!(id.partition(0), 0);
    }

    #[test]
    fn derived_ids_are_stable_and_distinct() {
        let i = InstanceId::new("x").unwrap();
        let e = ExecutionId::new("e1").unwrap();
        assert_eq!(
            MessageId::derived(&i, &e, "task:1"),
            MessageId::derived(&i, &e, "task:1")
        );
        assert_ne!(
            MessageId::derived(&i, &e, "task:1"),
            MessageId::derived(&i, &e, "task:2")
        );
        assert_ne!(e.next_generation(), e);
        assert_eq!(e.next_generation(), e.next_generation());
    }
}
