//! Errors: the endpoint's own ([`GrpcError`]) and how the client's become gRPC statuses.

use std::net::SocketAddr;

use taskhub::TaskhubError;
use taskhub_storage::StorageError;
use tonic::Status;

use crate::convert::ConvertError;

/// Why the endpoint could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrpcError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve the gRPC endpoint on {addr} without a token: set http_token \
         (TASKHUB_HTTP_TOKEN; the gRPC endpoint shares the HTTP API's token) or listen on a \
         loopback address such as 127.0.0.1"
    )]
    TokenRequired {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// A connection limit that cannot be served.
    #[error("cannot serve the gRPC endpoint: {0}")]
    Limits(#[from] taskhub_listen::LimitsError),
}

/// The most characters of a caller's value an error message repeats: a 100 KB tag key echoed
/// whole would overflow the client's metadata limit (16 KiB in grpc-core) and hide the error.
pub(crate) const ECHO_CHARS: usize = 120;

/// `value` as an error message may repeat it: at most [`ECHO_CHARS`] characters, and when cut,
/// how long it was.
pub(crate) fn bounded(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(ECHO_CHARS) {
        None => std::borrow::Cow::Borrowed(value),
        Some((end, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} bytes in all)",
            value.get(..end).unwrap_or_default(),
            value.len()
        )),
    }
}

/// The most characters of a whole error message built from a caller's values (several
/// [`bounded`] values, or a message of the runtime's that repeats them).
pub(crate) const MESSAGE_CHARS: usize = 1_000;

/// `message` cut to [`MESSAGE_CHARS`] characters.
pub(crate) fn bounded_message(message: &str) -> String {
    match message.char_indices().nth(MESSAGE_CHARS) {
        None => message.to_owned(),
        Some((end, _)) => format!(
            "{}… (message cut; {} bytes in all)",
            message.get(..end).unwrap_or_default(),
            message.len()
        ),
    }
}

/// `INVALID_ARGUMENT` naming the field.
pub(crate) fn invalid(field: &str, reason: impl std::fmt::Display) -> Status {
    Status::invalid_argument(bounded_message(&format!("{field}: {reason}")))
}

/// A value that could not be converted: `INVALID_ARGUMENT` naming its field.
pub(crate) fn invalid_value(e: &ConvertError) -> Status {
    Status::invalid_argument(bounded_message(&e.to_string()))
}

/// The gRPC status of a client error: the request's fault (`INVALID_ARGUMENT`, `NOT_FOUND`,
/// `ALREADY_EXISTS`, `FAILED_PRECONDITION`), a wait that ran out (`DEADLINE_EXCEEDED`), or
/// storage: `UNAVAILABLE` when trying again may work (`is_retryable`), else `INTERNAL`.
/// Every value it repeats is the caller's, so the message is cut to [`MESSAGE_CHARS`].
pub(crate) fn status_of(e: &TaskhubError) -> Status {
    let message = bounded_message(&e.to_string());
    match e {
        TaskhubError::Invalid(_)
        | TaskhubError::InvalidTag { .. }
        | TaskhubError::Storage(StorageError::InvalidArgument(_) | StorageError::TooLarge { .. }) => {
            Status::invalid_argument(message)
        }
        TaskhubError::NotFound(_) | TaskhubError::ExecutionNotFound { .. } => {
            Status::not_found(message)
        }
        TaskhubError::AlreadyExists { .. } => Status::already_exists(message),
        TaskhubError::WrongStatus { .. } => Status::failed_precondition(message),
        TaskhubError::Timeout(..) => Status::deadline_exceeded(message),
        _ if e.is_retryable() => Status::unavailable(message),
        TaskhubError::Stopped => Status::unavailable(message),
        _ => Status::internal(message),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use taskhub::{InstanceId, OrchestrationStatus};
    use taskhub_storage::StorageError;
    use tonic::Code;

    #[test]
    fn client_errors_map_to_the_codes_the_sdks_act_on() {
        let id = InstanceId::new("i").unwrap();
        let code = |e: TaskhubError| status_of(&e).code();
        assert_eq!(code(TaskhubError::NotFound(id.clone())), Code::NotFound);
        assert_eq!(
            code(TaskhubError::AlreadyExists {
                instance_id: id.clone(),
                status: OrchestrationStatus::Running
            }),
            Code::AlreadyExists
        );
        assert_eq!(
            code(TaskhubError::WrongStatus {
                instance_id: id.clone(),
                status: OrchestrationStatus::Running,
                operation: "purge"
            }),
            Code::FailedPrecondition
        );
        assert_eq!(
            code(TaskhubError::Timeout(std::time::Duration::from_secs(1), id)),
            Code::DeadlineExceeded
        );
        assert_eq!(
            code(TaskhubError::InvalidTag {
                key: "k".into(),
                reason: "r".into()
            }),
            Code::InvalidArgument
        );
    }

    #[test]
    fn storage_errors_split_by_retryability() {
        let busy = StorageError::Unavailable("connection reset".into());
        let broken = StorageError::Backend("bad row".into());
        assert!(busy.is_retryable() && !broken.is_retryable());
        assert_eq!(status_of(&busy.into()).code(), Code::Unavailable);
        assert_eq!(status_of(&broken.into()).code(), Code::Internal);
    }
}
