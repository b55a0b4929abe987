//! An instance row's ETag as the store hands it out: the service's ETag, and the blob that
//! holds the row's data when it is over the property limit (`DataBlob`). Carrying the blob in
//! the ETag lets a conditional replace or delete remove the replaced version's blob once the
//! service has accepted the write — the version it replaced is exactly the one the ETag names
//! (a row never returns to an earlier ETag) — without reading the row first. Without it, every
//! replace of a large row would leave the previous version's blob behind until the instance is
//! purged.

use taskhub_storage::ETag;

/// Separates the service's ETag from the blob name (neither contains a newline).
const SEPARATOR: char = '\n';

/// The ETag of a row version: `service` as the table service returned it, with its data blob
/// (empty: the data is inline).
pub(crate) fn encode(service: &str, blob: &str) -> ETag {
    if blob.is_empty() {
        ETag(service.to_owned())
    } else {
        ETag(format!("{service}{SEPARATOR}{blob}"))
    }
}

/// The parts of an ETag made by [`encode`]: the service's ETag (for `If-Match`) and the data
/// blob of that version, if it has one. An ETag from elsewhere is all service ETag.
pub(crate) fn decode(etag: &ETag) -> (&str, Option<&str>) {
    match etag.0.split_once(SEPARATOR) {
        Some((service, blob)) if !blob.is_empty() => (service, Some(blob)),
        Some((service, _)) => (service, None),
        None => (etag.0.as_str(), None),
    }
}

/// The replaced version's blob that a write of `instance` may delete: only one under that
/// instance's own blob prefix (never another instance's, whatever an ETag says), and not the
/// blob the new version uses.
pub(crate) fn replaced_blob<'a>(
    old: Option<&'a str>,
    instance_prefix: &str,
    new_blob: &str,
) -> Option<&'a str> {
    old.filter(|b| b.starts_with(instance_prefix) && *b != new_blob)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_etag_carries_its_versions_blob() {
        let inline = encode("W/\"datetime'1'\"", "");
        assert_eq!(decode(&inline), ("W/\"datetime'1'\"", None));
        let big = encode("W/\"datetime'2'\"", "instances/a/1f");
        assert_eq!(decode(&big), ("W/\"datetime'2'\"", Some("instances/a/1f")));
        // An ETag of an older build, or a made-up one: no blob.
        assert_eq!(decode(&ETag("x".into())), ("x", None));
    }

    #[test]
    fn only_the_instances_own_replaced_blob_is_deleted() {
        let p = "instances/a/";
        assert_eq!(
            replaced_blob(Some("instances/a/1"), p, "instances/a/2"),
            Some("instances/a/1")
        );
        assert_eq!(
            replaced_blob(Some("instances/a/1"), p, "instances/a/1"),
            None
        );
        assert_eq!(
            replaced_blob(Some("instances/ab/1"), p, ""),
            None,
            "another instance's"
        );
        assert_eq!(replaced_blob(Some("history/a/1"), p, ""), None);
        assert_eq!(replaced_blob(None, p, ""), None);
    }
}
