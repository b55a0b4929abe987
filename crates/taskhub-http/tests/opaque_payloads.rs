//! Payloads that are not JSON (an SDK's large-payload token such as `blob:v1:<container>:<blob>`,
//! issue 34) and absent payloads: the own API and the Durable Functions API answer valid JSON,
//! showing an opaque payload as a JSON string of its text and an absent one as `null`.

mod common;

use common::{Backend, Server};
use taskhub::{Payload, StartOptions};

const TOKEN: &str = "blob:v1:payloads:opaque-1/input";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_and_absent_payloads_show_as_json() {
    // No worker: the instances stay Pending with their inputs as stored.
    let s = Server::start_with(Backend::Memory, false, |c| c).await;
    let client = s.hub.client();
    for (id, input) in [
        ("opaque-1", Payload::from_text(TOKEN)),
        ("absent-1", Payload::absent()),
        ("null-1", Payload::null()),
    ] {
        client
            .start_payload(
                "Anything",
                input,
                StartOptions {
                    instance_id: Some(taskhub::InstanceId::new(id).unwrap()),
                    ..StartOptions::default()
                },
            )
            .await
            .unwrap();
    }
    let df = "/runtime/webhooks/durabletask/instances";
    for (id, shown) in [
        ("opaque-1", serde_json::json!(TOKEN)),
        ("absent-1", serde_json::Value::Null),
        ("null-1", serde_json::Value::Null),
    ] {
        // `json()` fails the test on a body that is not JSON.
        let own = s.get(&format!("/api/instances/{id}")).await;
        assert_eq!(own.status, 200, "{}", own.body);
        assert_eq!(own.json()["instance"]["input"], shown, "{id}: {}", own.body);
        let status = s.get(&format!("{df}/{id}?showHistory=true")).await;
        // 202: the instance has not finished.
        assert_eq!(status.status, 202, "{}", status.body);
        assert_eq!(status.json()["input"], shown, "{id}: {}", status.body);
    }
    let list = s.get("/api/instances?name=Anything").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains(&format!("\"{TOKEN}\"")), "{}", list.body);
    list.json();
    s.stop().await;
}
