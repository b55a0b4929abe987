//! A start, a raised event and an entity signal over HTTP keep the request's JSON text as it
//! was sent: an integer beyond 64 bits keeps every digit (it was re-parsed into a
//! `serde_json::Value` and stored as `1.2345678901234568e+22`).

mod common;

use common::{Backend, Server};
use std::time::Duration;

use taskhub::InstanceId;
use taskhub_storage::QueueName;

const BIG: &str = "12345678901234567890123";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_integers_keep_their_digits() {
    let s = Server::start_with(Backend::Memory, false, |c| c).await;
    let df = "/runtime/webhooks/durabletask";
    let input = format!("{{\"big\":{BIG}}}");
    s.post_accepted(&format!("{df}/orchestrators/Anything/big-1"), &input)
        .await;
    let id = InstanceId::new("big-1").unwrap();
    let row = s
        .hub
        .client()
        .get_status(&id, Default::default())
        .await
        .unwrap()
        .unwrap()
        .row;
    assert!(
        row.input.as_str().contains(BIG),
        "stored input {}",
        row.input.as_str()
    );

    s.post_accepted(&format!("{df}/instances/big-1/raiseEvent/go"), BIG)
        .await;
    s.post_accepted("/api/entities/@counter@big/signal?op=add", BIG)
        .await;

    // No worker runs: the messages wait in the queues, as sent.
    let store = s.hub.store();
    let mut bodies = String::new();
    for q in 0..s.hub.partition_count() {
        for m in store
            .dequeue(QueueName::Control(q), 32, Duration::from_secs(60))
            .await
            .unwrap()
        {
            bodies.push_str(&m.body);
            bodies.push('\n');
        }
    }
    assert_eq!(
        bodies.matches(BIG).count(),
        3,
        "start, event and signal keep the digits: {bodies}"
    );
}
