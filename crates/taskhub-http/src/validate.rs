//! Request values checked with the same rules and messages as the CLI: instance IDs
//! (`InstanceId::new`), JSON payloads (`Payload::from_json`), status names, times; plus event
//! names. Every failure is a 400 naming the field.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use taskhub::{InstanceId, OrchestrationStatus, Payload, Timestamp};

use crate::error::{ApiResult, HttpError};
use crate::isotime;

/// The longest event name accepted, in bytes.
pub const MAX_EVENT_NAME_BYTES: usize = 256;

/// An instance ID from a URL or query.
pub fn instance_id(text: &str) -> ApiResult<InstanceId> {
    InstanceId::new(text).map_err(|e| HttpError::Invalid {
        field: "instanceId",
        message: e.to_string(),
    })
}

/// An event name: 1 to 256 bytes, no control characters.
pub fn event_name(text: &str) -> ApiResult<String> {
    let reason = if text.is_empty() {
        Some("it is empty")
    } else if text.len() > MAX_EVENT_NAME_BYTES {
        Some("it is longer than 256 bytes")
    } else if text.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    };
    match reason {
        Some(r) => Err(HttpError::Invalid {
            field: "eventName",
            message: format!("event name {:?} is invalid: {r}", truncate(text)),
        }),
        None => Ok(text.to_owned()),
    }
}

/// An orchestration name from a URL: the same rule as an event name.
pub fn orchestration_name(text: &str) -> ApiResult<String> {
    event_name(text).map_err(|e| match e {
        HttpError::Invalid { message, .. } => HttpError::Invalid {
            field: "functionName",
            message: message.replace("event name", "orchestration name"),
        },
        other => other,
    })
}

fn truncate(text: &str) -> String {
    text.chars().take(100).collect()
}

/// The request body as a JSON payload (`null` when empty). `what` names it in the error.
pub fn json_body(
    body: Result<Bytes, BytesRejection>,
    limit: usize,
    what: &str,
) -> ApiResult<Payload> {
    let bytes = body_bytes(body, limit)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Payload::null());
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| HttpError::Invalid {
        field: "body",
        message: format!("{what} is not UTF-8: {e}"),
    })?;
    Payload::from_json(text).map_err(|e| HttpError::Invalid {
        field: "body",
        message: format!("{what} is not valid JSON: {e}"),
    })
}

/// The raw body, with an over-long one turned into a 413.
pub fn body_bytes(body: Result<Bytes, BytesRejection>, limit: usize) -> ApiResult<Bytes> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            HttpError::PayloadTooLarge { limit }
        } else {
            HttpError::Invalid {
                field: "body",
                message: rejection.body_text(),
            }
        }
    })
}

/// Comma-separated status names (`runtimeStatus=Running,Pending`), case-insensitive.
pub fn statuses(values: &[String]) -> ApiResult<Vec<OrchestrationStatus>> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<OrchestrationStatus>()
                .map_err(|e| HttpError::Invalid {
                    field: "runtimeStatus",
                    message: e.to_string(),
                })
        })
        .collect()
}

/// A time in a query (`createdTimeFrom`): RFC 3339 or Unix milliseconds.
pub fn time(field: &'static str, text: &str) -> ApiResult<Timestamp> {
    isotime::parse(text).ok_or_else(|| HttpError::Invalid {
        field,
        message: format!(
            "expected an RFC 3339 time or Unix milliseconds, got {:?}",
            truncate(text)
        ),
    })
}

/// A `true`/`false` query flag (absent or empty: `default`).
pub fn flag(field: &'static str, text: Option<&str>, default: bool) -> ApiResult<bool> {
    match text.map(str::trim) {
        None | Some("") => Ok(default),
        Some(t) if t.eq_ignore_ascii_case("true") || t == "1" => Ok(true),
        Some(t) if t.eq_ignore_ascii_case("false") || t == "0" => Ok(false),
        Some(t) => Err(HttpError::Invalid {
            field,
            message: format!("expected true or false, got {:?}", truncate(t)),
        }),
    }
}

/// A page size (`top`): 1 to 1,000.
pub fn page_size(text: Option<&str>) -> ApiResult<usize> {
    match text.map(str::trim) {
        None | Some("") => Ok(100),
        Some(t) => match t.parse::<usize>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(n),
            _ => Err(HttpError::Invalid {
                field: "top",
                message: format!(
                    "expected a whole number from 1 to 1000, got {:?}",
                    truncate(t)
                ),
            }),
        },
    }
}

/// The `tag=KEY=VALUE` pairs among a request's query parameters (repeatable), each checked
/// against the hub's tag caps (`caps`: `TaskHubClient::tag_caps`); a 400 naming `tag` for a
/// bad one.
pub fn tags(
    pairs: &[(String, String)],
    caps: &taskhub::client::tags::TagCaps,
) -> ApiResult<taskhub::Tags> {
    let mut tags = taskhub::Tags::new();
    for (_, text) in pairs.iter().filter(|(k, _)| k == "tag") {
        let (key, value) =
            taskhub::client::tags::parse_tag(text, caps).map_err(|e| HttpError::Invalid {
                field: "tag",
                message: e.to_string(),
            })?;
        tags.insert(key, value);
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_field_with_the_cli_message() {
        let e = instance_id("a/b").unwrap_err();
        let cli = InstanceId::new("a/b").unwrap_err().to_string();
        assert!(
            matches!(&e, HttpError::Invalid { field: "instanceId", message } if *message == cli),
            "{e}"
        );
        assert!(matches!(
            event_name(""),
            Err(HttpError::Invalid {
                field: "eventName",
                ..
            })
        ));
        assert!(matches!(
            event_name(&"x".repeat(257)),
            Err(HttpError::Invalid {
                field: "eventName",
                ..
            })
        ));
        assert!(event_name("Approval").is_ok());
        let e = statuses(&["Running,bogus".to_owned()]).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        assert_eq!(
            statuses(&["running, Completed".to_owned()]).unwrap().len(),
            2
        );
        assert!(json_body(Ok(Bytes::from_static(b"{nope")), 10, "the input")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        assert_eq!(
            json_body(Ok(Bytes::new()), 10, "x").unwrap(),
            Payload::null()
        );
        assert!(page_size(Some("0")).is_err() && page_size(Some("1001")).is_err());
        assert!(flag("showInput", Some("maybe"), true).is_err());
    }
}
