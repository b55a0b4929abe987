//! Instance tags: their limits, checked before anything is written, and the `KEY=VALUE` form
//! of the CLI's and the HTTP API's tag filters.

use taskhub_storage::Tags;

use crate::error::TaskhubError;

/// The most tags an instance carries.
pub const MAX_TAGS: usize = 32;
/// The longest tag key, in characters.
pub const MAX_TAG_KEY_CHARS: usize = 64;
/// The longest tag value, in characters.
pub const MAX_TAG_VALUE_CHARS: usize = 256;

/// The error, with the key cut to a little over [`MAX_TAG_KEY_CHARS`] (the caller's key may be
/// 100 KB; an error that repeated it whole could not be sent back in a gRPC status).
fn bad(key: &str, reason: impl Into<String>) -> TaskhubError {
    let shown: String = key.chars().take(MAX_TAG_KEY_CHARS + 1).collect();
    let key = if shown.len() < key.len() {
        format!("{shown}… ({} bytes)", key.len())
    } else {
        shown
    };
    TaskhubError::InvalidTag {
        key,
        reason: reason.into(),
    }
}

/// Checks one tag: a key of 1 to [`MAX_TAG_KEY_CHARS`] ASCII letters, digits and `_ - . : /`;
/// a value of at most [`MAX_TAG_VALUE_CHARS`] characters, none of them a control character.
///
/// # Errors
/// [`TaskhubError::InvalidTag`] naming the key and what is wrong.
pub fn validate_tag(key: &str, value: &str) -> Result<(), TaskhubError> {
    if key.is_empty() {
        return Err(bad(key, "the key is empty"));
    }
    if key.chars().count() > MAX_TAG_KEY_CHARS {
        return Err(bad(
            key,
            format!("the key is longer than {MAX_TAG_KEY_CHARS} characters"),
        ));
    }
    if let Some(c) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-.:/".contains(*c)))
    {
        return Err(bad(
            key,
            format!("the key holds {c:?}: use ASCII letters, digits and _ - . : /"),
        ));
    }
    if value.chars().count() > MAX_TAG_VALUE_CHARS {
        return Err(bad(
            key,
            format!("the value is longer than {MAX_TAG_VALUE_CHARS} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(bad(key, "the value holds a control character"));
    }
    Ok(())
}

/// Checks a start's tags: at most [`MAX_TAGS`], each as [`validate_tag`] says.
///
/// # Errors
/// [`TaskhubError::InvalidTag`] for the first bad tag.
pub fn validate_tags(tags: &Tags) -> Result<(), TaskhubError> {
    if tags.len() > MAX_TAGS {
        let key = tags.keys().nth(MAX_TAGS).cloned().unwrap_or_default();
        return Err(bad(
            &key,
            format!(
                "{} tags: an instance carries at most {MAX_TAGS}",
                tags.len()
            ),
        ));
    }
    tags.iter().try_for_each(|(k, v)| validate_tag(k, v))
}

/// Parses `KEY=VALUE` (the value may hold `=`; it may be empty) and checks it.
///
/// # Errors
/// [`TaskhubError::InvalidTag`] without `=` or for a bad key or value.
pub fn parse_tag(text: &str) -> Result<(String, String), TaskhubError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| bad(text, "expected KEY=VALUE"))?;
    validate_tag(key, value)?;
    Ok((key.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_huge_key_is_not_repeated_whole_in_the_error() {
        let key = "k".repeat(100_000);
        let e = super::validate_tag(&key, "v").unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("100000 bytes"), "{}", e.len());
    }

    use super::*;

    #[test]
    fn tags_within_limits_pass_and_others_are_typed_errors() {
        let ok: Tags = [("team", "payments"), ("region", "eu-west/1"), ("empty", "")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        validate_tags(&ok).unwrap();
        for (key, value, why) in [
            ("", "x", "empty"),
            ("has space", "x", "' '"),
            ("caf\u{e9}", "x", "'é'"),
            (&"k".repeat(65)[..], "x", "longer than 64"),
            ("k", &"v".repeat(257)[..], "longer than 256"),
            ("k", "line\nbreak", "control"),
        ] {
            let err = validate_tag(key, value).unwrap_err();
            assert!(matches!(err, TaskhubError::InvalidTag { .. }), "{err}");
            assert!(err.to_string().contains(why), "{err}");
        }
        let many: Tags = (0..33).map(|i| (format!("k{i}"), String::new())).collect();
        assert!(validate_tags(&many)
            .unwrap_err()
            .to_string()
            .contains("at most 32"));
        assert_eq!(
            parse_tag("env=a=b").unwrap(),
            ("env".to_owned(), "a=b".to_owned())
        );
        assert!(parse_tag("no-equals").is_err());
    }
}
