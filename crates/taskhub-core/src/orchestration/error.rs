//! Errors that orchestration code sees and returns. A failed task is a [`TaskError`], whose
//! `error_type`, `message` and `task_name` code can match on; an orchestration returns an
//! [`OrchestrationError`].

use crate::error::CoreError;
use crate::history::FailureDetails;

/// Why a durable task (activity, sub-orchestration, event wait) did not produce a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The activity or sub-orchestration ran and failed; `failure` is what it reported.
    #[error("{kind} '{name}' failed: {}", failure.message)]
    Failed {
        /// `activity` or `sub-orchestration`.
        kind: &'static str,
        /// The task's name.
        name: String,
        /// The failure as reported by the task.
        failure: FailureDetails,
    },
    /// An input could not be serialized or an output could not be deserialized.
    #[error(transparent)]
    Payload(#[from] CoreError),
}

impl TaskError {
    /// The failure reported by the task, if it ran and failed.
    #[must_use]
    pub fn failure(&self) -> Option<&FailureDetails> {
        match self {
            Self::Failed { failure, .. } => Some(failure),
            Self::Payload(_) => None,
        }
    }

    /// The error type the failing task reported, if it ran and failed: for an activity's
    /// error converted from a Rust error, the short name of its type (`PaymentDeclined` for a
    /// `my_app::PaymentDeclined`); for an [`ActivityError`](crate::ActivityError) or
    /// [`OrchestrationError`] the type set with `with_type` (`ActivityFailed` /
    /// `OrchestrationFailed` by default); for failures the runtime reports, names such as
    /// `Panic`, `ActivityNotFound`, `InvalidInput`, `Terminated`.
    #[must_use]
    pub fn error_type(&self) -> Option<&str> {
        self.failure().map(|f| f.error_type.as_str())
    }

    /// The message the failing task reported, verbatim (without the `activity 'X' failed:`
    /// prefix of this error's `Display`), if it ran and failed.
    #[must_use]
    pub fn message(&self) -> Option<&str> {
        self.failure().map(|f| f.message.as_str())
    }

    /// The name of the activity or sub-orchestration that failed, if it ran and failed.
    #[must_use]
    pub fn task_name(&self) -> Option<&str> {
        match self {
            Self::Failed { name, .. } => Some(name),
            Self::Payload(_) => None,
        }
    }

    /// The details string the failing task attached, if any.
    #[must_use]
    pub fn details(&self) -> Option<&str> {
        self.failure().and_then(|f| f.details.as_deref())
    }

    /// True if the failure was marked non-retryable, or is a payload error (retrying cannot fix it).
    #[must_use]
    pub fn is_non_retryable(&self) -> bool {
        self.failure().is_none_or(|f| f.non_retryable)
    }
}

/// The error an orchestration returns; it fails the instance with its text preserved.
///
/// Any `std::error::Error` converts into it, so `?` works on [`TaskError`] and the user's own
/// errors. The failure's `error_type` is the short name of the error's type — except for a
/// [`TaskError`] whose task ran and failed: passed on with `?`, it keeps that failure's
/// `error_type`, details and non-retryable mark (its message names the task), so a parent's
/// retry predicate sees the root cause of a failed sub-orchestration, and a failure marked
/// non-retryable stays so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrchestrationError {
    failure: FailureDetails,
}

impl OrchestrationError {
    /// An error with a message (error type `OrchestrationFailed`).
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            failure: FailureDetails::new("OrchestrationFailed", message),
        }
    }

    /// The failure that will be recorded.
    #[must_use]
    pub fn failure(&self) -> &FailureDetails {
        &self.failure
    }
}

failure_wrapper!(OrchestrationError);

impl<E: std::error::Error + 'static> From<E> for OrchestrationError {
    fn from(err: E) -> Self {
        let failure = match (&err as &dyn std::any::Any).downcast_ref::<TaskError>() {
            Some(TaskError::Failed { failure, .. }) => FailureDetails {
                message: err.to_string(),
                ..failure.clone()
            },
            Some(TaskError::Payload(_)) => FailureDetails {
                non_retryable: true,
                ..failure_from_error(&err)
            },
            None => failure_from_error(&err),
        };
        Self { failure }
    }
}

