//! What can be wrong with a protocol value on its way in.

/// A protocol value Taskhub cannot take, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// A field's value is invalid.
    #[error("{field}: {reason}")]
    Field {
        /// The field, as the protocol names it (e.g. `input`, `timestamp`).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A history event kind Taskhub has no equivalent for.
    #[error("history event kind {0} is not supported by Taskhub")]
    Unsupported(&'static str),
}

impl ConvertError {
    pub(crate) fn field(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Field {
            field,
            reason: reason.into(),
        }
    }

    /// The field named, if any.
    #[must_use]
    pub fn field_name(&self) -> Option<&'static str> {
        match self {
            Self::Field { field, .. } => Some(field),
            Self::Unsupported(_) => None,
        }
    }
}
