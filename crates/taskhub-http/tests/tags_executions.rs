//! `/api/instances` shows tags and filters on them (`tag=KEY=VALUE`, repeatable, 400 naming
//! `tag` for a bad one); `/api/instances/{id}/executions/{executionId}` shows an execution
//! that continue-as-new replaced, the current one, and 404 for an unknown one.

mod common;

use std::time::Duration;

use common::{Backend, Server};
use taskhub::{
    InstanceId, OrchestrationContext, OrchestrationStatus, Registry, StartOptions, Tags, Worker,
};

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration(
        "Countdown",
        |ctx: OrchestrationContext, n: u32| async move {
            if n >= 2 {
                return Ok(n);
            }
            ctx.continue_as_new(n + 1).await
        },
    );
    reg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_executions_over_http() {
    for backend in [Backend::Memory, Backend::Sqlite] {
        let s = Server::start_with(backend, false, |c| c).await;
        let worker = Worker::start(&s.hub, registry()).await.unwrap();
        let client = s.hub.client();
        for (id, team) in [("count-a", "ops"), ("count-b", "web")] {
            let tags: Tags = [("team".to_owned(), team.to_owned())].into();
            let id = InstanceId::new(id).unwrap();
            client
                .start_with(
                    "Countdown",
                    0u32,
                    StartOptions {
                        instance_id: Some(id.clone()),
                        tags,
                        ..StartOptions::default()
                    },
                )
                .await
                .unwrap();
            let done = client
                .wait_for_completion(&id, Duration::from_secs(60))
                .await
                .unwrap();
            assert_eq!(done.status(), OrchestrationStatus::Completed);
        }

        let r = s.get("/api/instances?tag=team%3Dops").await;
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        let listed = v["instances"].as_array().unwrap();
        assert_eq!(listed.len(), 1, "{v}");
        assert_eq!(listed[0]["instanceId"], "count-a");
        assert_eq!(listed[0]["tags"]["team"], "ops");
        let r = s
            .get("/api/instances?tag=team%3Dops&tag=env%3Dprod")
            .await
            .json();
        assert!(r["instances"].as_array().unwrap().is_empty(), "{r}");
        let bad = s.get("/api/instances?tag=nokey").await;
        assert_eq!(bad.status, 400, "{}", bad.body);
        assert!(bad.body.contains("tag"), "{}", bad.body);

        let detail = s.get("/api/instances/count-a").await.json();
        let row = &detail["instance"];
        let earlier = row["previousExecutions"].as_array().unwrap();
        assert_eq!(earlier.len(), 2, "{row}");
        let first = earlier[0]["executionId"].as_str().unwrap();
        let r = s
            .get(&format!("/api/instances/count-a/executions/{first}"))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let e = r.json();
        assert_eq!(e["runtimeStatus"], "ContinuedAsNew");
        assert_eq!(e["input"], 0);
        assert_eq!(e["output"], 1);
        assert_eq!(e["current"], false);
        let current = row["executionId"].as_str().unwrap();
        let e = s
            .get(&format!("/api/instances/count-a/executions/{current}"))
            .await
            .json();
        assert_eq!(e["runtimeStatus"], "Completed");
        assert_eq!(e["output"], 2);
        let missing = s.get("/api/instances/count-a/executions/nope").await;
        assert_eq!(missing.status, 404, "{}", missing.body);
        assert!(missing.body.contains("nope"), "{}", missing.body);
        worker.shutdown().await;
        s.stop().await;
    }
}

/// The Durable Functions start route takes the instance's tags as `tag=KEY=VALUE` (Taskhub's
/// extension, repeatable); a bad tag is a 400 naming `tag`, and nothing is started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_over_http_sets_tags() {
    let s = Server::start_with(Backend::Memory, false, |c| c).await;
    let start = "/runtime/webhooks/durabletask/orchestrators/Countdown";
    s.post_accepted(
        &format!("{start}/tagged-1?tag=team%3Dops&tag=env%3Dprod"),
        "2",
    )
    .await;
    let row = s.get("/api/instances/tagged-1").await.json();
    assert_eq!(row["instance"]["tags"]["team"], "ops", "{row}");
    assert_eq!(row["instance"]["tags"]["env"], "prod", "{row}");
    let listed = s.get("/api/instances?tag=env%3Dprod").await.json();
    assert_eq!(listed["instances"][0]["instanceId"], "tagged-1", "{listed}");

    let bad = s.post(&format!("{start}/tagged-2?tag=nokey"), "2").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("tag"), "{}", bad.body);
    assert_eq!(s.get("/api/instances/tagged-2").await.status, 404);
}
