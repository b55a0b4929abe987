//! Continuation tokens in headers: the store's token, percent-encoded so that any token is a
//! valid header value (and decoded back).

use axum::http::{HeaderName, HeaderValue};

use crate::df::payload::encode_segment;
use crate::error::{ApiResult, HttpError};

/// The Durable Functions paging header.
pub const HEADER: HeaderName = HeaderName::from_static("x-ms-continuation-token");

/// A store token as a header value.
pub fn encode(token: &str) -> ApiResult<HeaderValue> {
    HeaderValue::from_str(&encode_segment(token)).map_err(|e| HttpError::Invalid {
        field: "continuationToken",
        message: e.to_string(),
    })
}

/// A Durable Functions list page: `body` as JSON, with the next page's token (if any) in
/// the paging header.
pub fn paged_json<T: serde::Serialize>(
    body: T,
    continuation: Option<&str>,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let mut response = axum::Json(body).into_response();
    if let Some(c) = continuation {
        response.headers_mut().insert(HEADER, encode(c)?);
    }
    Ok(response)
}

/// A header or query value back into the store's token.
pub fn decode(text: &str) -> ApiResult<String> {
    let bad = || HttpError::Invalid {
        field: "continuationToken",
        message: format!(
            "malformed continuation token {:?}",
            text.chars().take(100).collect::<String>()
        ),
    };
    // `percent_decode_str` keeps a `%` not followed by two hex digits as it is; a token
    // never has one, so such text is refused rather than passed on to the store.
    let well_formed = text.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return Err(bad());
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_token_round_trips_through_a_header() {
        for t in ["abc", "héllo wörld|42", "{\"k\":1}"] {
            let h = encode(t).unwrap();
            assert_eq!(decode(h.to_str().unwrap()).unwrap(), t);
        }
        assert!(decode("%zz").is_err() && decode("%4").is_err());
    }
}
