//! JSON payloads on the command line: inline text, `@path` (a file) or `-` (standard input).
//!
//! A single command-line argument is limited by the OS (128 KiB on Linux), so larger inputs of
//! `instances start` and event data of `instances raise` come from a file or standard input.

use std::io::Read as _;
use std::path::PathBuf;

use taskhub::Payload;

/// Where a JSON argument's text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonSource {
    /// The argument itself is the JSON text.
    Inline(String),
    /// `@path`: the file's contents.
    File(PathBuf),
    /// `-`: everything on standard input.
    Stdin,
}

impl JsonSource {
    /// Reads an argument: `-` is standard input, `@path` a file, anything else inline JSON.
    #[must_use]
    pub fn parse(arg: &str) -> Self {
        if arg == "-" {
            Self::Stdin
        } else if let Some(path) = arg.strip_prefix('@') {
            Self::File(PathBuf::from(path))
        } else {
            Self::Inline(arg.to_owned())
        }
    }
}

/// Why a JSON argument could not be used. Each names where the text came from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonInputError {
    /// `@path` named a file that could not be read.
    #[error("cannot read {what} from file '{}': {source}", path.display())]
    ReadFile {
        /// What the JSON is for ("the input", "the event data").
        what: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `@path` named a file whose contents are not JSON.
    #[error("{what} in file '{}' is not valid JSON: {detail}", path.display())]
    FileNotJson {
        /// What the JSON is for.
        what: String,
        /// The file.
        path: PathBuf,
        /// The parser's explanation (line and column).
        detail: String,
    },
    /// `-` and standard input could not be read.
    #[error("cannot read {what} from standard input: {source}")]
    ReadStdin {
        /// What the JSON is for.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `-` and standard input held no valid JSON.
    #[error("{what} from standard input is not valid JSON: {detail}")]
    StdinNotJson {
        /// What the JSON is for.
        what: String,
        /// The parser's explanation.
        detail: String,
    },
    /// The inline argument is not JSON.
    #[error("{what} is not valid JSON: {text}: {detail}")]
    InlineNotJson {
        /// What the JSON is for.
        what: String,
        /// The argument (shortened if long).
        text: String,
        /// The parser's explanation.
        detail: String,
    },
}

/// The JSON payload of an optional argument (`null` if absent), from wherever it points.
///
/// # Errors
/// A [`JsonInputError`] naming the file, standard input or the argument.
pub fn read_json(arg: Option<&str>, what: &str) -> Result<Payload, JsonInputError> {
    let arg = arg.unwrap_or("null");
    let what = what.to_owned();
    match JsonSource::parse(arg) {
        JsonSource::Inline(text) => {
            parse(text.clone()).map_err(|detail| JsonInputError::InlineNotJson {
                what,
                text: shorten(&text),
                detail,
            })
        }
        JsonSource::File(path) => match std::fs::read_to_string(&path) {
            Ok(text) => {
                parse(text).map_err(|detail| JsonInputError::FileNotJson { what, path, detail })
            }
            Err(source) => Err(JsonInputError::ReadFile { what, path, source }),
        },
        JsonSource::Stdin => {
            let mut text = String::new();
            match std::io::stdin().read_to_string(&mut text) {
                Ok(_) => {
                    parse(text).map_err(|detail| JsonInputError::StdinNotJson { what, detail })
                }
                Err(source) => Err(JsonInputError::ReadStdin { what, source }),
            }
        }
    }
}

fn parse(text: String) -> Result<Payload, String> {
    // The parser's own message ("expected value at line 1 column 2"), without the wrapper's.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&text) {
        return Err(e.to_string());
    }
    Payload::from_json(text).map_err(|e| e.to_string())
}

/// An inline argument as shown in an error: at most 200 characters.
fn shorten(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_their_source() {
        assert_eq!(JsonSource::parse("-"), JsonSource::Stdin);
        assert_eq!(
            JsonSource::parse("@in/put.json"),
            JsonSource::File(PathBuf::from("in/put.json"))
        );
        assert_eq!(
            JsonSource::parse("{\"a\":1}"),
            JsonSource::Inline("{\"a\":1}".into())
        );
        assert_eq!(
            read_json(None, "the input")
                .ok()
                .map(|p| p.as_str().to_owned()),
            Some("null".into())
        );
        let e = read_json(Some("@/nonexistent/x.json"), "the input").err();
        let shown = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            shown.starts_with("cannot read the input from file '/nonexistent/x.json': "),
            "{shown}"
        );
        let long = "x".repeat(500);
        let shown = read_json(Some(&long), "the input")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(shown.contains("… (500 bytes)"), "{shown}");
    }
}
