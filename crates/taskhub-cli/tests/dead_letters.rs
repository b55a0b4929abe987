//! `taskhub dead-letters list/replay`: a malformed control message enqueued straight into the
//! store is dead-lettered by the worker, listed, replayed, and dead-lettered again.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::*;
use taskhub_backends::{BackendConfig, OptionValue};
use taskhub_storage::{NewQueueMessage, QueueName};

fn letters(dir: &TempDir) -> Vec<serde_json::Value> {
    json(dir, &["dead-letters", "list", "--json"])
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn malformed_message_is_listed_and_replayed() {
    let dir = TempDir::new("dead-letters");
    let worker = WorkerChild::start(&dir);
    let config = BackendConfig {
        overrides: vec![OptionValue::new(
            "sqlite.path",
            dir.db().display().to_string(),
            "the test",
        )],
        ..BackendConfig::default()
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt
        .block_on(taskhub_backends::open_store("sqlite", &config))
        .unwrap()
        .store;
    rt.block_on(store.enqueue(
        QueueName::Control(0),
        vec![NewQueueMessage {
            body: "this is not a message".to_owned(),
            delay: Duration::ZERO,
        }],
    ))
    .unwrap();

    let first = wait_until(STUCK, || letters(&dir).into_iter().next());
    assert_eq!(first["queue"], "control-00");
    assert_eq!(first["body"], "this is not a message");
    assert!(
        first["reason"].as_str().unwrap().contains("malformed"),
        "{first}"
    );
    let table = ok(&dir, &["dead-letters", "list"]);
    assert!(
        table.contains("control-00") && table.contains("1 dead letter(s)"),
        "{table}"
    );

    // Replay puts it back into its queue; the worker dead-letters it again under a new ID.
    let id = first["id"].as_str().unwrap().to_owned();
    let out = ok(&dir, &["dead-letters", "replay", &id]);
    assert!(out.contains("replayed"), "{out}");
    let again = wait_until(STUCK, || {
        letters(&dir)
            .into_iter()
            .find(|l| l["id"].as_str() != Some(id.as_str()))
    });
    assert_eq!(again["body"], "this is not a message");
    assert_eq!(letters(&dir).len(), 1, "the replayed letter left the store");

    let stderr = fails(&dir, &["dead-letters", "replay", &id], 1);
    assert!(
        stderr.contains(&format!("dead letter '{id}' not found")),
        "{stderr}"
    );
    worker.stop();
}
