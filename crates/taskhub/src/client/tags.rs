//! Instance tags: their caps (the hub's settings `max_tags`, `max_tag_key_chars`,
//! `max_tag_value_chars`: [`TagCaps`]), checked before anything is written, and the
//! `KEY=VALUE` form of the CLI's and the HTTP API's tag filters.
//!
//! The caps may be raised up to bounds every backend can store, checked when the settings are
//! validated (at load and at `TaskHub::open`): Azure Table's are the tightest (a property name
//! of at most 255 characters, a property of at most 64 KiB, at most 252 properties and 1 MiB
//! per entity; each tag is a property of the instance's row, named `Tag_` and the key in hex),
//! and they apply on every backend so that one hub's settings work on each.

use taskhub_storage::Tags;

use crate::error::TaskhubError;
use crate::settings::Settings;

/// The default of `max_tags`: the most tags an instance carries.
pub const DEFAULT_MAX_TAGS: usize = 32;
/// The default of `max_tag_key_chars`: the longest tag key, in characters.
pub const DEFAULT_MAX_TAG_KEY_CHARS: usize = 64;
/// The default of `max_tag_value_chars`: the longest tag value, in characters.
pub const DEFAULT_MAX_TAG_VALUE_CHARS: usize = 256;

/// The highest `max_tags`: an Azure entity holds at most 252 properties of its own, the
/// instance row uses 7 besides its tags; the rest is left for columns to come.
pub const TAGS_BOUND: usize = 200;
/// The highest `max_tag_key_chars`: an Azure property name is at most 255 characters, and a
/// tag's is `Tag_` and the key's bytes in hex (a key is ASCII).
pub const TAG_KEY_CHARS_BOUND: usize = 125;
/// The highest `max_tag_value_chars`: an Azure string property is at most 64 KiB of UTF-16,
/// and a character outside the BMP takes 4 bytes.
pub const TAG_VALUE_CHARS_BOUND: usize = 16_384;
/// The most bytes the tags of one instance row may take at the caps, as Azure counts an
/// entity's size (a property: its name in UTF-16 plus 8 bytes, a string value in UTF-16 plus
/// 4 bytes): an entity is at most 1 MiB, and 256 KiB are left for the row's other columns
/// (its `Data`, inline up to 30,000 bytes, the name, the instance ID, the times).
pub const TAGS_ROW_BYTES_BOUND: usize = 768 * 1024;

/// How many characters of a bad key an error repeats (the caller's key may be 100 KB; an
/// error that repeated it whole could not be sent back in a gRPC status).
const SHOWN_KEY_CHARS: usize = 120;

/// The caps on an instance's tags: the hub's settings ([`Settings::tag_caps`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagCaps {
    /// The most tags an instance carries (`max_tags`).
    pub max_tags: usize,
    /// The longest tag key, in characters (`max_tag_key_chars`).
    pub max_key_chars: usize,
    /// The longest tag value, in characters (`max_tag_value_chars`).
    pub max_value_chars: usize,
}

impl Default for TagCaps {
    fn default() -> Self {
        Self {
            max_tags: DEFAULT_MAX_TAGS,
            max_key_chars: DEFAULT_MAX_TAG_KEY_CHARS,
            max_value_chars: DEFAULT_MAX_TAG_VALUE_CHARS,
        }
    }
}

impl TagCaps {
    /// The caps of `settings`.
    #[must_use]
    pub fn of(settings: &Settings) -> Self {
        Self {
            max_tags: settings.max_tags,
            max_key_chars: settings.max_tag_key_chars,
            max_value_chars: settings.max_tag_value_chars,
        }
    }

    /// The most bytes one tag at these caps takes in an Azure entity (see
    /// [`TAGS_ROW_BYTES_BOUND`]).
    #[must_use]
    pub fn tag_row_bytes(&self) -> usize {
        // Name: `Tag_` and two hex digits per key byte, in UTF-16, plus 8; value: at most two
        // UTF-16 units per character, plus 4.
        let name = 2 * (4 + 2 * self.max_key_chars) + 8;
        let value = 4 * self.max_value_chars + 4;
        name + value
    }

