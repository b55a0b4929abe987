//! The crate's error type and how each error becomes an HTTP response: a status code and a
//! JSON body `{"error": message, "code": kind, "field": name?}`.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use taskhub::{InstanceId, OrchestrationStatus, TaskhubError};

/// What can go wrong serving the management API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A request value is malformed (400). `field` names it: `instanceId`, `eventName`,
    /// `body`, `runtimeStatus`, ...
    #[error("invalid {field}: {message}")]
    Invalid {
        /// The request field at fault.
        field: &'static str,
        /// What is wrong with it (the same text the CLI prints for the same input).
        message: String,
    },
    /// The instance (or dead letter, partition, ...) does not exist (404).
    #[error("{0} not found")]
    NotFound(String),
    /// The instance has finished and cannot take the operation (410, as Durable Functions).
    #[error("instance '{instance_id}' is {status}: cannot {operation}")]
    Gone {
        /// The instance.
        instance_id: InstanceId,
        /// Its status.
        status: OrchestrationStatus,
        /// What was attempted.
        operation: &'static str,
    },
    /// The operation conflicts with the current state (409): an instance ID in use, an
    /// active instance to purge, an instance already suspended.
    #[error("{0}")]
    Conflict(String),
    /// No or a wrong bearer token (401).
    #[error("missing or wrong bearer token (send Authorization: Bearer <token>)")]
    Unauthorized,
    /// A cross-site request, or a Host the server does not answer to (403).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The request body is larger than the configured cap (413).
    #[error("request body over the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The Durable Functions operation exists but Taskhub does not offer it (501); none is
    /// left today (rewind was the last).
    #[error("{0}")]
    NotImplemented(String),
    /// No route has this method and path (404).
    #[error("no route for {0}")]
    NoRoute(String),
    /// The server was asked to listen on a non-loopback address without a token.
    #[error(
        "refusing to listen on {addr} without a token: set http_token in taskhub.toml or TASKHUB_HTTP_TOKEN (every request must then carry Authorization: Bearer <token>), or listen on 127.0.0.1"
    )]
    TokenRequired {
        /// The address asked for.
        addr: std::net::SocketAddr,
    },
    /// A connection limit that cannot be served (zero).
    #[error("cannot serve HTTP: {0}")]
    InvalidLimits(String),
    /// Listening or serving failed.
    #[error("cannot serve HTTP: {0}")]
    Io(#[from] std::io::Error),
    /// The task hub failed (500, or 503 when retrying may succeed).
    #[error(transparent)]
    Taskhub(TaskhubError),
}

impl HttpError {
    /// True if retrying the same request may succeed (a busy or unavailable store).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Taskhub(e) => e.is_retryable(),
            Self::Io(_) => true,
            _ => false,
        }
    }

    /// The HTTP status code of this error.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Invalid { .. } => StatusCode::BAD_REQUEST,
            Self::NotFound(_) | Self::NoRoute(_) => StatusCode::NOT_FOUND,
            Self::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            Self::Gone { .. } => StatusCode::GONE,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Taskhub(e) if e.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
            Self::TokenRequired { .. }
            | Self::InvalidLimits(_)
            | Self::Io(_)
            | Self::Taskhub(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::Invalid { .. } => "invalid",
            Self::NotFound(_) => "not_found",
            Self::NoRoute(_) => "no_route",
            Self::NotImplemented(_) => "not_implemented",
            Self::Gone { .. } => "gone",
            Self::Conflict(_) => "conflict",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::PayloadTooLarge { .. } => "payload_too_large",
            Self::TokenRequired { .. } => "token_required",
            Self::InvalidLimits(_) => "invalid_limits",
            Self::Io(_) => "io",
            Self::Taskhub(e) if e.is_retryable() => "unavailable",
            Self::Taskhub(_) => "internal",
        }
    }
}

impl From<TaskhubError> for HttpError {
    fn from(e: TaskhubError) -> Self {
        match e {
            TaskhubError::NotFound(id) => Self::NotFound(format!("instance '{id}'")),
            TaskhubError::Invalid(core) => Self::Invalid {
                field: "request",
                message: core.to_string(),
            },
            TaskhubError::AlreadyExists { .. } => Self::Conflict(e.to_string()),
            TaskhubError::WrongStatus {
                instance_id,
                status,
                operation,
            } if status.is_terminal() => Self::Gone {
                instance_id,
                status,
                operation,
            },
            TaskhubError::WrongStatus { .. } => Self::Conflict(e.to_string()),
            TaskhubError::UnknownPartition { .. } => Self::NotFound(e.to_string()),
            TaskhubError::ExecutionNotFound { .. } => Self::NotFound(e.to_string()),
            TaskhubError::InvalidTag { .. } => Self::Invalid {
                field: "tags",
                message: e.to_string(),
            },
            TaskhubError::Contended(_) => Self::Conflict(e.to_string()),
            other => Self::Taskhub(other),
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "HTTP API request failed");
        }
        let body = crate::responses::ErrorBody {
            error: self.to_string(),
            code: self.code(),
            field: match &self {
                Self::Invalid { field, .. } => Some(*field),
                _ => None,
            },
        };
        let mut response = (status, axum::Json(body)).into_response();
        if matches!(self, Self::Unauthorized) {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

/// The result of a handler.
pub type ApiResult<T> = Result<T, HttpError>;
