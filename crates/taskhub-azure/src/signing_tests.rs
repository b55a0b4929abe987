//! Known answers for Shared Key (Blob, Queue) and Shared Key Lite (Table) signing.
//!
//! The expected signatures were computed apart from this code, by a short Python script
//! (`hmac`/`hashlib`/`base64`) that builds each string-to-sign as the Azure Storage REST
//! reference "Authorize with Shared Key" describes it, with Azurite's well-known account
//! `devstoreaccount1` and its published key. Each test shows the string-to-sign it signs
//! (`↵` marks a newline). Azurite accepts signatures the real service refuses, so these pin
//! what the service expects.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use base64::Engine as _;

use super::{authorization, string_to_sign, ToSign};
use crate::connection::AccountKey;
use crate::http::Service;

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const DATE: &str = "Fri, 26 Jun 2015 23:39:12 GMT";
const VERSION: &str = "2021-12-02";
/// Azurite's path-style endpoints: the account name is part of the URL path.
const AZURITE_QUEUE: &str = "http://127.0.0.1:10001/devstoreaccount1";
const AZURITE_BLOB: &str = "http://127.0.0.1:10000/devstoreaccount1";
const AZURITE_TABLE: &str = "http://127.0.0.1:10002/devstoreaccount1";

fn key() -> AccountKey {
    AccountKey(
        base64::engine::general_purpose::STANDARD
            .decode(KEY)
            .unwrap(),
    )
}

/// `x-ms-date` and `x-ms-version` as every request sends them, after `extra`.
fn headers(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    out.push(("x-ms-date".to_owned(), DATE.to_owned()));
    out.push(("x-ms-version".to_owned(), VERSION.to_owned()));
    out
}