    /// Checks the caps against the bounds every backend can store.
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] naming the setting over its bound and the bound.
    pub fn check_bounds(&self) -> Result<(), TaskhubError> {
        let bad = |name: &str, reason: String| {
            Err(TaskhubError::InvalidSetting {
                name: name.to_owned(),
                reason,
            })
        };
        if self.max_tags > TAGS_BOUND {
            return bad(
                "max_tags",
                format!("must be at most {TAGS_BOUND} (an Azure entity holds at most 252 properties, a tag is one)"),
            );
        }
        if self.max_key_chars == 0 || self.max_key_chars > TAG_KEY_CHARS_BOUND {
            return bad(
                "max_tag_key_chars",
                format!("must be 1 to {TAG_KEY_CHARS_BOUND} (an Azure property name is at most 255 characters: Tag_ and the key in hex)"),
            );
        }
        if self.max_value_chars > TAG_VALUE_CHARS_BOUND {
            return bad(
                "max_tag_value_chars",
                format!("must be at most {TAG_VALUE_CHARS_BOUND} (an Azure property is at most 64 KiB of UTF-16)"),
            );
        }
        let total = self.max_tags.saturating_mul(self.tag_row_bytes());
        if total > TAGS_ROW_BYTES_BOUND {
            return bad(
                "max_tags",
                format!(
                    "{} tags of up to {} bytes each (max_tag_key_chars {}, max_tag_value_chars {}) take up to {total} bytes of an instance row, over the bound of {TAGS_ROW_BYTES_BOUND} (an Azure entity is at most 1 MiB): lower one of the three",
                    self.max_tags,
                    self.tag_row_bytes(),
                    self.max_key_chars,
                    self.max_value_chars
                ),
            );
        }
        Ok(())
    }
}

