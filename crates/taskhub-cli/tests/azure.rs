//! The CLI on Azure Storage (Azurite): the demo runs on a fresh hub, the admin commands read
//! it, and a bad account or a missing hub is one clear error naming the setting. Needs
//! `TASKHUB_TEST_AZURE_CONNECTION_STRING` (scripts/with-azurite.sh sets it).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::process::Output;

use common::*;

const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn connection_string() -> String {
    taskhub_test_support::env::azure_connection_string("cargo test -p taskhub-cli --test azure")
}

fn azure(dir: &TempDir, hub: &str, account: &str, args: &[&str]) -> Output {
    taskhub(&dir.0)
        .env("TASKHUB_AZURE_STORAGE_CONNECTION_STRING", account)
        .env("TASKHUB_TASK_HUB_NAME", hub)
        .arg("--backend")
        .arg("azure")
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn demo_runs_on_azure_and_the_admin_commands_read_its_hub() {
    let dir = TempDir::new("azure-demo");
    let hub = format!("cli{}", std::process::id());
    let account = connection_string();
    let out = azure(&dir, &hub, &account, &["demo", "--fan-out", "20"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "demo failed: {stderr}\n{stdout}");
    assert!(
        stdout.contains("All 8 demo instances finished as expected."),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("'{hub}' on Azure Storage")),
        "{stdout}"
    );

    let out = azure(&dir, &hub, &account, &["instances", "list"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("demo-hello"), "{stdout}");
    let out = azure(&dir, &hub, &account, &["partitions"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
}

#[test]
fn an_unreachable_account_or_a_missing_hub_is_one_clear_error() {
    let dir = TempDir::new("azure-errors");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let nowhere = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={KEY};\
         BlobEndpoint=http://127.0.0.1:{port}/a;QueueEndpoint=http://127.0.0.1:{port}/a;\
         TableEndpoint=http://127.0.0.1:{port}/a"
    );
    let out = azure(&dir, "NoHub", &nowhere, &["instances", "list"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("azure.storage_connection_string") && stderr.contains("azurite"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(KEY),
        "the key must never be printed: {stderr}"
    );

    let hub = format!("missing{}", std::process::id());
    let out = azure(&dir, &hub, &connection_string(), &["instances", "list"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("no task hub '{hub}'")) && stderr.contains("task_hub_name"),
        "{stderr}"
    );
}
