//! Conversions between Taskhub's types and the protocol's messages, in one place: the client
//! calls use them now, the worker calls will reuse them. Each direction is unit-tested.
//!
//! Payloads: Taskhub stores JSON text; the protocol carries `google.protobuf.StringValue`.
//! An absent value, or an empty string (what the JavaScript SDK sends for "no input"), is JSON
//! `null`, and `null` goes out as absent (what the SDKs send and expect for `None`).

mod entity_events;
mod error;
mod failure;
mod history;
mod payload;
mod state;
mod status;
mod time;

pub use entity_events::{event_to_proto_with_entities, EntityRequests};
pub use error::ConvertError;
pub use failure::{failure_from_proto, failure_to_proto};
pub(crate) use history::terminate_output;
pub use history::{event_from_proto, event_to_proto};
pub use payload::{payload_from_proto, payload_to_proto};
pub use state::{state_to_proto, StateOptions};
pub use status::{status_from_proto, status_to_proto};
pub use time::{optional_timestamp_from_proto, timestamp_from_proto, timestamp_to_proto};
