//! Entra ID token credentials against real loopback servers (no mock objects): a fake token
//! endpoint on 127.0.0.1 (client credentials grant, managed identity) and a fake storage
//! service over HTTPS that records every request. Checks the token request, the
//! `Authorization: Bearer` header and `x-ms-version` on the storage requests, the cache and
//! its refresh before expiry (on a `ManualClock`), a refused credential, and that no secret is
//! printed. Needs no Azurite.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod loopback;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loopback::{self_signed, storage_answer, Recorded, Server};
use taskhub_azure::{
    AzureError, AzureOptions, AzureStore, ClientSecretCredential, Credential, HubName,
    ManagedIdentityCredential, SecretText, StorageAccount,
};
use taskhub_core::Timestamp;
use taskhub_storage::{ManualClock, PartitionStore, StorageError};

const SECRET: &str = "s3cr3t-client-value";

/// An account whose three endpoints are the loopback storage server, trusted over TLS.
fn account(credential: Credential, storage: &Server, root: Vec<u8>) -> StorageAccount {
    let mut acct = StorageAccount::with_token_credential("acct1", None, credential)
        .unwrap()
        .with_extra_root(root);
    let base = format!("https://127.0.0.1:{}/acct1", storage.port);
    acct.blob_endpoint.clone_from(&base);
    acct.queue_endpoint.clone_from(&base);
    acct.table_endpoint = base;
    acct
}

async fn open(account: StorageAccount, clock: &ManualClock) -> Result<AzureStore, AzureError> {
    AzureStore::create(AzureOptions {
        account,
        hub: HubName::new("EntraHub").unwrap(),
        clock: Arc::new(clock.clone()),
    })
    .await
}

fn bearer_of(r: &Recorded) -> String {
    let auth = r.headers.get("authorization").cloned().unwrap_or_default();
    let version = r.headers.get("x-ms-version").cloned().unwrap_or_default();
    assert!(
        version.as_str() >= "2017-11-09",
        "bearer tokens need x-ms-version 2017-11-09 or later: {r:?}"
    );
    auth.strip_prefix("Bearer ")
        .unwrap_or_else(|| panic!("not a bearer token: {r:?}"))
        .to_owned()
}

/// The client secret credential of `client1` in `tenant1`, its tokens from `tokens`.
fn client_secret_of_tenant1(tokens: &Server) -> Credential {
    Credential::ClientSecret(ClientSecretCredential {
        tenant_id: "tenant1".to_owned(),
        client_id: "client1".to_owned(),
        secret: SecretText::new(SECRET),
        authority_host: format!("http://127.0.0.1:{}", tokens.port),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_secret_tokens_are_fetched_cached_refreshed_and_sent_as_bearer() {
    let issued = Arc::new(AtomicUsize::new(0));
    let tokens = {
        let issued = issued.clone();
        Server::plain(move |_r| {
            let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
            (
                200,
                vec![("content-type".to_owned(), "application/json".to_owned())],
                format!(r#"{{"token_type":"Bearer","expires_in":3600,"access_token":"tok-{n}"}}"#),
            )
        })
        .await
    };
    let (config, root) = self_signed();
    let storage = Server::tls(config, storage_answer).await;
    let credential = client_secret_of_tenant1(&tokens);
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let acct = account(credential, &storage, root);
    assert!(!format!("{acct:?}").contains(SECRET));
    let store = open(acct, &clock)
        .await
        .expect("the hub opens with a token");
    assert!(!format!("{store:?}").contains(SECRET));

    let token_requests = tokens.seen();
    assert_eq!(
        token_requests.len(),
        1,
        "one token for every request so far"
    );
    let t = &token_requests[0];
    assert_eq!(t.method, "POST");
    assert_eq!(t.target, "/tenant1/oauth2/v2.0/token");
    assert_eq!(
        t.headers.get("content-type").map(String::as_str),
        Some("application/x-www-form-urlencoded")
    );
    for part in [
        "grant_type=client_credentials",
        "client_id=client1",
        &format!("client_secret={SECRET}"),
        "scope=https%3A%2F%2Fstorage.azure.com%2F.default",
    ] {
        assert!(t.body.split('&').any(|p| p == part), "{part} in {}", t.body);
    }
    let opened = storage.seen();
    assert!(
        opened.len() >= 5,
        "tables and container created: {opened:#?}"
    );
    for r in &opened {
        assert_eq!(bearer_of(r), "tok-1");
    }

    // Still valid and not yet due for refresh (5 min before its hour): the cached token.
    clock.advance(Duration::from_secs(54 * 60));
    store.hub_info().await.unwrap();
    assert_eq!(tokens.seen().len(), 1, "the cached token is reused");
    assert_eq!(bearer_of(storage.seen().last().unwrap()), "tok-1");

    // Within 5 minutes of expiry: a fresh token before the request.
    clock.advance(Duration::from_secs(2 * 60));
    store.hub_info().await.unwrap();
    assert_eq!(tokens.seen().len(), 2, "refreshed before expiry");
    assert_eq!(bearer_of(storage.seen().last().unwrap()), "tok-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_identity_tokens_come_from_the_identity_endpoint() {
    let tokens = Server::plain(|_r| {
        // IMDS gives the lifetime as a string.
        (
            200,
            Vec::new(),
            r#"{"access_token":"mi-token","expires_in":"86399","token_type":"Bearer"}"#.to_owned(),
        )
    })
    .await;
    let (config, root) = self_signed();
    let storage = Server::tls(config, storage_answer).await;
    let credential = Credential::ManagedIdentity(ManagedIdentityCredential {
        client_id: Some("mi-client".to_owned()),
        endpoint: format!(
            "http://127.0.0.1:{}/metadata/identity/oauth2/token",
            tokens.port
        ),
        identity_header: None,
    });
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let store = open(account(credential, &storage, root), &clock)
        .await
        .expect("the hub opens with a managed identity token");
    store.hub_info().await.unwrap();
    let seen = tokens.seen();
    assert_eq!(seen.len(), 1);
    let t = &seen[0];
    assert_eq!(t.method, "GET");
    assert_eq!(t.headers.get("metadata").map(String::as_str), Some("true"));
    assert!(
        t.target.starts_with("/metadata/identity/oauth2/token?"),
        "{}",
        t.target
    );
    for part in [
        "api-version=2018-02-01",
        "resource=https%3A%2F%2Fstorage.azure.com%2F",
        "client_id=mi-client",
    ] {
        assert!(t.target.contains(part), "{part} in {}", t.target);
    }
    for r in storage.seen() {
        assert_eq!(bearer_of(&r), "mi-token");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_credential_is_one_clear_error_without_the_secret() {
    let tokens = Server::plain(|_r| {
        (
            401,
            Vec::new(),
            r#"{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}"#.to_owned(),
        )
    })
    .await;
    let (config, root) = self_signed();
    let storage = Server::tls(config, storage_answer).await;
    let credential = client_secret_of_tenant1(&tokens);
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let err = open(account(credential, &storage, root), &clock)
        .await
        .expect_err("a refused credential fails");
    let text = err.to_string();
    assert!(
        matches!(err, AzureError::Open(StorageError::Backend(_))),
        "{err:?}"
    );
    assert!(
        text.contains("invalid_client") && text.contains("credential"),
        "{text}"
    );
    assert!(!text.contains(SECRET), "{text}");
    assert_eq!(
        tokens.seen().len(),
        1,
        "not retried: the answer will not change"
    );
    assert!(storage.seen().is_empty(), "nothing sent without a token");
}
