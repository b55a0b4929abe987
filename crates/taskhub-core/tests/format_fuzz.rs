//! Stored data that does not decode is a typed error naming what it is, never a panic
//! (invariant 6): random bytes and strings, and mutations of valid encodings (the golden
//! files), fed to the history-event and message decoders. Bounded: a few thousand cases,
//! seconds in a normal test run.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

use proptest::prelude::*;
use taskhub_core::format::{decode_event, decode_message, encode_event, encode_message};
use taskhub_core::CoreError;

const HISTORY: &str = include_str!("golden/history_v1.jsonl");
const MESSAGES: &str = include_str!("golden/messages_v1.jsonl");

fn lines(text: &'static str) -> Vec<&'static str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// A decode error must be one of the two format errors, naming the kind of record.
fn check_error(err: &CoreError, what: &str) {
    match err {
        CoreError::Malformed { what: w, detail } => {
            assert_eq!(*w, what);
            assert!(!detail.is_empty());
        }
        CoreError::UnsupportedFormatVersion { what: w, found, .. } => {
            assert_eq!(*w, what);
            assert_ne!(*found, 1);
        }
        other => panic!("unexpected error kind for a {what}: {other:?}"),
    }
    assert!(err.to_string().contains(what), "{err}");
}

/// Decodes `text` both ways; whatever decodes must encode and decode to the same value.
fn decode_both(text: &str) {
    match decode_event(text) {
        Ok(event) => assert_eq!(decode_event(&encode_event(&event)).unwrap(), event),
        Err(e) => check_error(&e, "history event"),
    }
    match decode_message(text) {
        Ok(message) => assert_eq!(decode_message(&encode_message(&message)).unwrap(), message),
        Err(e) => check_error(&e, "message"),
    }
}

/// Ways to damage a valid record.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    FlipByte(usize, u8),
    Insert(usize, String),
    Delete(usize, usize),
    Version(u64),
    ReplaceNumber(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
        (
            any::<usize>(),
            prop_oneof![
                Just("{".to_owned()),
                Just("}".to_owned()),
                Just("\"".to_owned()),
                Just("null".to_owned()),
                Just("[]".to_owned()),
                Just("\\u0000".to_owned()),
                Just("\\ud800".to_owned()),
                Just("-1".to_owned()),
                Just("1e999".to_owned()),
                Just("18446744073709551616".to_owned()),
                ".{0,8}",
            ]
        )
            .prop_map(|(i, s)| Mutation::Insert(i, s)),
        (any::<usize>(), 1usize..20).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<u64>().prop_map(Mutation::Version),
        (
            any::<usize>(),
            prop_oneof![
                Just("-5".to_owned()),
                Just("1.5".to_owned()),
                Just("99999999999999999999999".to_owned()),
                Just("\"x\"".to_owned()),
                Just("null".to_owned()),
                Just("{}".to_owned()),
            ]
        )
            .prop_map(|(i, s)| Mutation::ReplaceNumber(i, s)),
    ]
}

/// The byte index at or before `i` (mod len) that starts a character.
fn boundary(text: &str, i: usize) -> usize {
    if text.is_empty() {
        return 0;
    }
    let mut i = i % (text.len() + 1);
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, m: &Mutation) -> String {
    match m {
        Mutation::Truncate(i) => text[..boundary(text, *i)].to_owned(),
        Mutation::FlipByte(i, b) => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let i = i % bytes.len();
                bytes[i] ^= b | 1;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Mutation::Insert(i, s) => {
            let i = boundary(text, *i);
            format!("{}{s}{}", &text[..i], &text[i..])
        }
        Mutation::Delete(i, n) => {
            let a = boundary(text, *i);
            let b = boundary(text, a.saturating_add(*n).min(text.len()));
            format!("{}{}", &text[..a], &text[b.max(a)..])
        }
        Mutation::Version(v) => text.replacen("\"v\":1", &format!("\"v\":{v}"), 1),
        Mutation::ReplaceNumber(k, s) => {
            // Replace the k-th run of digits.
            let runs: Vec<(usize, usize)> = {
                let b = text.as_bytes();
                let mut out = Vec::new();
                let mut i = 0;
                while i < b.len() {
                    if b[i].is_ascii_digit() {
                        let start = i;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                        out.push((start, i));
                    } else {
                        i += 1;
                    }
                }
                out
            };
            if runs.is_empty() {
                return text.to_owned();
            }
            let (a, b) = runs[k % runs.len()];
            format!("{}{s}{}", &text[..a], &text[b..])
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        decode_both(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_strings_never_panic(text in ".{0,200}") {
        decode_both(&text);
    }

    #[test]
    fn json_like_strings_never_panic(text in r#"\{("[a-z_]{1,12}":([0-9]{1,22}|"[^"\\]{0,10}"|null|\{\}|\[\]|-?[0-9]\.[0-9]e[0-9]{1,4}),?){0,6}\}"#) {
        decode_both(&text);
    }

    #[test]
    fn mutated_history_events_never_panic(
        k in any::<usize>(),
        ms in proptest::collection::vec(mutation(), 1..4),
    ) {
        let records = lines(HISTORY);
        let mut text = records[k % records.len()].to_owned();
        for m in &ms {
            text = apply(&text, m);
        }
        decode_both(&text);
    }

    #[test]
    fn mutated_messages_never_panic(
        k in any::<usize>(),
        ms in proptest::collection::vec(mutation(), 1..4),
    ) {
        let records = lines(MESSAGES);
        let mut text = records[k % records.len()].to_owned();
        for m in &ms {
            text = apply(&text, m);
        }
        decode_both(&text);
    }
}

#[test]
fn another_format_version_is_named_as_such() {
    for record in lines(HISTORY) {
        let newer = record.replacen("\"v\":1", "\"v\":2", 1);
        assert!(matches!(
            decode_event(&newer),
            Err(CoreError::UnsupportedFormatVersion {
                found: 2,
                what: "history event",
                ..
            })
        ));
    }
    for record in lines(MESSAGES) {
        let newer = record.replacen("\"v\":1", "\"v\":7", 1);
        assert!(matches!(
            decode_message(&newer),
            Err(CoreError::UnsupportedFormatVersion {
                found: 7,
                what: "message",
                ..
            })
        ));
        let zero = record.replacen("\"v\":1", "\"v\":0", 1);
        assert!(decode_message(&zero).is_err());
    }
}
