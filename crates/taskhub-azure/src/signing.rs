//! Shared Key signing, as the Azure Storage REST reference ("Authorize with Shared Key")
//! defines it: **Shared Key** for the Blob and Queue services, **Shared Key Lite** for the
//! Table service. A pure function of the request, so known-answer tests pin it (Azurite
//! accepts more than the real service does).
//!
//! Blob and Queue (Shared Key, version 2015-02-21 and later):
//!
//! ```text
//! VERB \n Content-Encoding \n Content-Language \n Content-Length (empty if 0) \n Content-MD5 \n
//! Content-Type \n Date \n If-Modified-Since \n If-Match \n If-None-Match \n
//! If-Unmodified-Since \n Range \n CanonicalizedHeaders CanonicalizedResource
//! ```
//!
//! where CanonicalizedHeaders is every `x-ms-` header, lower-cased, sorted by name,
//! `name:value\n` (whitespace runs in the value folded to one space, trimmed), and
//! CanonicalizedResource is `/account` + the URL path as sent (percent-encoded; for a
//! path-style endpoint such as Azurite's `…/devstoreaccount1` the account name appears twice),
//! then one `\nname:value` per query parameter, names lower-cased and sorted, values decoded,
//! several values of one name sorted and joined with commas.
//!
//! Table (Shared Key Lite): `x-ms-date \n CanonicalizedResource`, where the resource is
//! `/account` + the URL path, plus `?comp=…` if the query has a `comp` parameter (no other
//! query parameter is signed: a `$filter` is not).

use std::collections::BTreeMap;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::connection::AccountKey;
use crate::http::Service;

/// What is signed of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToSign<'a> {
    /// The storage account's name.
    pub account: &'a str,
    /// The service endpoint the request goes to (`https://acct.blob.core.windows.net`, or a
    /// path-style `http://127.0.0.1:10000/devstoreaccount1`).
    pub endpoint: &'a str,
    pub service: Service,
    pub method: &'a str,
    /// The path after the endpoint, percent-encoded as sent, starting with `/`.
    pub path: &'a str,
    /// Query parameters, not encoded.
    pub query: &'a [(&'static str, String)],
    /// Request headers with lower-cased names (`x-ms-date` and `x-ms-version` included).
    pub headers: &'a [(String, String)],
    /// The body's length in bytes.
    pub content_length: usize,
}

impl ToSign<'_> {
    fn header(&self, name: &str) -> String {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        values.join(",")
    }

    /// `/account` + the endpoint's own path (path-style endpoints) + the request path.
    fn resource_path(&self) -> String {
        let endpoint_path = self
            .endpoint
            .find("://")
            .map(|i| &self.endpoint[i + 3..])
            .and_then(|rest| rest.find('/').map(|j| &rest[j..]))
            .unwrap_or("")
            .trim_end_matches('/');
        format!("/{}{endpoint_path}{}", self.account, self.path)
    }
}

/// The string the signature is computed over.
pub(crate) fn string_to_sign(r: &ToSign<'_>) -> String {
    match r.service {
        Service::Table => table_lite(r),
        Service::Blob | Service::Queue => shared_key(r),
    }
}

/// The `Authorization` header's value.
pub(crate) fn authorization(r: &ToSign<'_>, key: &AccountKey) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(&key.0).unwrap_or_else(|_| unreachable_hmac());
    mac.update(string_to_sign(r).as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let scheme = match r.service {
        Service::Table => "SharedKeyLite",
        Service::Blob | Service::Queue => "SharedKey",
    };
    format!("{scheme} {}:{signature}", r.account)
}

fn table_lite(r: &ToSign<'_>) -> String {
    let date = match r.header("x-ms-date") {
        d if d.is_empty() => r.header("date"),
        d => d,
    };
    let mut resource = r.resource_path();
    if let Some((_, comp)) = r.query.iter().find(|(k, _)| k.eq_ignore_ascii_case("comp")) {
        resource.push_str("?comp=");
        resource.push_str(comp);
    }
    format!("{date}\n{resource}")
}

fn shared_key(r: &ToSign<'_>) -> String {
    let length = match r.content_length {
        0 => String::new(),
        n => n.to_string(),
    };
    let mut out = format!("{}\n", r.method);
    for field in [
        r.header("content-encoding"),
        r.header("content-language"),
        length,
        r.header("content-md5"),
        r.header("content-type"),
        r.header("date"),
        r.header("if-modified-since"),
        r.header("if-match"),
        r.header("if-none-match"),
        r.header("if-unmodified-since"),
        r.header("range"),
    ] {
        out.push_str(&field);
        out.push('\n');
    }
    let mut ms: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (k, v) in r.headers.iter().filter(|(k, _)| k.starts_with("x-ms-")) {
        ms.entry(k.as_str())
            .or_default()
            .push(v.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    for (k, vs) in ms {
        out.push_str(&format!("{k}:{}\n", vs.join(",")));
    }
    out.push_str(&r.resource_path());
    let mut query: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (k, v) in r.query {
        query.entry(k.to_ascii_lowercase()).or_default().push(v);
    }
    for (k, mut vs) in query {
        vs.sort_unstable();
        out.push_str(&format!("\n{k}:{}", vs.join(",")));
    }
    out
}

/// HMAC accepts keys of any length, so `new_from_slice` cannot fail.
fn unreachable_hmac() -> Hmac<Sha256> {
    // An empty key is a valid HMAC key too.
    #[expect(clippy::expect_used, reason = "HMAC takes keys of any length")]
    Hmac::<Sha256>::new_from_slice(&[]).expect("HMAC takes keys of any length")
}

#[cfg(test)]
#[path = "signing_tests.rs"]
mod tests;