/// The error, with the key cut to a little over [`SHOWN_KEY_CHARS`].
fn bad(key: &str, reason: impl Into<String>) -> TaskhubError {
    let shown: String = key.chars().take(SHOWN_KEY_CHARS + 1).collect();
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

/// Checks one tag: a key of 1 to `caps.max_key_chars` ASCII letters, digits and `_ - . : /`;
/// a value of at most `caps.max_value_chars` characters, none of them a control character.
///
/// # Errors
/// [`TaskhubError::InvalidTag`] naming the key and what is wrong (and the cap's setting).
pub fn validate_tag(key: &str, value: &str, caps: &TagCaps) -> Result<(), TaskhubError> {
    if key.is_empty() {
        return Err(bad(key, "the key is empty"));
    }
    if key.chars().count() > caps.max_key_chars {
        return Err(bad(
            key,
            format!(
                "the key is longer than {} characters (max_tag_key_chars)",
                caps.max_key_chars
            ),
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
    if value.chars().count() > caps.max_value_chars {
        return Err(bad(
            key,
            format!(
                "the value is longer than {} characters (max_tag_value_chars)",
                caps.max_value_chars
            ),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(bad(key, "the value holds a control character"));
    }
    Ok(())
}

/// Checks a start's tags: at most `caps.max_tags`, each as [`validate_tag`] says.
///
/// # Errors
/// [`TaskhubError::InvalidTag`] for the first bad tag (for too many: the first past the cap).
pub fn validate_tags(tags: &Tags, caps: &TagCaps) -> Result<(), TaskhubError> {
    if tags.len() > caps.max_tags {
        let key = tags.keys().nth(caps.max_tags).cloned().unwrap_or_default();
        return Err(bad(
            &key,
            format!(
                "{} tags, more than {} (max_tags)",
                tags.len(),
                caps.max_tags
            ),
        ));
    }
    tags.iter().try_for_each(|(k, v)| validate_tag(k, v, caps))
}

/// Parses `KEY=VALUE` (the value may hold `=`; it may be empty) and checks it against `caps`.
///
/// # Errors
/// [`TaskhubError::InvalidTag`] without `=` or for a bad key or value.
pub fn parse_tag(text: &str, caps: &TagCaps) -> Result<(String, String), TaskhubError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| bad(text, "expected KEY=VALUE"))?;
    validate_tag(key, value, caps)?;
    Ok((key.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_key_is_not_repeated_whole_in_the_error() {
        let key = "k".repeat(100_000);
        let e = validate_tag(&key, "v", &TagCaps::default())
            .unwrap_err()
            .to_string();
        assert!(e.len() < 300 && e.contains("100000 bytes"), "{}", e.len());
    }

    #[test]
    fn tags_within_limits_pass_and_others_are_typed_errors() {
        let caps = TagCaps::default();
        let ok: Tags = [("team", "payments"), ("region", "eu-west/1"), ("empty", "")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        validate_tags(&ok, &caps).unwrap();
        for (key, value, why) in [
            ("", "x", "empty"),
            ("has space", "x", "' '"),
            ("caf\u{e9}", "x", "'é'"),
            (
                &"k".repeat(65)[..],
                "x",
                "longer than 64 characters (max_tag_key_chars)",
            ),
            (
                "k",
                &"v".repeat(257)[..],
                "longer than 256 characters (max_tag_value_chars)",
            ),
            ("k", "line\nbreak", "control"),
        ] {
            let err = validate_tag(key, value, &caps).unwrap_err();
            assert!(matches!(err, TaskhubError::InvalidTag { .. }), "{err}");
            assert!(err.to_string().contains(why), "{err}");
        }
        let many: Tags = (0..33).map(|i| (format!("k{i}"), String::new())).collect();
        assert!(validate_tags(&many, &caps)
            .unwrap_err()
            .to_string()
            .contains("33 tags, more than 32 (max_tags)"));
        assert_eq!(
            parse_tag("env=a=b", &caps).unwrap(),
            ("env".to_owned(), "a=b".to_owned())
        );
        assert!(parse_tag("no-equals", &caps).is_err());
    }

    #[test]
    fn other_caps_are_applied_and_named() {
        let caps = TagCaps {
            max_tags: 2,
            max_key_chars: 3,
            max_value_chars: 4,
        };
        let three: Tags = (0..3).map(|i| (format!("k{i}"), String::new())).collect();
        let e = validate_tags(&three, &caps).unwrap_err().to_string();
        assert!(e.contains("3 tags, more than 2 (max_tags)"), "{e}");
        let e = parse_tag("abcd=v", &caps).unwrap_err().to_string();
        assert!(
            e.contains("longer than 3 characters (max_tag_key_chars)"),
            "{e}"
        );
        let e = parse_tag("abc=vvvvv", &caps).unwrap_err().to_string();
        assert!(
            e.contains("longer than 4 characters (max_tag_value_chars)"),
            "{e}"
        );
        parse_tag("abc=vvvv", &caps).unwrap();
        // A raised cap lets through what the default refuses.
        let wide = TagCaps {
            max_key_chars: 100,
            ..TagCaps::default()
        };
        validate_tag(&"k".repeat(100), "v", &wide).unwrap();
    }

    #[test]
    fn caps_beyond_what_azure_stores_are_refused_naming_the_bound() {
        TagCaps::default().check_bounds().unwrap();
        // Each cap past its bound, and a combination past the row bound.
        for (caps, name, bound) in [
            (
                TagCaps {
                    max_tags: TAGS_BOUND + 1,
                    ..TagCaps::default()
                },
                "max_tags",
                "at most 200",
            ),
            (
                TagCaps {
                    max_key_chars: TAG_KEY_CHARS_BOUND + 1,
                    ..TagCaps::default()
                },
                "max_tag_key_chars",
                "1 to 125",
            ),
            (
                TagCaps {
                    max_key_chars: 0,
                    ..TagCaps::default()
                },
                "max_tag_key_chars",
                "1 to 125",
            ),
            (
                TagCaps {
                    max_value_chars: TAG_VALUE_CHARS_BOUND + 1,
                    ..TagCaps::default()
                },
                "max_tag_value_chars",
                "at most 16384",
            ),
            (
                TagCaps {
                    max_value_chars: TAG_VALUE_CHARS_BOUND,
                    ..TagCaps::default()
                },
                "max_tags",
                "over the bound of 786432",
            ),
        ] {
            match caps.check_bounds() {
                Err(TaskhubError::InvalidSetting { name: got, reason }) => {
                    assert_eq!(got, name, "{caps:?}: {reason}");
                    assert!(reason.contains(bound), "{caps:?}: {reason}");
                }
                other => panic!("{caps:?}: {other:?}"),
            }
        }
        // At the bounds, in combinations that fit a row.
        for caps in [
            TagCaps {
                max_tags: TAGS_BOUND,
                ..TagCaps::default()
            },
            TagCaps {
                max_key_chars: TAG_KEY_CHARS_BOUND,
                ..TagCaps::default()
            },
            TagCaps {
                max_tags: 8,
                max_key_chars: TAG_KEY_CHARS_BOUND,
                max_value_chars: TAG_VALUE_CHARS_BOUND,
            },
            TagCaps {
                max_tags: 0,
                ..TagCaps::default()
            },
        ] {
            caps.check_bounds()
                .unwrap_or_else(|e| panic!("{caps:?}: {e}"));
        }
    }
}
