//! Failures: Taskhub's `FailureDetails` ↔ `TaskFailureDetails`. Taskhub's `details` is the
//! protocol's stack trace; an inner failure, which Taskhub has no place for, is appended to
//! the details as text.

use taskhub::FailureDetails;

use crate::proto::TaskFailureDetails;

/// Taskhub's failure as the protocol's.
#[must_use]
pub fn failure_to_proto(f: &FailureDetails) -> TaskFailureDetails {
    TaskFailureDetails {
        error_type: f.error_type.clone(),
        error_message: f.message.clone(),
        stack_trace: f.details.clone(),
        inner_failure: None,
        is_non_retriable: f.non_retryable,
        properties: std::collections::HashMap::new(),
    }
}

/// The protocol's failure as Taskhub's.
#[must_use]
pub fn failure_from_proto(f: &TaskFailureDetails) -> FailureDetails {
    let mut details = f.stack_trace.clone().filter(|s| !s.is_empty());
    if let Some(inner) = &f.inner_failure {
        let inner = failure_from_proto(inner);
        let text = format!(
            "caused by {inner}{}",
            inner
                .details
                .as_ref()
                .map(|d| format!("\n{d}"))
                .unwrap_or_default()
        );
        details = Some(match details {
            Some(d) => format!("{d}\n{text}"),
            None => text,
        });
    }
    FailureDetails {
        error_type: f.error_type.clone(),
        message: f.error_message.clone(),
        details,
        non_retryable: f.is_non_retriable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_an_inner_failure_as_text() {
        let f = FailureDetails {
            error_type: "ValueError".into(),
            message: "Kah-BOOOOM!!!".into(),
            details: Some("at line 3".into()),
            non_retryable: true,
        };
        assert_eq!(failure_from_proto(&failure_to_proto(&f)), f);
        let mut p = failure_to_proto(&f);
        p.inner_failure = Some(Box::new(TaskFailureDetails {
            error_type: "IOError".into(),
            error_message: "disk".into(),
            ..TaskFailureDetails::default()
        }));
        let back = failure_from_proto(&p);
        assert_eq!(
            back.details.as_deref(),
            Some("at line 3\ncaused by IOError: disk")
        );
    }
}
