//! TLS against a real server: the test cluster of `scripts/with-postgres.sh` offers TLS with a
//! certificate for 127.0.0.1 signed by a throwaway CA (`TASKHUB_TEST_POSTGRES_TLS_CA`), as a
//! managed server does with its provider's CA. A hub opened with `sslmode=require` and that CA
//! in `tls_ca_file` talks TLS (the server says so in `pg_stat_ssl`); without the CA the
//! certificate is refused with an error that says so (and never shows the password); `prefer`
//! (the default) uses TLS when the server offers it.
//! Run with `scripts/with-postgres.sh cargo test -p taskhub-postgres --test tls`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use taskhub_postgres::{Create, PostgresOptions, PostgresStore};
use taskhub_storage::{QueueName, QueueStore, StorageError};

/// The test server's URL with `sslmode` set to `mode` (`None`: not given, i.e. `prefer`).
fn url(mode: Option<&str>) -> String {
    let base = common::options().url.expect("the test server's URL");
    let plain = base
        .replace("?sslmode=disable", "")
        .replace("&sslmode=disable", "");
    match mode {
        Some(m) => format!("{plain}?sslmode={m}"),
        None => plain,
    }
}

fn ca_file() -> String {
    std::env::var("TASKHUB_TEST_POSTGRES_TLS_CA").unwrap_or_else(|_| {
        panic!(
            "TASKHUB_TEST_POSTGRES_TLS_CA is not set: run as `scripts/with-postgres.sh cargo \
             test -p taskhub-postgres --test tls` (scripts/test.sh does this)"
        )
    })
}

fn options(mode: Option<&str>, ca: Option<String>) -> PostgresOptions {
    let mut o = PostgresOptions::new(url(mode));
    o.pool_size = 2;
    o.tls_ca_file = ca.map(Into::into);
    o
}

/// True if the store's connection is encrypted, by the server's own account.
async fn encrypted(store: &PostgresStore) -> bool {
    let client = store.raw_client().await.unwrap();
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_hub_opened_with_the_servers_ca_and_sslmode_require_talks_tls() {
    let store = PostgresStore::open(
        &options(Some("require"), Some(ca_file())),
        &common::fresh_hub_name("tls"),
        Create::IfMissing,
    )
    .await
    .expect("open a hub over TLS");
    assert!(encrypted(&store).await, "the server sees a TLS connection");
    // The store works over it.
    let q = QueueName::Control(0);
    store
        .enqueue(q, vec![common::message("over tls")])
        .await
        .unwrap();
    let got = store.dequeue(q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        got.iter().map(|d| d.body.as_str()).collect::<Vec<_>>(),
        ["over tls"]
    );
}

#[tokio::test]
async fn a_certificate_no_trusted_root_vouches_for_is_refused_with_a_clear_error() {
    let err = match PostgresStore::open(
        &options(Some("require"), None),
        &common::fresh_hub_name("tlsbad"),
        Create::IfMissing,
    )
    .await
    {
        Ok(_) => panic!("a certificate signed by an unknown CA must be refused"),
        Err(e) => e,
    };
    let text = err.to_string();
    assert!(
        text.to_lowercase().contains("certificate"),
        "the error names the certificate problem: {text}"
    );
    let password = url(None)
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(auth, _)| auth.split_once(':'))
        .map(|(_, pw)| pw.to_owned())
        .unwrap();
    assert!(
        !text.contains(&password),
        "the password never shows: {text}"
    );
    assert!(
        !matches!(err, StorageError::InvalidArgument(_)),
        "a refused server is not a bad argument: {err:?}"
    );
}

#[tokio::test]
async fn sslmode_prefer_uses_tls_when_the_server_offers_it() {
    let store = PostgresStore::open(
        &options(None, Some(ca_file())),
        &common::fresh_hub_name("tlsprefer"),
        Create::IfMissing,
    )
    .await
    .expect("open a hub with the default sslmode");
    assert!(encrypted(&store).await, "prefer takes the offered TLS");
}

#[tokio::test]
async fn a_ca_file_without_a_certificate_is_refused_naming_the_setting() {
    let dir = std::env::temp_dir().join(format!("taskhub-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_pem = dir.join("not-a-ca.pem");
    std::fs::write(&not_pem, "this is not a certificate\n").unwrap();
    let err = match PostgresStore::open(
        &options(Some("require"), Some(not_pem.display().to_string())),
        &common::fresh_hub_name("tlsfile"),
        Create::IfMissing,
    )
    .await
    {
        Ok(_) => panic!("a CA file with no certificate must be refused"),
        Err(e) => e,
    };
    let _ = std::fs::remove_dir_all(&dir);
    match err {
        StorageError::InvalidArgument(text) => {
            assert!(text.contains("tls_ca_file"), "{text}");
        }
        other => panic!("expected InvalidArgument naming tls_ca_file, got {other:?}"),
    }
}
