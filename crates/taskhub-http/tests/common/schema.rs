//! A small JSON-Schema check over the OpenAPI document's component schemas: `$ref`, `type`
//! (one or a list, `null` included), `properties`, `required`, `items`,
//! `additionalProperties`, `oneOf`/`anyOf`/`allOf` and `enum`. Objects are strict: a
//! property the schema does not name is an error (the schemas are generated from the very
//! structs the handlers serialize, so an extra field means they have drifted).
#![allow(
    clippy::indexing_slicing,
    dead_code,
    clippy::unwrap_used,
    reason = "test code"
)]

use serde_json::Value;

/// The schema of the JSON answer `status` of `method path` in `doc`: the exact status or
/// `default`. `Err` if the document does not list that status; `Ok(None)` for an answer
/// without a JSON body.
pub fn response_schema<'a>(
    doc: &'a Value,
    method: &str,
    path: &str,
    status: u16,
) -> Result<Option<&'a Value>, String> {
    let op = &doc["paths"][path][method.to_lowercase()];
    let responses = op["responses"]
        .as_object()
        .ok_or_else(|| format!("{method} {path} is not in the document"))?;
    let response = responses
        .get(&status.to_string())
        .or_else(|| responses.get("default"))
        .ok_or_else(|| format!("{method} {path} does not document status {status}"))?;
    Ok(response["content"]
        .get("application/json")
        .map(|c| &c["schema"]))
}

/// Every mismatch between `value` and `schema`, each with its JSON path (empty: it fits).
pub fn check(doc: &Value, schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    walk(doc, schema, value, "$", &mut errors);
    errors
}

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => {
            let name = r.trim_start_matches("#/components/schemas/");
            let target = &doc["components"]["schemas"][name];
            assert!(!target.is_null(), "unknown schema {r}");
            resolve(doc, target)
        }
        None => schema,
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(doc: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let schema = resolve(doc, schema);
    if let Some(all) = schema["allOf"].as_array() {
        for s in all {
            walk(doc, s, v, at, errors);
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alternatives) = schema[key].as_array() {
            let fits = alternatives.iter().filter(|s| check(doc, s, v).is_empty());
            if fits.count() == 0 {
                errors.push(format!("{at}: fits none of {key} ({v})"));
            }
        }
    }
    if let Some(allowed) = schema["enum"].as_array() {
        if !allowed.contains(v) {
            errors.push(format!("{at}: {v} is not one of {allowed:?}"));
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let actual = type_of(v);
    let fits = types.is_empty()
        || types.contains(&actual)
        || (actual == "integer" && types.contains(&"number"));
    if !fits {
        errors.push(format!("{at}: {actual} where the schema says {types:?}"));
        return;
    }
    match v {
        Value::Object(fields) => {
            let properties = schema["properties"].as_object();
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap();
                if !fields.contains_key(name) {
                    errors.push(format!("{at}: required field {name:?} is missing"));
                }
            }
            for (name, field) in fields {
                let here = format!("{at}.{name}");
                match properties.and_then(|p| p.get(name)) {
                    Some(s) => walk(doc, s, field, &here, errors),
                    None => match &schema["additionalProperties"] {
                        Value::Null if properties.is_some() => {
                            errors.push(format!("{here}: a field the schema does not name"));
                        }
                        Value::Bool(false) => {
                            errors.push(format!("{here}: a field the schema does not allow"));
                        }
                        s @ Value::Object(_) => walk(doc, s, field, &here, errors),
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(doc, s, item, &format!("{at}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}
