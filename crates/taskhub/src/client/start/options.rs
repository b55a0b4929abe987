//! [`StartOptions`]: what a start is given besides the orchestration's name and input.

use std::time::SystemTime;

use taskhub_core::InstanceId;
use taskhub_storage::Tags;

use super::ReusePolicy;
use crate::telemetry::TraceContext;

/// Options of a start.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// The instance ID; a random one if `None`.
    pub instance_id: Option<InstanceId>,
    /// The orchestration version; the default version if `None`.
    pub version: Option<String>,
    /// What to do if the ID is in use.
    pub reuse: ReusePolicy,
    /// Do not run before this time.
    pub start_at: Option<SystemTime>,
    /// Tags: string keys and values kept in the instance's status (and across
    /// continue-as-new), filtered on by listings (`InstanceQuery::tags`). At most `max_tags`
    /// (32); keys of 1 to `max_tag_key_chars` (64) ASCII letters, digits and `_ - . : /`;
    /// values of at most `max_tag_value_chars` (256) characters, no control characters (the
    /// hub's settings; else `TaskhubError::InvalidTag` naming the cap's setting, and nothing is
    /// started).
    pub tags: Tags,
    /// The trace the instance joins: its first turn's span becomes a child of this context
    /// (e.g. an incoming request's W3C `traceparent`). `None` starts a new trace.
    pub trace_parent: Option<TraceContext>,
}
