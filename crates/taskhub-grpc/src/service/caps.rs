//! Caps on what one client call may name: orchestration, event and operation names and
//! versions are stored in every instance row and history event, so a 100 KB name would be
//! copied into each of them. A call over a cap is refused with `INVALID_ARGUMENT` naming the
//! field and the cap. (Tags are capped by the runtime for every surface, by the hub's settings
//! `max_tags`, `max_tag_key_chars`, `max_tag_value_chars`: `taskhub::client::tags`.)

use tonic::Status;

use crate::error::invalid;

/// The caps of client calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestCaps {
    /// The longest orchestration, event or operation name, and the longest version, in
    /// UTF-8 bytes. Default 1,024.
    pub max_name_bytes: usize,
}

impl Default for RequestCaps {
    fn default() -> Self {
        Self {
            max_name_bytes: 1_024,
        }
    }
}

impl RequestCaps {
    /// Refuses a name or version longer than [`RequestCaps::max_name_bytes`].
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming `field` and the cap.
    pub(crate) fn name(&self, value: &str, field: &str) -> Result<(), Status> {
        if value.len() <= self.max_name_bytes {
            return Ok(());
        }
        Err(invalid(
            field,
            format!(
                "{} bytes, over the cap of {} bytes (grpc_max_name_bytes)",
                value.len(),
                self.max_name_bytes
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn a_name_over_the_cap_is_refused_naming_the_field_and_the_cap() {
        let caps = RequestCaps { max_name_bytes: 8 };
        assert!(caps.name("12345678", "name").is_ok());
        let e = caps.name("123456789", "version").unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(
            e.message().contains("version") && e.message().contains("grpc_max_name_bytes"),
            "{}",
            e.message()
        );
    }
}
