//! HTTPS endpoints: the store talks TLS (rustls, ring) to a loopback server presenting a
//! self-signed certificate that the account trusts through `StorageAccount::with_extra_root`;
//! without that root the handshake is refused and nothing is sent. Needs no Azurite.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod loopback;

use std::sync::Arc;

use loopback::{self_signed, storage_answer, Server};
use taskhub_azure::{AzureError, AzureOptions, AzureStore, HubName, StorageAccount};
use taskhub_storage::{ManualClock, PartitionStore, StorageError};

const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn account(port: u16) -> StorageAccount {
    let base = format!("https://127.0.0.1:{port}/acct1");
    StorageAccount::from_connection_string(&format!(
        "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey={KEY};\
         BlobEndpoint={base};QueueEndpoint={base};TableEndpoint={base}"
    ))
    .unwrap()
}

async fn open(account: StorageAccount) -> Result<AzureStore, AzureError> {
    AzureStore::create(AzureOptions {
        account,
        hub: HubName::new("TlsHub").unwrap(),
        clock: Arc::new(ManualClock::new(taskhub_core::Timestamp::from_millis(
            1_700_000_000_000,
        ))),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_endpoint_is_reached_over_tls_with_a_trusted_root() {
    let (config, der) = self_signed();
    let server = Server::tls(config, storage_answer).await;
    let store = open(account(server.port).with_extra_root(der))
        .await
        .expect("the hub opens over HTTPS");
    assert!(store.hub_info().await.unwrap().is_none());
    let seen = server.seen();
    // Four tables, the container, the hub-info read.
    assert!(seen.len() >= 6, "requests over TLS: {seen:#?}");
    assert!(seen
        .iter()
        .any(|r| r.method == "POST" && r.target.starts_with("/acct1/Tables")));
    for r in &seen {
        let auth = r.headers.get("authorization").cloned().unwrap_or_default();
        assert!(
            auth.starts_with("SharedKey acct1:") || auth.starts_with("SharedKeyLite acct1:"),
            "{r:?}"
        );
        assert_eq!(
            r.headers.get("host").map(String::as_str),
            Some(&*format!("127.0.0.1:{}", server.port))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_refused_and_nothing_is_sent() {
    let (config, _der) = self_signed();
    let server = Server::tls(config, storage_answer).await;
    let err = open(account(server.port))
        .await
        .expect_err("a self-signed certificate nobody trusts must be refused");
    let text = err.to_string();
    assert!(
        matches!(err, AzureError::Open(StorageError::Unavailable(_))),
        "{err:?}"
    );
    assert!(text.to_lowercase().contains("certificate"), "{text}");
    assert!(server.seen().is_empty(), "no request reached the server");
}
