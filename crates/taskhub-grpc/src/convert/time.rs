//! Timestamps: Taskhub's milliseconds since the Unix epoch ↔ `google.protobuf.Timestamp`.

use taskhub::Timestamp;

use super::ConvertError;

/// A Taskhub timestamp as a protocol timestamp.
#[must_use]
pub fn timestamp_to_proto(t: Timestamp) -> prost_types::Timestamp {
    let ms = t.as_millis();
    prost_types::Timestamp {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        // Below 1,000,000,000: fits.
        nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
    }
}

/// The last second `google.protobuf.Timestamp` allows: 9999-12-31T23:59:59Z.
const LATEST_SECONDS: u64 = 253_402_300_799;

/// A protocol timestamp as a Taskhub one (milliseconds: finer digits are dropped).
///
/// # Errors
/// [`ConvertError::Field`] (named `field`) for a time before 1970 or after 9999.
pub fn timestamp_from_proto(
    t: &prost_types::Timestamp,
    field: &'static str,
) -> Result<Timestamp, ConvertError> {
    let mut t = *t;
    t.normalize();
    let seconds = u64::try_from(t.seconds)
        .map_err(|_| ConvertError::field(field, "a time before 1970-01-01"))?;
    if seconds > LATEST_SECONDS {
        return Err(ConvertError::field(
            field,
            "a time after 9999-12-31T23:59:59Z, outside google.protobuf.Timestamp's range",
        ));
    }
    let millis = seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(u64::try_from(t.nanos / 1_000_000).unwrap_or(0)))
        .ok_or_else(|| ConvertError::field(field, "a time out of range"))?;
    Ok(Timestamp::from_millis(millis))
}

/// [`timestamp_from_proto`] of a time the message may leave out (`None` stays `None`).
///
/// # Errors
/// As [`timestamp_from_proto`].
pub fn optional_timestamp_from_proto(
    t: Option<&prost_types::Timestamp>,
    field: &'static str,
) -> Result<Option<Timestamp>, ConvertError> {
    t.map(|t| timestamp_from_proto(t, field)).transpose()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn refuses_times_after_the_year_9999_naming_the_field() {
        let last = prost_types::Timestamp {
            seconds: 253_402_300_799,
            nanos: 0,
        };
        assert!(timestamp_from_proto(&last, "x").is_ok());
        let past = prost_types::Timestamp {
            seconds: 253_402_300_800,
            nanos: 0,
        };
        let e = timestamp_from_proto(&past, "scheduledStartTimestamp").unwrap_err();
        assert!(e.to_string().contains("scheduledStartTimestamp"), "{e}");
    }

    #[test]
    fn round_trips_milliseconds() {
        let t = Timestamp::from_millis(1_700_000_000_123);
        let p = timestamp_to_proto(t);
        assert_eq!((p.seconds, p.nanos), (1_700_000_000, 123_000_000));
        assert_eq!(timestamp_from_proto(&p, "x").unwrap(), t);
    }

    #[test]
    fn drops_sub_millisecond_digits_and_refuses_times_before_1970() {
        let p = prost_types::Timestamp {
            seconds: 5,
            nanos: 999_999,
        };
        assert_eq!(timestamp_from_proto(&p, "x").unwrap().as_millis(), 5000);
        let before = prost_types::Timestamp {
            seconds: -1,
            nanos: 0,
        };
        let e = timestamp_from_proto(&before, "fireAt").unwrap_err();
        assert_eq!(e.field_name(), Some("fireAt"));
    }
}
