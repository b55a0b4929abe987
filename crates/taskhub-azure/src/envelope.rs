//! The text of a queue message and the receipt of a delivery.
//!
//! Azure Storage counts every delivery in `DequeueCount` and cannot decrement it, but the seam's
//! `release` must return a message without counting the delivery. A released message therefore
//! carries the number of its released deliveries in its own text (Update Message rewrites it):
//! `U+E000 <n> U+E000 <body>`; the dequeue count reported is `DequeueCount - n`. A message that
//! was never released is stored as its body alone, unless the body itself starts with the marker
//! (then it gets a header with `n = 0`, so every text reads back unambiguously).
//!
//! A claimed message (put hidden, held by its sender under the Put's pop receipt) was delivered
//! once without a Get, so `DequeueCount` misses that delivery: it is put with `n = -1`.
//!
//! A receipt holds what a later `release` needs to rewrite the text: the message ID, the pop
//! receipt, the released count and the body, separated by newlines (the body last, so it may
//! contain newlines itself).

use taskhub_storage::{Receipt, StorageError, StorageResult};

const MARK: char = '\u{E000}';

/// The stored text of `body` after `released` released deliveries.
pub(crate) fn text(body: &str, released: i64) -> String {
    if released == 0 && !body.starts_with(MARK) {
        body.to_owned()
    } else {
        format!("{MARK}{released}{MARK}{body}")
    }
}

/// Splits a stored text into (released deliveries, body).
pub(crate) fn parse(text: &str) -> (i64, &str) {
    let Some(rest) = text.strip_prefix(MARK) else {
        return (0, text);
    };
    match rest.split_once(MARK) {
        Some((n, body)) => match n.parse() {
            Ok(n) => (n, body),
            Err(_) => (0, text),
        },
        None => (0, text),
    }
}

/// One delivery's receipt, decoded.
pub(crate) struct Delivery<'a> {
    /// The message ID.
    pub id: &'a str,
    /// The pop receipt of this delivery.
    pub pop: &'a str,
    /// Released deliveries so far, less one for a claimed message.
    pub released: i64,
    /// The message body.
    pub body: &'a str,
}

/// The receipt of a delivery.
pub(crate) fn receipt(id: &str, pop: &str, released: i64, body: &str) -> Receipt {
    Receipt(format!("{id}\n{pop}\n{released}\n{body}"))
}

/// Decodes a receipt made by [`receipt`]; anything else is an expired receipt of `queue`.
pub(crate) fn delivery<'a>(receipt: &'a Receipt, queue: &str) -> StorageResult<Delivery<'a>> {
    let expired = || StorageError::ReceiptExpired {
        queue: queue.to_owned(),
    };
    let mut parts = receipt.0.splitn(4, '\n');
    let (Some(id), Some(pop), Some(released), Some(body)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(expired());
    };
    Ok(Delivery {
        id,
        pop,
        released: released.parse().map_err(|_| expired())?,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_read_back_with_their_released_count() {
        assert_eq!(text("plain", 0), "plain");
        assert_eq!(parse("plain"), (0, "plain"));
        let released = text("{\"a\":1}", 3);
        assert_eq!(parse(&released), (3, "{\"a\":1}"));
        let marked = format!("{MARK}7{MARK}x");
        assert_eq!(parse(&text(&marked, 0)), (0, marked.as_str()));
        assert_eq!(parse(&format!("{MARK}oops")), (0, "\u{E000}oops"));
        assert_eq!(parse(&text("claimed", -1)), (-1, "claimed"));
    }

    #[test]
    fn receipts_keep_bodies_with_newlines() {
        let r = receipt("id-1", "pop/2", 2, "line 1\nline 2");
        let d = delivery(&r, "q").expect("a receipt of ours");
        assert_eq!(
            (d.id, d.pop, d.released, d.body),
            ("id-1", "pop/2", 2, "line 1\nline 2")
        );
        assert!(matches!(
            delivery(&Receipt("id\npop".into()), "q"),
            Err(StorageError::ReceiptExpired { .. })
        ));
    }
}