struct Case {
    endpoint: &'static str,
    service: Service,
    method: &'static str,
    path: &'static str,
    query: Vec<(&'static str, String)>,
    headers: Vec<(String, String)>,
    content_length: usize,
}

impl Case {
    fn check(&self, to_sign: &str, expected: &str) {
        let r = ToSign {
            account: ACCOUNT,
            endpoint: self.endpoint,
            service: self.service,
            method: self.method,
            path: self.path,
            query: &self.query,
            headers: &self.headers,
            content_length: self.content_length,
        };
        assert_eq!(string_to_sign(&r), to_sign.replace('↵', "\n"));
        assert_eq!(authorization(&r, &key()), expected);
    }
}

fn q(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

#[test]
fn queue_metadata_with_comp_and_an_empty_body() {
    Case {
        endpoint: AZURITE_QUEUE,
        service: Service::Queue,
        method: "GET",
        path: "/control-00",
        query: q(&[("comp", "metadata")]),
        headers: headers(&[]),
        content_length: 0,
    }
    .check(
        "GET↵↵↵↵↵↵↵↵↵↵↵↵x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵x-ms-version:2021-12-02↵\
         /devstoreaccount1/devstoreaccount1/control-00↵comp:metadata",
        "SharedKey devstoreaccount1:elGh11aoU0fyta+xXVjzJ6iOP+19RVGYkUADd+MUq80=",
    );
}

#[test]
fn queue_get_messages_sorts_query_parameters() {
    Case {
        endpoint: AZURITE_QUEUE,
        service: Service::Queue,
        method: "GET",
        path: "/control-00/messages",
        query: q(&[("visibilitytimeout", "300"), ("numofmessages", "32")]),
        headers: headers(&[]),
        content_length: 0,
    }
    .check(
        "GET↵↵↵↵↵↵↵↵↵↵↵↵x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵x-ms-version:2021-12-02↵\
         /devstoreaccount1/devstoreaccount1/control-00/messages↵numofmessages:32↵\
         visibilitytimeout:300",
        "SharedKey devstoreaccount1:qAyP08J4gKeK30CDtJJixoan6Lw8KnssG+eA38MzFuQ=",
    );
}

#[test]
fn queue_put_message_signs_length_and_content_type_on_a_cloud_endpoint() {
    Case {
        endpoint: "https://devstoreaccount1.queue.core.windows.net",
        service: Service::Queue,
        method: "POST",
        path: "/workitems/messages",
        query: q(&[("visibilitytimeout", "0"), ("messagettl", "-1")]),
        headers: headers(&[("content-type", "application/xml")]),
        content_length: 77,
    }
    .check(
        "POST↵↵↵77↵↵application/xml↵↵↵↵↵↵↵x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵\
         x-ms-version:2021-12-02↵/devstoreaccount1/workitems/messages↵messagettl:-1↵\
         visibilitytimeout:0",
        "SharedKey devstoreaccount1:fT1cPjFTHwnlq3u9vN+lzlET4W6XwXJIhPWJccz7Oxk=",
    );
}

#[test]
fn queue_delete_message_signs_the_decoded_pop_receipt() {
    Case {
        endpoint: AZURITE_QUEUE,
        service: Service::Queue,
        method: "DELETE",
        path: "/control-01/messages/0b0e6c5e-7b3a",
        query: q(&[("popreceipt", "AgAAAAMAAAAAAAAA/pop+rcpt=")]),
        headers: headers(&[]),
        content_length: 0,
    }
    .check(
        "DELETE↵↵↵↵↵↵↵↵↵↵↵↵x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵x-ms-version:2021-12-02↵\
         /devstoreaccount1/devstoreaccount1/control-01/messages/0b0e6c5e-7b3a↵\
         popreceipt:AgAAAAMAAAAAAAAA/pop+rcpt=",
        "SharedKey devstoreaccount1:aCXH+7MU6V2AxwyJvZt1Mu8SI86eklWvs0uzHKbKkq0=",
    );
}

#[test]
fn blob_put_signs_x_ms_headers_in_order_and_the_encoded_path() {
    Case {
        endpoint: AZURITE_BLOB,
        service: Service::Blob,
        method: "PUT",
        path: "/hub-largemessages/history/order%201/0001",
        query: Vec::new(),
        headers: headers(&[
            ("x-ms-blob-type", "BlockBlob"),
            ("content-type", "application/octet-stream"),
        ]),
        content_length: 11,
    }
    .check(
        "PUT↵↵↵11↵↵application/octet-stream↵↵↵↵↵↵↵x-ms-blob-type:BlockBlob↵\
         x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵x-ms-version:2021-12-02↵\
         /devstoreaccount1/devstoreaccount1/hub-largemessages/history/order%201/0001",
        "SharedKey devstoreaccount1:m7aSMY7ujLVCoWkpcLn0ILmCXyGpQ/kQwORd60R+no4=",
    );
}

#[test]
fn blob_put_signs_if_none_match_in_its_own_slot() {
    Case {
        endpoint: "https://devstoreaccount1.blob.core.windows.net",
        service: Service::Blob,
        method: "PUT",
        path: "/c/b",
        query: Vec::new(),
        headers: headers(&[("if-none-match", "*"), ("x-ms-blob-type", "BlockBlob")]),
        content_length: 5,
    }
    .check(
        "PUT↵↵↵5↵↵↵↵↵↵*↵↵↵x-ms-blob-type:BlockBlob↵x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵\
         x-ms-version:2021-12-02↵/devstoreaccount1/c/b",
        "SharedKey devstoreaccount1:SPzgezkahlCd92BCiYCAH7teFDjwd5r+fdSR45VOnfo=",
    );
}

#[test]
fn blob_list_signs_every_query_parameter_decoded_and_sorted() {
    Case {
        endpoint: AZURITE_BLOB,
        service: Service::Blob,
        method: "GET",
        path: "/hub-largemessages",
        query: q(&[
            ("restype", "container"),
            ("comp", "list"),
            ("prefix", "history/a b/"),
        ]),
        headers: headers(&[]),
        content_length: 0,
    }
    .check(
        "GET↵↵↵↵↵↵↵↵↵↵↵↵x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT↵x-ms-version:2021-12-02↵\
         /devstoreaccount1/devstoreaccount1/hub-largemessages↵comp:list↵prefix:history/a b/↵\
         restype:container",
        "SharedKey devstoreaccount1:WXk4/5lv2qHXZxcqcSlOo/29qj8O4SUY9OCL4BbFsp8=",
    );
}

#[test]
fn table_query_lite_signs_no_filter() {
    Case {
        endpoint: AZURITE_TABLE,
        service: Service::Table,
        method: "GET",
        path: "/hubPartitions()",
        query: q(&[("$filter", "PartitionKey eq 'hub'"), ("$top", "1000")]),
        headers: headers(&[("accept", "application/json;odata=minimalmetadata")]),
        content_length: 0,
    }
    .check(
        "Fri, 26 Jun 2015 23:39:12 GMT↵/devstoreaccount1/devstoreaccount1/hubPartitions()",
        "SharedKeyLite devstoreaccount1:4gQ3ZcgzpRzKOs302i1ODtPx8HRt3+3kHzXmOEEzAvY=",
    );
}

#[test]
fn table_entity_put_lite_signs_the_encoded_keys_only() {
    Case {
        endpoint: "https://devstoreaccount1.table.core.windows.net",
        service: Service::Table,
        method: "PUT",
        path: "/hubInstances(PartitionKey='order%201',RowKey='')",
        query: Vec::new(),
        headers: headers(&[("content-type", "application/json"), ("if-match", "*")]),
        content_length: 120,
    }
    .check(
        "Fri, 26 Jun 2015 23:39:12 GMT↵\
         /devstoreaccount1/hubInstances(PartitionKey='order%201',RowKey='')",
        "SharedKeyLite devstoreaccount1:jaF+pAyytsTAZbaiUZOWybEyO2k6LpNe7LXukkUgtPo=",
    );
}

#[test]
fn table_lite_signs_comp_and_nothing_else_of_the_query() {
    Case {
        endpoint: AZURITE_TABLE,
        service: Service::Table,
        method: "GET",
        path: "/",
        query: q(&[("restype", "service"), ("comp", "properties")]),
        headers: headers(&[]),
        content_length: 0,
    }
    .check(
        "Fri, 26 Jun 2015 23:39:12 GMT↵/devstoreaccount1/devstoreaccount1/?comp=properties",
        "SharedKeyLite devstoreaccount1:jfMScsPGtGm30DiO8rBbkhlWHpNGJALjG5FXoVXL8rQ=",
    );
}
