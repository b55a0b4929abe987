//! The `taskhub` metadata: the hub a call is meant for. The Durable Task SDKs send it (the
//! Durable Task Scheduler routes by it); this endpoint serves one hub, so a call that names
//! another is refused with `NOT_FOUND` naming both, before it reaches any service, and above all
//! before a destructive one (`DeleteTaskHub`, purges, terminations) could act on the wrong hub.
//! A call without the metadata (or with it empty) is for the served hub. Names compare without
//! regard to ASCII case, as the backends' storage names do (Azure's queue and table names).

use std::sync::Arc;

use tonic::metadata::MetadataMap;
use tonic::Status;

use crate::error::bounded;

/// The metadata key.
pub const TASKHUB_METADATA: &str = "taskhub";

/// The check of a call's `taskhub` metadata against the served hub.
#[derive(Clone, Debug)]
pub(crate) struct HubName {
    served: Arc<str>,
}

impl HubName {
    /// For a server of the hub `served`.
    pub(crate) fn new(served: &str) -> Self {
        Self {
            served: Arc::from(served),
        }
    }

    /// Lets a call for the served hub (or one that names none) through.
    ///
    /// # Errors
    /// `NOT_FOUND` naming both hubs for a call that names another one; `INVALID_ARGUMENT` for
    /// a value that is not text.
    pub(crate) fn check(&self, metadata: &MetadataMap) -> Result<(), Status> {
        let Some(value) = metadata.get(TASKHUB_METADATA) else {
            return Ok(());
        };
        let named = value.to_str().map_err(|_| {
            Status::invalid_argument("metadata `taskhub`: not printable ASCII text")
        })?;
        let named = named.trim();
        if named.is_empty() || named.eq_ignore_ascii_case(&self.served) {
            return Ok(());
        }
        Err(Status::not_found(format!(
            "task hub {:?} is not served here: this endpoint serves the task hub {:?} \
             (the call's `taskhub` metadata names the hub it is meant for)",
            bounded(named),
            &*self.served
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use tonic::Code;

    fn with(value: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert(TASKHUB_METADATA, value.parse().unwrap());
        m
    }

    #[test]
    fn a_call_for_another_hub_is_refused_naming_both() {
        let hub = HubName::new("OurHub");
        let e = hub.check(&with("OtherHub")).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert!(
            e.message().contains("\"OtherHub\"") && e.message().contains("\"OurHub\""),
            "{}",
            e.message()
        );
    }

    #[test]
    fn the_served_hub_in_any_case_or_none_is_let_through() {
        let hub = HubName::new("OurHub");
        assert!(hub.check(&MetadataMap::new()).is_ok());
        assert!(hub.check(&with("")).is_ok());
        assert!(hub.check(&with("OurHub")).is_ok());
        assert!(hub.check(&with("ourhub")).is_ok());
    }

    #[test]
    fn a_long_foreign_name_is_cut_in_the_message() {
        let hub = HubName::new("OurHub");
        let long = "x".repeat(10_000);
        let e = hub.check(&with(&long)).unwrap_err();
        assert!(e.message().len() < 500, "{}", e.message().len());
    }
}
