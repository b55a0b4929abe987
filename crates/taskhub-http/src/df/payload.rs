//! The JSON shapes of the Durable Functions HTTP API: the management payload of a start, the
//! status of an instance and its history events.

use axum::http::{HeaderMap, Uri};
use serde_json::{json, Map, Value};
use taskhub::{EventKind, HistoryEvent, InstanceRow, OrchestrationStatus, Payload};

use crate::isotime;

/// Where the Durable Functions routes live.
pub const BASE: &str = "/runtime/webhooks/durabletask";

/// `http://<Host>` of the request (the management URLs point back at this server), or
/// `https://` when a TLS-terminating proxy in front says so (`X-Forwarded-Proto: https`).
pub fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    let scheme = if https { "https" } else { "http" };
    format!("{scheme}://{host}")
}

/// Where the router is mounted in the user's app, from the original path of a request to a
/// Durable Functions route: what comes before [`BASE`] (empty at the root; `/ops` for
/// `Router::nest("/ops", ..)`).
pub fn mount_prefix(original: &Uri) -> &str {
    let path = original.path();
    path.rfind(BASE).map_or("", |i| &path[..i])
}

/// Percent-encodes one URL path segment (everything but unreserved characters).
pub fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The status URL of an instance.
pub fn status_url(origin: &str, instance_id: &str) -> String {
    format!("{origin}{BASE}/instances/{}", encode_segment(instance_id))
}

/// The management payload Durable Functions returns from a start (`CreateCheckStatusResponse`).
pub fn management(origin: &str, instance_id: &str) -> Value {
    let url = status_url(origin, instance_id);
    json!({
        "id": instance_id,
        "statusQueryGetUri": url,
        "sendEventPostUri": format!("{url}/raiseEvent/{{eventName}}"),
        "terminatePostUri": format!("{url}/terminate?reason={{text}}"),
        "purgeHistoryDeleteUri": url,
        "restartPostUri": format!("{url}/restart"),
        "suspendPostUri": format!("{url}/suspend?reason={{text}}"),
        "resumePostUri": format!("{url}/resume?reason={{text}}"),
    })
}

/// A payload as JSON (kept as stored; a payload that is not valid JSON becomes a string).
pub fn json_of(p: &Payload) -> Value {
    serde_json::from_str(p.as_str()).unwrap_or_else(|_| Value::String(p.as_str().to_owned()))
}

/// What a status response shows.
#[derive(Debug, Clone, Copy)]
pub struct Show {
    /// Include the input.
    pub input: bool,
    /// Include the history.
    pub history: bool,
    /// Include results in the history.
    pub history_output: bool,
}

/// The status object of one instance, as Durable Functions writes it.
pub fn status(row: &InstanceRow, history: Option<&[HistoryEvent]>, show: Show) -> Value {
    let output = match row.status {
        OrchestrationStatus::Suspended => Value::Null,
        OrchestrationStatus::Failed => row
            .failure
            .as_ref()
            .map_or(Value::Null, |f| Value::String(f.message.clone())),
        _ => row.output.as_ref().map_or(Value::Null, json_of),
    };
    let mut v = json!({
        "name": row.name,
        "instanceId": row.instance_id.as_str(),
        "runtimeStatus": row.status.as_str(),
        "input": if show.input { json_of(&row.input) } else { Value::Null },
        "customStatus": row.custom_status.as_ref().map_or(Value::Null, json_of),
        "output": output,
        "createdTime": isotime::seconds(row.created_at),
        "lastUpdatedTime": isotime::seconds(row.updated_at),
    });
    if let Some(f) = &row.failure {
        v["failureDetails"] = json!({
            "errorType": f.error_type,
            "errorMessage": f.message,
            "errorDetails": f.details,
        });
    }
    if show.history {
        v["historyEvents"] = Value::Array(
            history
                .map(|h| history_events(h, show.history_output))
                .unwrap_or_default(),
        );
    }
    v
}

