//! `/api/instances` filters on completion and last-update time (the dashboard's API; the
//! Durable Functions list has only the creation-time range), with the field named in a 400.

mod common;

use common::{Backend, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_and_update_time_filters() {
    let s = Server::start(Backend::Memory).await;
    s.post_accepted(
        "/runtime/webhooks/durabletask/orchestrators/Hello/finished-1",
        "\"x\"",
    )
    .await;
    s.wait_status("finished-1", |st| {
        st == taskhub::OrchestrationStatus::Completed
    })
    .await;
    let ids = |path: String| {
        let s = &s;
        async move {
            let r = s.get(&path).await;
            assert_eq!(r.status, 200, "{}", r.body);
            let v = r.json();
            v["instances"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["instanceId"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    let past = "2000-01-01T00:00:00Z";
    let future = "2999-01-01T00:00:00Z";
    assert_eq!(
        ids(format!("/api/instances?completedTimeFrom={past}")).await,
        ["finished-1"]
    );
    assert!(ids(format!("/api/instances?completedTimeTo={past}"))
        .await
        .is_empty());
    assert_eq!(
        ids(format!(
            "/api/instances?lastUpdatedTimeFrom={past}&lastUpdatedTimeTo={future}"
        ))
        .await,
        ["finished-1"]
    );
    let bad = s.get("/api/instances?lastUpdatedTimeFrom=soon").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("lastUpdatedTimeFrom"), "{}", bad.body);
    s.stop().await;
}
