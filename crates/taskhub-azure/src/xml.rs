//! The little XML the queue and blob services speak, through `quick-xml`: escaping for a
//! message body and the elements of list and get responses.

use std::borrow::Cow;

use quick_xml::events::Event;
use quick_xml::Reader;

/// Escapes text for an XML element.
pub(crate) fn escape(text: &str) -> String {
    // A carriage return goes as a reference: an XML parser reads a literal one as `\n`.
    quick_xml::escape::escape(text).replace('\r', "&#13;")
}

/// The contents of every `<tag>…</tag>` in `xml`, in order (not unescaped); `<tag/>` is
/// empty. Reading stops at the first malformed markup.
pub(crate) fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let mut reader = Reader::from_str(xml);
    let mut out = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(start)) if start.name().as_ref() == tag.as_bytes() => {
                let Ok(span) = reader.read_to_end(start.name()) else {
                    break;
                };
                let inner = usize::try_from(span.start)
                    .ok()
                    .zip(usize::try_from(span.end).ok())
                    .and_then(|(from, to)| xml.get(from..to));
                match inner {
                    Some(inner) => out.push(inner),
                    None => break,
                }
            }
            Ok(Event::Empty(empty)) if empty.name().as_ref() == tag.as_bytes() => out.push(""),
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    out
}

/// The unescaped contents of the first `<tag>…</tag>` (`None` if there is none, or if its
/// text has a malformed reference).
pub(crate) fn first(xml: &str, tag: &str) -> Option<String> {
    let raw = elements(xml, tag).into_iter().next()?;
    quick_xml::escape::unescape(raw).ok().map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips() {
        let text = "a<b>&\"c'\r\n{\"x\":1}";
        assert_eq!(
            first(&format!("<a>{}</a>", escape(text)), "a").as_deref(),
            Some(text)
        );
        assert_eq!(
            first("<a>&#x41;&#66;&amp;</a>", "a").as_deref(),
            Some("AB&")
        );
        assert_eq!(elements("<a>1</a><b/><a>2</a>", "a"), vec!["1", "2"]);
        assert_eq!(
            elements("<as><a k=\"v\">1</a><a/></as>", "a"),
            vec!["1", ""]
        );
        assert_eq!(first("<NextMarker />", "NextMarker").as_deref(), Some(""));
        assert_eq!(first("<b>1</b>", "a"), None);
    }
}