/// History as Durable Functions shows it: `OrchestratorStarted`/`Completed` left out, a
/// scheduling event folded into its completion (`FunctionName`, `ScheduledTime`), PascalCase
/// fields, results only with `showHistoryOutput`.
pub fn history_events(events: &[HistoryEvent], show_output: bool) -> Vec<Value> {
    let mut scheduled: std::collections::HashMap<(bool, u64), (String, String)> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for e in events {
        let ts = isotime::millis(e.timestamp);
        let mut m = Map::new();
        let result = |m: &mut Map<String, Value>, p: &Payload| {
            if show_output {
                m.insert("Result".into(), json_of(p));
            }
        };
        let take = |map: &mut std::collections::HashMap<(bool, u64), (String, String)>,
                    m: &mut Map<String, Value>,
                    key: (bool, u64)| {
            if let Some((name, at)) = map.remove(&key) {
                m.insert("FunctionName".into(), Value::String(name));
                m.insert("ScheduledTime".into(), Value::String(at));
            }
        };
        let kind = match &e.event {
            EventKind::OrchestratorStarted | EventKind::OrchestratorCompleted => continue,
            EventKind::TaskScheduled { task_id, name, .. } => {
                scheduled.insert((false, *task_id), (name.clone(), ts.clone()));
                continue;
            }
            EventKind::SubOrchestrationCreated {
                task_id,
                name,
                instance_id,
                ..
            } => {
                scheduled.insert((true, *task_id), (name.clone(), ts.clone()));
                m.insert("FunctionName".into(), Value::String(name.clone()));
                m.insert("InstanceId".into(), Value::String(instance_id.to_string()));
                "SubOrchestrationInstanceCreated"
            }
            EventKind::ExecutionStarted { name, input, .. } => {
                m.insert("FunctionName".into(), Value::String(name.clone()));
                m.insert("Input".into(), json_of(input));
                "ExecutionStarted"
            }
            EventKind::ExecutionCompleted { result: r } => {
                m.insert("OrchestrationStatus".into(), "Completed".into());
                result(&mut m, r);
                "ExecutionCompleted"
            }
            EventKind::ExecutionFailed { failure } => {
                m.insert("OrchestrationStatus".into(), "Failed".into());
                m.insert("FailureDetails".into(), failure_json(failure));
                "ExecutionCompleted"
            }
            EventKind::ExecutionTerminated { reason } => {
                m.insert("Input".into(), Value::String(reason.clone()));
                "ExecutionTerminated"
            }
            EventKind::ContinuedAsNew { input, .. } => {
                m.insert("Input".into(), json_of(input));
                "ContinueAsNew"
            }
            EventKind::TaskCompleted { task_id, result: r } => {
                take(&mut scheduled, &mut m, (false, *task_id));
                result(&mut m, r);
                "TaskCompleted"
            }
            EventKind::TaskFailed { task_id, failure } => {
                take(&mut scheduled, &mut m, (false, *task_id));
                m.insert("FailureDetails".into(), failure_json(failure));
                "TaskFailed"
            }
            EventKind::SubOrchestrationCompleted { task_id, result: r } => {
                take(&mut scheduled, &mut m, (true, *task_id));
                result(&mut m, r);
                "SubOrchestrationInstanceCompleted"
            }
            EventKind::SubOrchestrationFailed { task_id, failure } => {
                take(&mut scheduled, &mut m, (true, *task_id));
                m.insert("FailureDetails".into(), failure_json(failure));
                "SubOrchestrationInstanceFailed"
            }
            EventKind::TimerCreated { fire_at, .. } => {
                m.insert("FireAt".into(), isotime::millis(*fire_at).into());
                "TimerCreated"
            }
            EventKind::TimerFired { fire_at, .. } => {
                m.insert("FireAt".into(), isotime::millis(*fire_at).into());
                "TimerFired"
            }
            EventKind::EventRaised { name, input } => {
                m.insert("Name".into(), Value::String(name.clone()));
                result(&mut m, input);
                "EventRaised"
            }
            EventKind::EventSent {
                name, instance_id, ..
            } => {
                m.insert("Name".into(), Value::String(name.clone()));
                m.insert("InstanceId".into(), Value::String(instance_id.to_string()));
                "EventSent"
            }
            EventKind::ExecutionSuspended { reason } => {
                m.insert(
                    "Reason".into(),
                    reason.clone().map_or(Value::Null, Value::String),
                );
                "ExecutionSuspended"
            }
            EventKind::ExecutionResumed { reason } => {
                m.insert(
                    "Reason".into(),
                    reason.clone().map_or(Value::Null, Value::String),
                );
                "ExecutionResumed"
            }
            other => other.type_name(),
        };
        m.insert("EventType".into(), Value::String(kind.to_owned()));
        m.insert("Timestamp".into(), Value::String(ts));
        out.push(Value::Object(m));
    }
    out
}

fn failure_json(f: &taskhub::FailureDetails) -> Value {
    json!({ "ErrorType": f.error_type, "ErrorMessage": f.message, "ErrorDetails": f.details })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn management_urls_follow_a_tls_proxy() {
        let mut h = HeaderMap::new();
        h.insert("host", "api.example.com".parse().unwrap());
        assert_eq!(origin(&h), "http://api.example.com");
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(origin(&h), "https://api.example.com");
    }

    #[test]
    fn the_mount_prefix_is_what_the_router_did_not_see() {
        let root: Uri = "/runtime/webhooks/durabletask/orchestrators/Hello"
            .parse()
            .unwrap();
        let nested: Uri = "/ops/runtime/webhooks/durabletask/orchestrators/Hello?x=1"
            .parse()
            .unwrap();
        assert_eq!(mount_prefix(&nested), "/ops");
        assert_eq!(mount_prefix(&root), "");
    }

    #[test]
    fn instance_ids_are_encoded_in_urls() {
        assert_eq!(encode_segment("a b<script>"), "a%20b%3Cscript%3E");
        let m = management("http://h:1", "x y");
        assert_eq!(
            m["statusQueryGetUri"],
            "http://h:1/runtime/webhooks/durabletask/instances/x%20y"
        );
        assert_eq!(m["id"], "x y");
    }
}