/// The methods and `Display` of the errors user code returns, each of which wraps the one
/// [`FailureDetails`] it reports in a field `failure` ([`OrchestrationError`],
/// [`ActivityError`](crate::ActivityError), [`EntityError`](crate::EntityError)); with
/// `from_error`, also the conversion from any `std::error::Error` ([`failure_from_error`]).
macro_rules! failure_wrapper {
    ($error:ty) => {
        impl $error {
            /// Adds details (a serialized payload, a cause chain, ...) for the caller to inspect.
            #[must_use]
            pub fn with_details(mut self, details: impl Into<String>) -> Self {
                self.failure.details = Some(details.into());
                self
            }

            /// Sets the error type name the caller sees.
            #[must_use]
            pub fn with_type(mut self, error_type: impl Into<String>) -> Self {
                self.failure.error_type = error_type.into();
                self
            }

            /// Converts into the failure that will be reported.
            #[must_use]
            pub fn into_failure(self) -> $crate::history::FailureDetails {
                self.failure
            }
        }

        impl std::fmt::Display for $error {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.failure.message)
            }
        }
    };
    ($error:ty, from_error) => {
        $crate::orchestration::error::failure_wrapper!($error);

        impl<E: std::error::Error> From<E> for $error {
            fn from(err: E) -> Self {
                Self {
                    failure: $crate::orchestration::error::failure_from_error(&err),
                }
            }
        }
    };
}
pub(crate) use failure_wrapper;

/// Builds failure details from any error: its text as message, its short type name as type,
/// and its cause chain (if any) as details.
pub(crate) fn failure_from_error<E: std::error::Error + ?Sized>(err: &E) -> FailureDetails {
    let mut details = Vec::new();
    let mut source = err.source();
    while let Some(s) = source {
        details.push(s.to_string());
        source = s.source();
    }
    FailureDetails {
        error_type: short_type_name::<E>(),
        message: err.to_string(),
        details: (!details.is_empty()).then(|| details.join("\ncaused by: ")),
        non_retryable: false,
    }
}

fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_error_converts_with_text() {
        let te = TaskError::Failed {
            kind: "activity",
            name: "Charge".into(),
            failure: FailureDetails::new("ActivityFailed", "card declined"),
        };
        assert_eq!(te.error_type(), Some("ActivityFailed"));
        assert_eq!(te.message(), Some("card declined"));
        assert_eq!(te.task_name(), Some("Charge"));
        let oe: OrchestrationError = te.into();
        assert_eq!(oe.to_string(), "activity 'Charge' failed: card declined");
        // The task's failure type is passed on, not the wrapper's.
        assert_eq!(oe.failure().error_type, "ActivityFailed");
        assert!(!oe.failure().non_retryable);
    }

    #[test]
    fn a_passed_on_task_failure_keeps_its_type_details_and_retry_mark() {
        let mut failure = FailureDetails::new("CardDeclined", "insufficient funds");
        failure.details = Some("card ending 4242".into());
        failure.non_retryable = true;
        let te = TaskError::Failed {
            kind: "activity",
            name: "Charge".into(),
            failure,
        };
        let oe = OrchestrationError::from(te);
        let f = oe.failure();
        assert_eq!(f.error_type, "CardDeclined");
        assert_eq!(f.message, "activity 'Charge' failed: insufficient funds");
        assert_eq!(f.details.as_deref(), Some("card ending 4242"));
        assert!(
            f.non_retryable,
            "a non-retryable failure stays non-retryable"
        );

        // A payload error cannot be fixed by a retry.
        let pe = TaskError::Payload(CoreError::Payload {
            direction: "deserialize",
            what: "Charge".into(),
            detail: "expected u64".into(),
        });
        assert!(OrchestrationError::from(pe).failure().non_retryable);

        // Any other error: its own type name, retryable.
        let io = std::io::Error::other("disk full");
        let f = OrchestrationError::from(io).into_failure();
        assert_eq!(f.error_type, "Error");
        assert!(!f.non_retryable);
    }
}
