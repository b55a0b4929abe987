//! A start through the Durable Functions route joins the caller's trace: the `traceparent`
//! header goes into the start message, so the instance's first turn is a child of the caller's
//! span. A malformed header is ignored (W3C) and the start still succeeds.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::{Backend, Server, DF};
use taskhub::{EventKind, InstanceId};
use taskhub_core::{format, Message};
use taskhub_storage::QueueName;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN: &str = "00f067aa0ba902b7";

/// The start message queued for `id` (the server runs no worker, so it waits in its queue).
async fn queued_start(s: &Server, id: &str) -> Message {
    let id = InstanceId::new(id).unwrap();
    let store = s.hub.store();
    for p in 0..s.hub.partition_count() {
        let got = store
            .dequeue(QueueName::Control(p), 32, Duration::from_secs(60))
            .await
            .unwrap();
        for m in got {
            let message = format::decode_message(&m.body).unwrap();
            if message.target == id && matches!(message.event, EventKind::ExecutionStarted { .. }) {
                return message;
            }
        }
    }
    panic!("no start message queued for {id}");
}

async fn start(s: &Server, id: &str, traceparent: &str) {
    let r = s
        .call(
            "POST",
            &format!("{DF}/orchestrators/Hello/{id}"),
            &[
                ("content-type", "application/json"),
                ("traceparent", traceparent),
            ],
            "\"x\"",
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_carries_the_callers_traceparent() {
    let s = Server::start_with(Backend::Memory, false, |c| c).await;
    start(&s, "traced", &format!("00-{TRACE}-{SPAN}-01")).await;
    let m = queued_start(&s, "traced").await;
    let tp = m
        .traceparent
        .expect("the start message carries a trace context");
    assert_eq!(tp, format!("00-{TRACE}-{SPAN}-01"));

    start(&s, "untraced", "not-a-traceparent").await;
    let m = queued_start(&s, "untraced").await;
    assert_eq!(m.traceparent, None, "a malformed header is ignored");
    s.stop().await;
}
