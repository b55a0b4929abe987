//! ISO 8601 / RFC 3339 timestamps in UTC, as the Durable Functions API writes and reads them:
//! `taskhub::time`, under the names the routes use.

pub use taskhub::time::parse_time as parse;
pub use taskhub::time::rfc3339_millis as millis;
pub use taskhub::time::rfc3339_seconds as seconds;
