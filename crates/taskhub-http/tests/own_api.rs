//! Taskhub's own routes (`/api/...`, `/metrics`, the OpenAPI document, the dashboard files)
//! against a real server on 127.0.0.1, on the memory, SQLite and Azure (Azurite) backends.
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;

use common::{strs, Backend, Server, DF};
use taskhub::OrchestrationStatus as S;
use taskhub_storage::QueueName;

async fn instances_history_and_timeline(b: Backend) {
    let s = Server::start(b).await;
    assert_eq!(
        s.post(&format!("{DF}/orchestrators/Parent/p-1"), "null")
            .await
            .status,
        202
    );
    assert_eq!(
        s.post(&format!("{DF}/orchestrators/Waiter/w-1"), "null")
            .await
            .status,
        202
    );
    s.wait_status("p-1", S::is_terminal).await;

    let r = s.get("/api/instances/p-1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.json();
    assert_eq!(d["instance"]["runtimeStatus"], "Completed");
    assert_eq!(d["instance"]["output"], 3);
    let children = d["children"].as_array().unwrap();
    assert_eq!(children.len(), 1);
    let child = children[0]["instanceId"].as_str().unwrap().to_owned();
    assert_eq!(strs(&d["timeline"], "kind"), ["suborchestration", "timer"]);
    for t in d["timeline"].as_array().unwrap() {
        assert!(
            t["endMs"].as_u64().unwrap() >= t["startMs"].as_u64().unwrap(),
            "{t}"
        );
    }
    assert!(d["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["eventType"] == "TimerFired"));
    // The child links back to its parent and has three activity bars.
    let c = s.get(&format!("/api/instances/{child}")).await.json();
    assert_eq!(c["parent"]["instanceId"], "p-1");
    let acts = c["timeline"].as_array().unwrap();
    assert_eq!(acts.len(), 3);
    assert!(acts
        .iter()
        .all(|a| a["kind"] == "activity" && a["name"] == "SayHello" && a["status"] == "completed"));
    assert_eq!(s.get("/api/instances/nobody").await.status, 404);
    assert_eq!(s.get("/api/instances/a%2Fb").await.status, 400);

    // The list: every filter, and paging by continuationToken.
    let l = s.get("/api/instances?name=Waiter").await.json();
    assert_eq!(strs(&l["instances"], "instanceId"), ["w-1"]);
    let l = s
        .get("/api/instances?runtimeStatus=Completed&name=Parent")
        .await
        .json();
    assert_eq!(l["instances"].as_array().unwrap().len(), 1);
    let first = s.get("/api/instances?top=1").await.json();
    let second = s.next_page("/api/instances?top=1", &first).await;
    assert_ne!(
        first["instances"][0]["instanceId"],
        second["instances"][0]["instanceId"]
    );
    assert_eq!(
        s.get("/api/instances?continuationToken=%25zz").await.status,
        400
    );
    assert_eq!(s.get("/api/instances?createdTimeTo=soon").await.status, 400);
    s.stop().await;
}

async fn partitions_workers_scale_and_stats(b: Backend) {
    let s = Server::start(b).await;
    let worker = s.worker.as_ref().unwrap().name().to_owned();
    // Wait until the worker holds partitions, then see them.
    let parts = common::wait::until_some("partitions owned", || async {
        let p = s.get("/api/partitions").await.json();
        p.as_array()
            .unwrap()
            .iter()
            .all(|x| x["owner"].is_string())
            .then_some(p)
    })
    .await;
    assert_eq!(parts.as_array().unwrap().len(), 4);
    let p0 = &parts[0];
    for k in [
        "partition",
        "owner",
        "nextOwner",
        "epoch",
        "state",
        "queueLength",
        "oldestMessageAgeMs",
        "leaseAgeMs",
    ] {
        assert!(p0.get(k).is_some(), "{k} missing: {p0}");
    }
    assert_eq!(p0["state"], "owned");
    let epoch = p0["epoch"].as_u64().unwrap();
    let r = s.post("/api/partitions/0/bump", "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["epoch"].as_u64().unwrap(), epoch + 1);
    assert_eq!(r.json()["owner"], serde_json::Value::Null);
    assert_eq!(
        s.post("/api/partitions/1/offline", "").await.json()["offline"],
        true
    );
    assert_eq!(
        s.post("/api/partitions/1/online", "").await.json()["offline"],
        false
    );
    assert_eq!(s.post("/api/partitions/99/bump", "").await.status, 404);
    assert_eq!(s.post("/api/partitions/x/bump", "").await.status, 400);
    assert_eq!(s.post("/api/partitions/0/explode", "").await.status, 404);

    let w = s.get("/api/workers").await.json();
    assert!(
        w["workers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == worker.as_str()),
        "{w}"
    );
    let r = s.post("/api/workers/other-7/prohibit", "").await.json();
    assert_eq!(r["prohibited"], serde_json::json!(["other-7"]));
    let w = s.get("/api/workers").await.json();
    assert!(w["workers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["name"] == "other-7" && x["prohibited"] == true));
    assert_eq!(
        s.post("/api/workers/other-7/allow", "").await.json()["prohibited"],
        serde_json::json!([])
    );

    let sc = s.get("/api/scale").await;
    assert_eq!(sc.status, 200, "{}", sc.body);
    assert!(sc.json()["recommended_workers"].is_u64());
    assert_eq!(s.get("/api/scale?samples=11").await.status, 400);

    let st = s.get("/api/stats").await.json();
    assert!(st["controlQueueLength"].is_u64() && st["workItemQueueLength"].is_u64());
    assert!(st["worker"]["turns"].is_u64(), "{st}");
    let hub = s.get("/api/hub").await.json();
    assert_eq!(
        (hub["partitionCount"].as_u64(), hub["worker"].as_bool()),
        (Some(4), Some(true))
    );
    s.stop().await;
}

async fn dead_letters_list_and_replay(b: Backend) {
    // No worker: the replayed letter stays in its queue where the test can see it.
    let s = Server::start_with(b, false, |c| c).await;
    assert_eq!(
        s.get("/api/dead-letters").await.json(),
        serde_json::json!([])
    );
    let store = s.hub.store();
    let id = s.add_dead_letter("<script>not a message</script>").await;
    let l = s.get("/api/dead-letters").await.json();
    assert_eq!(l[0]["id"], id.as_str());
    assert_eq!(
        (l[0]["queue"].as_str(), l[0]["dequeueCount"].as_u64()),
        (Some("workitems"), Some(5))
    );
    assert_eq!(l[0]["deadLetteredTime"], "2023-11-14T22:13:20.000Z");
    let r = s.post(&format!("/api/dead-letters/{id}/replay"), "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(store.stats(QueueName::WorkItems).await.unwrap().length, 1);
    assert_eq!(
        s.get("/api/dead-letters").await.json(),
        serde_json::json!([])
    );
    assert_eq!(
        s.post(&format!("/api/dead-letters/{id}/replay"), "")
            .await
            .status,
        404
    );
    s.stop().await;
}

async fn every_route_is_served_and_documented(b: Backend) {
    let s = Server::start_with(b, false, |c| {
        c.with_metrics(Arc::new(|| "taskhub_turns_total 7\n".to_owned()))
    })
    .await;
    for (method, path) in taskhub_http::ROUTES {
        let concrete = path
            .replace("{functionName}", "Nope")
            .replace("{instanceId}", "nobody")
            .replace("{eventName}", "E")
            .replace("{partition}", "0")
            .replace("{name}", "w")
            .replace("{id}", "none")
            .replace("{entityId}", "@E@k")
            .replace("{entityName}", "E")
            .replace("{entityKey}", "k");
        let r = s
            .call(
                method,
                &concrete,
                &[("content-type", "application/json")],
                "null",
            )
            .await;
        let code = serde_json::from_str::<serde_json::Value>(&r.body)
            .ok()
            .and_then(|v| v["code"].as_str().map(str::to_owned));
        assert!(
            r.status != 405 && code.as_deref() != Some("no_route"),
            "{method} {path}: {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(s.get("/nope").await.json()["code"], "no_route");
    let doc = s.get("/api/openapi.json").await.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let m = s.get("/metrics").await;
    assert_eq!(
        (m.status, m.body.as_str()),
        (200, "taskhub_turns_total 7\n")
    );
    assert!(m.header("content-type").unwrap().starts_with("text/plain"));
    let page = s.get("/").await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page.header("content-security-policy").is_some());
    assert_eq!(s.get("/app.js").await.status, 200);
    s.stop().await;
    // Without a renderer, /metrics is a 404.
    let s = Server::start_with(b, false, |c| c).await;
    assert_eq!(s.get("/metrics").await.status, 404);
    s.stop().await;
}

taskhub_test_support::backend_matrix!(
    [every]
    instances_history_and_timeline,
    partitions_workers_scale_and_stats,
    dead_letters_list_and_replay,
    every_route_is_served_and_documented
);
