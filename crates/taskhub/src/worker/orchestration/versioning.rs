//! The worker's version check (DTFx `VersioningSettings`): before a turn, the instance's
//! version (its start's, or the loaded execution's) is compared with `worker_version` under
//! `version_match`; a mismatch is rejected (the messages go back to the queue, uncounted, for
//! a worker of the right version) or fails the instance, as `version_failure` says.

use std::time::Duration;

use taskhub_core::FailureDetails;

use crate::settings::{Settings, VersionFailure, VersionMatch};

/// How long rejected messages stay invisible before a worker looks at them again.
pub(crate) const REJECT_DELAY: Duration = Duration::from_secs(1);

/// The failure type of an instance failed for its version.
pub const VERSION_MISMATCH: &str = "VersionMismatch";

/// What to do with a turn of an instance of some version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// This worker runs it.
    Run,
    /// Give the messages back for another worker.
    Reject,
    /// Fail the execution with this failure.
    Fail(FailureDetails),
}

/// Judges an instance of orchestration `name` in `version` on a worker with `settings`.
pub(crate) fn judge(settings: &Settings, name: &str, version: Option<&str>) -> Verdict {
    let strategy = settings.version_match;
    if strategy == VersionMatch::None || strategy.accepts(&settings.worker_version, version) {
        return Verdict::Run;
    }
    match settings.version_failure {
        VersionFailure::Reject => Verdict::Reject,
        VersionFailure::Fail => {
            let mut failure = FailureDetails::new(
                VERSION_MISMATCH,
                format!(
                    "orchestration '{name}' version {} does not match this worker's version '{}' (version_match = {strategy})",
                    version.map_or_else(|| "(none)".to_owned(), |v| format!("'{v}'")),
                    settings.worker_version,
                ),
            );
            failure.non_retryable = true;
            Verdict::Fail(failure)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_is_rejected_or_fails_naming_both_versions() {
        let mut s = Settings {
            worker_version: "2.0".into(),
            version_match: VersionMatch::Strict,
            ..Settings::default()
        };
        assert_eq!(judge(&s, "Order", Some("2")), Verdict::Run);
        assert_eq!(judge(&s, "Order", Some("1")), Verdict::Reject);
        s.version_failure = VersionFailure::Fail;
        let Verdict::Fail(f) = judge(&s, "Order", Some("1")) else {
            panic!("not a failure");
        };
        assert_eq!(f.error_type, VERSION_MISMATCH);
        assert!(
            f.message.contains("'1'") && f.message.contains("'2.0'"),
            "{}",
            f.message
        );
        s.version_match = VersionMatch::CurrentOrOlder;
        assert_eq!(judge(&s, "Order", Some("1")), Verdict::Run);
        assert_eq!(judge(&s, "Order", None), Verdict::Run);
        assert!(matches!(judge(&s, "Order", Some("3")), Verdict::Fail(_)));
    }
}
