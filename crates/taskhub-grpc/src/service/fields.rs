//! Request fields read with the CLI's rules, `INVALID_ARGUMENT` naming the field otherwise.

use taskhub::{EntityId, InstanceId, OrchestrationStatus, Timestamp};
use tonic::Status;

use crate::convert::{optional_timestamp_from_proto, status_from_proto};
use crate::error::{invalid, invalid_value};

/// A required instance ID.
pub(crate) fn instance_id(value: &str, field: &str) -> Result<InstanceId, Status> {
    if value.is_empty() {
        return Err(invalid(field, "required"));
    }
    InstanceId::new(value).map_err(|e| invalid(field, e))
}

/// An entity ID `@name@key`.
pub(crate) fn entity_id(value: &str, field: &str) -> Result<EntityId, Status> {
    if value.is_empty() {
        return Err(invalid(field, "required"));
    }
    EntityId::parse(value).map_err(|e| invalid(field, e))
}

/// A required name.
pub(crate) fn name<'a>(value: &'a str, field: &str) -> Result<&'a str, Status> {
    if value.trim().is_empty() {
        Err(invalid(field, "required"))
    } else {
        Ok(value)
    }
}

/// An optional timestamp.
pub(crate) fn time(
    value: Option<&prost_types::Timestamp>,
    field: &'static str,
) -> Result<Option<Timestamp>, Status> {
    optional_timestamp_from_proto(value, field).map_err(|e| invalid_value(&e))
}

/// A list of statuses. `CANCELED` matches no Taskhub instance and is left out; a number the
/// protocol does not define is refused.
pub(crate) fn statuses(values: &[i32], field: &str) -> Result<Vec<OrchestrationStatus>, Status> {
    let mut out = Vec::with_capacity(values.len());
    for &v in values {
        match status_from_proto(v) {
            Some(s) => out.push(s),
            None if v == crate::proto::OrchestrationStatus::Canceled as i32 => {}
            None => {
                return Err(invalid(
                    field,
                    format!("{v} is not an orchestration status"),
                ))
            }
        }
    }
    Ok(out)
}

/// A page size: `0` (or less) is `default`; more than `max` is `max`.
pub(crate) fn page_size(value: i32, default: usize, max: usize) -> usize {
    usize::try_from(value)
        .ok()
        .filter(|&n| n > 0)
        .map_or(default, |n| n.min(max))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use tonic::Code;

    #[test]
    fn fields_are_named_in_errors() {
        let e = instance_id("", "instanceId").unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (Code::InvalidArgument, "instanceId: required")
        );
        let e = instance_id("a/b", "instanceId").unwrap_err();
        assert!(e.message().starts_with("instanceId: "), "{}", e.message());
        assert!(entity_id("counter", "instanceId").is_err());
        assert_eq!(entity_id("@counter@k", "x").unwrap().name(), "counter");
        let e = statuses(&[1, 99], "runtimeStatus").unwrap_err();
        assert!(
            e.message().starts_with("runtimeStatus: 99"),
            "{}",
            e.message()
        );
        assert_eq!(
            statuses(&[4, 1], "s").unwrap(),
            vec![OrchestrationStatus::Completed]
        );
    }

    #[test]
    fn page_sizes_have_a_default_and_a_cap() {
        assert_eq!(page_size(0, 100, 1000), 100);
        assert_eq!(page_size(-5, 100, 1000), 100);
        assert_eq!(page_size(7, 100, 1000), 7);
        assert_eq!(page_size(i32::MAX, 100, 1000), 1000);
    }
}
