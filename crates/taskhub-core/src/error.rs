//! The error type of `taskhub-core`.

/// Errors raised by the pure core: validation of ids and decoding of stored data.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoreError {
    /// Only a Failed execution can be rewound.
    #[error("only a Failed instance can be rewound; this one is {status}")]
    NotRewindable {
        /// The status the instance is in.
        status: String,
    },
    /// An instance ID was rejected; the message says which rule it broke.
    #[error("invalid instance ID {id:?}: {reason}")]
    InvalidInstanceId {
        /// The rejected ID (truncated to 300 characters for display).
        id: String,
        /// Which rule the ID broke.
        reason: &'static str,
    },
    /// An execution ID was empty or too long.
    #[error("invalid execution ID {id:?}: {reason}")]
    InvalidExecutionId {
        /// The rejected ID.
        id: String,
        /// Which rule the ID broke.
        reason: &'static str,
    },
    /// A caller-chosen event ID (idempotency key) was empty or too long.
    #[error("invalid event ID {id:?}: {reason}")]
    InvalidEventId {
        /// The rejected ID (truncated to 300 characters for display).
        id: String,
        /// Which rule the ID broke.
        reason: &'static str,
    },
    /// An entity ID (`@name@key`) was rejected; the message says which rule it broke.
    #[error("invalid entity ID {id:?}: {reason}")]
    InvalidEntityId {
        /// The rejected ID (truncated to 300 characters for display).
        id: String,
        /// Which rule the ID broke.
        reason: &'static str,
    },
    /// Stored data was written by a newer (or unknown) format version.
    #[error(
        "unsupported {what} format version {found} (this build reads versions up to {supported})"
    )]
    UnsupportedFormatVersion {
        /// What was being decoded ("history event", "message").
        what: &'static str,
        /// The version found in the data.
        found: u32,
        /// The highest version this build reads.
        supported: u32,
    },
    /// Stored data could not be decoded.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was being decoded.
        what: &'static str,
        /// The decoder's explanation.
        detail: String,
    },
    /// A value could not be serialized to or deserialized from a payload.
    #[error("payload {direction} failed for {what}: {detail}")]
    Payload {
        /// `serialize` or `deserialize`.
        direction: &'static str,
        /// What the payload was for (an activity name, "orchestration input", ...).
        what: String,
        /// The serializer's explanation.
        detail: String,
    },
    /// A payload that is not JSON (an SDK's opaque payload, such as a large-payload token)
    /// was read as a Rust value.
    #[error("{what} is not JSON (an opaque payload, kept as sent: {text:?}); read its text with Payload::as_str")]
    NotJson {
        /// What the payload was for (an activity name, "orchestration input", ...).
        what: String,
        /// The start of the payload's text.
        text: String,
    },
}
