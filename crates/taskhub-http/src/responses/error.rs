//! The body of every error: `{"error": message, "code": kind, "field": name?}`.

use serde::Serialize;
use utoipa::ToSchema;

/// An error.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong, in words.
    pub error: String,
    /// The kind: `invalid`, `not_found`, `no_route`, `gone`, `conflict`, `unauthorized`,
    /// `forbidden`, `payload_too_large`, `not_implemented`, `unavailable`, `internal`, ...
    pub code: &'static str,
    /// For `invalid`: the request field at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
}
