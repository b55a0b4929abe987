//! The `--json` forms of instances and entities, with their payloads (input, output, custom
//! status, entity state) shown exactly as stored: a payload that a `serde_json::Value` would
//! change — an integer beyond 64 bits, a decimal with more digits than an `f64` keeps — is
//! written as its stored text instead of being re-encoded. Keys are in alphabetical order.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use taskhub::client::suspend_reason;
use taskhub::{
    EntityMetadata, ExecutionStatus, FailureDetails, InstanceRow, OrchestrationStatus, Payload,
    Tags, Timestamp,
};

use crate::timefmt;

/// A payload in JSON output.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PayloadJson {
    /// Parsed: no number in it is a float, so the value is what was stored (pretty-printed
    /// with the rest of the output).
    Value(Value),
    /// The stored text as it is: parsing it into a `Value` would round a number.
    Raw(Box<RawValue>),
}

/// A payload as JSON: a string of its text if it is not JSON (an SDK's opaque payload, such
/// as a large-payload token), `null` if absent.
pub fn payload_json(p: &Payload) -> PayloadJson {
    let Some(text) = p.text() else {
        return PayloadJson::Value(Value::Null);
    };
    match serde_json::from_str::<Value>(text) {
        Ok(v) if !has_float(&v) => PayloadJson::Value(v),
        Ok(v) => {
            RawValue::from_string(text.to_owned()).map_or(PayloadJson::Value(v), PayloadJson::Raw)
        }
        Err(_) => PayloadJson::Value(Value::String(text.to_owned())),
    }
}

/// True if a number in `v` was read as a float: integers beyond 64 bits and decimals may not
/// come back from an `f64` as they were written.
fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(fields) => fields.values().any(has_float),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

fn ts_json(ts: Option<Timestamp>) -> Option<String> {
    ts.map(timefmt::format)
}

fn failure_json(f: &FailureDetails) -> Value {
    json!({
        "error_type": f.error_type,
        "message": f.message,
        "details": f.details,
        "non_retryable": f.non_retryable,
    })
}

/// An instance row as JSON (`instances show --json`, `instances list --json`).
#[derive(Debug, Serialize)]
pub struct RowJson<'a> {
    completed_at: Option<String>,
    created_at: Option<String>,
    custom_status: Option<PayloadJson>,
    execution_id: &'a str,
    failure: Option<Value>,
    input: PayloadJson,
    instance_id: &'a str,
    name: &'a str,
    output: Option<PayloadJson>,
    partition: u32,
    previous_executions: Vec<Value>,
    scheduled_start: Option<String>,
    status: &'static str,
    suspend_reason: Option<String>,
    tags: &'a Tags,
    updated_at: Option<String>,
    version: Option<&'a str>,
}

/// An instance row as JSON.
pub fn row_json(row: &InstanceRow) -> RowJson<'_> {
    RowJson {
        completed_at: ts_json(row.completed_at),
        created_at: ts_json(Some(row.created_at)),
        custom_status: row.custom_status.as_ref().map(payload_json),
        execution_id: row.execution_id.as_str(),
        failure: row.failure.as_ref().map(failure_json),
        input: payload_json(&row.input),
        instance_id: row.instance_id.as_str(),
        name: &row.name,
        // While suspended the output column holds the reason.
        output: row
            .output
            .as_ref()
            .filter(|_| row.status != OrchestrationStatus::Suspended)
            .map(payload_json),
        partition: row.partition,
        previous_executions: row
            .executions
            .iter()
            .map(|e| {
                json!({
                    "completed_at": timefmt::format(e.completed_at),
                    "execution_id": e.execution_id.as_str(),
                    "status": e.status.as_str(),
                })
            })
            .collect(),
        scheduled_start: ts_json(row.scheduled_start),
        status: row.status.as_str(),
        suspend_reason: suspend_reason(row),
        tags: &row.tags,
        updated_at: ts_json(Some(row.updated_at)),
        version: row.version.as_deref(),
    }
}

