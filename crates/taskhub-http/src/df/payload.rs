//! The URLs of the Durable Functions HTTP API (the management payload's, the mount prefix)
//! and reading a request: its payload as JSON, its content type, its continuation token. The response shapes are in [`crate::responses`].

use axum::http::{HeaderMap, Uri};
use serde_json::Value;
use taskhub::Payload;

use crate::error::ApiResult;
use crate::token;

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

/// True if the request says its body is JSON (`Content-Type: application/json`, parameters
/// allowed).
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// The continuation token of a Durable Functions listing (its `x-ms-continuation-token`
/// header; empty or `null`: the first page).
///
/// # Errors
/// 400 for a token that is not one of ours.
pub fn continuation(headers: &HeaderMap) -> ApiResult<Option<String>> {
    headers
        .get(token::HEADER)
        .and_then(|h| h.to_str().ok())
        .filter(|t| !t.is_empty() && *t != "null")
        .map(token::decode)
        .transpose()
}

/// Everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one URL path segment (everything but unreserved characters).
pub fn encode_segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, NOT_UNRESERVED).to_string()
}

/// The status URL of an instance.
pub fn status_url(origin: &str, instance_id: &str) -> String {
    format!("{origin}{BASE}/instances/{}", encode_segment(instance_id))
}

/// A request payload as a `Value` (one that is not valid JSON becomes a string).
pub fn json_of(p: &Payload) -> Value {
    serde_json::from_str(p.as_str()).unwrap_or_else(|_| Value::String(p.as_str().to_owned()))
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
        let m = crate::responses::ManagementPayload::new("http://h:1", "x y");
        assert_eq!(
            m.status_query_get_uri,
            "http://h:1/runtime/webhooks/durabletask/instances/x%20y"
        );
        assert_eq!(m.id, "x y");
    }
}
