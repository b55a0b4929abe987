//! The lifecycle stage: where a message or the worker itself ends when it cannot go on: the
//! dead-letter store for messages that cannot be processed (`poison`; `decode` ends a
//! message that cannot be decoded), and the halt when the
//! hub's schema moved past this build (`schema_watch`).

pub(crate) mod decode;
pub(crate) mod poison;
pub(crate) mod schema_watch;