/// A page of `instances list --json`.
#[derive(Debug, Serialize)]
pub struct ListJson<'a> {
    /// The token of the next page, if any.
    pub continuation: Option<String>,
    /// The rows.
    pub instances: Vec<RowJson<'a>>,
}

/// `instances show ID --execution EID --json`: one execution's status.
#[derive(Debug, Serialize)]
pub struct ExecutionJson<'a> {
    completed_at: Option<String>,
    current: bool,
    custom_status: Option<PayloadJson>,
    execution_id: &'a str,
    failure: Option<Value>,
    input: PayloadJson,
    instance_id: &'a str,
    name: &'a str,
    output: Option<PayloadJson>,
    started_at: Option<String>,
    status: &'static str,
}

/// One execution's status as JSON.
pub fn execution_json(e: &ExecutionStatus) -> ExecutionJson<'_> {
    ExecutionJson {
        completed_at: ts_json(e.completed_at),
        current: e.current,
        custom_status: e.custom_status.as_ref().map(payload_json),
        execution_id: e.execution_id.as_str(),
        failure: e.failure.as_ref().map(failure_json),
        input: payload_json(&e.input),
        instance_id: e.instance_id.as_str(),
        name: &e.name,
        output: e.output.as_ref().map(payload_json),
        started_at: ts_json(Some(e.started_at)),
        status: e.status.as_str(),
    }
}

/// An entity as JSON (`entities show`, `entities list --json`).
#[derive(Debug, Serialize)]
pub struct EntityJson<'a> {
    has_state: bool,
    id: String,
    key: &'a str,
    last_modified: String,
    locked_by: Option<String>,
    name: &'a str,
    queued: usize,
    state: Option<PayloadJson>,
}

/// An entity as JSON.
pub fn entity_json(e: &EntityMetadata) -> EntityJson<'_> {
    EntityJson {
        has_state: e.state.is_some(),
        id: e.id.to_string(),
        key: e.id.key(),
        last_modified: timefmt::format(e.last_modified),
        locked_by: e.locked_by.as_ref().map(ToString::to_string),
        name: e.id.name(),
        queued: e.queued,
        state: e.state.as_ref().map(payload_json),
    }
}

/// A page of `entities list --json`.
#[derive(Debug, Serialize)]
pub struct EntityListJson<'a> {
    /// The token of the next page, if any.
    pub continuation: Option<String>,
    /// The entities.
    pub entities: Vec<EntityJson<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        let p = Payload::from_json(text).map_err(|e| e.to_string());
        p.and_then(|p| serde_json::to_string(&payload_json(&p)).map_err(|e| e.to_string()))
            .unwrap_or_else(|e| e)
    }

    #[test]
    fn payloads_are_shown_as_stored() {
        // Integers beyond 64 bits and long decimals: the stored text.
        assert_eq!(
            shown(r#"{"n": 12345678901234567890123}"#),
            r#"{"n": 12345678901234567890123}"#
        );
        assert_eq!(
            shown("[0.1000000000000000055511151231257827]"),
            "[0.1000000000000000055511151231257827]"
        );
        // Everything else: parsed (and so re-encoded, compact here).
        assert_eq!(
            shown(r#"{"b": [1, -2, true, null, "x"]}"#),
            r#"{"b":[1,-2,true,null,"x"]}"#
        );
        assert_eq!(shown("18446744073709551615"), "18446744073709551615");
    }

    #[test]
    fn opaque_payloads_are_strings_and_absent_ones_null() {
        let show = |p: &Payload| serde_json::to_string(&payload_json(p)).unwrap();
        assert_eq!(show(&Payload::from_text("blob:v1:c:b")), "\"blob:v1:c:b\"");
        assert_eq!(show(&Payload::from_text("{nope")), "\"{nope\"");
        assert_eq!(show(&Payload::absent()), "null");
        assert_eq!(show(&Payload::null()), "null");
    }
}
