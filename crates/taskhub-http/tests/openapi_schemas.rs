//! Every route in `taskhub_http::ROUTES`, called on a real server on 127.0.0.1, answers with
//! a status the generated OpenAPI document lists and a JSON body that fits the schema it
//! gives for that status; and the check fails on a wrong field.
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use common::schema::{check, response_schema};
use common::{wait, Backend, Server, DF};
use serde_json::{json, Value};
use taskhub::OrchestrationStatus as S;

/// The requests that exercise `(method, path)`: concrete path and body. Most routes get a
/// request that succeeds and one that fails.
fn requests(method: &str, path: &str, filled: &Filled) -> Vec<(String, &'static str)> {
    let Filled { letter, execution } = filled;
    let p = |s: &str| s.to_owned();
    let df = |s: &str| format!("{DF}{s}");
    match (method, path.strip_prefix(DF).unwrap_or(path)) {
        ("POST", "/orchestrators/{functionName}") => vec![(df("/orchestrators/Hello"), "null")],
        ("POST", "/orchestrators/{functionName}/{instanceId}") => vec![
            (df("/orchestrators/Hello/schema-new"), "null"),
            (df("/orchestrators/Waiter/w-1"), "null"),
            (df("/orchestrators/Hello/bad%01id"), "null"),
        ],
        ("GET", "/instances") => vec![
            (df("/instances?showInput=true"), ""),
            (df("/instances?top=0"), ""),
        ],
        ("DELETE", "/instances") => vec![
            (
                df("/instances?createdTimeFrom=2000-01-01T00:00:00Z&instanceIdPrefix=x-"),
                "",
            ),
            (
                df("/instances?createdTimeFrom=2000-01-01T00:00:00Z&instanceIdPrefix=none"),
                "",
            ),
        ],
        ("GET", "/instances/{instanceId}") => vec![
            (
                df("/instances/h-1?showHistory=true&showHistoryOutput=true"),
                "",
            ),
            (
                df("/instances/p-1?showHistory=true&showHistoryOutput=true"),
                "",
            ),
            (
                df("/instances/f-1?showHistory=true&returnInternalServerErrorOnFailure=true"),
                "",
            ),
            (df("/instances/w-1?showHistory=true"), ""),
            (df("/instances/nobody"), ""),
        ],
        ("DELETE", "/instances/{instanceId}") => {
            vec![(df("/instances/t-1"), ""), (df("/instances/w-1"), "")]
        }
        ("POST", "/instances/{instanceId}/raiseEvent/{eventName}") => vec![
            (df("/instances/w-1/raiseEvent/Other"), "1"),
            (df("/instances/h-1/raiseEvent/Go"), "1"),
        ],
        ("POST", "/instances/{instanceId}/terminate") => vec![
            (df("/instances/t-2/terminate?reason=done"), ""),
            (df("/instances/nobody/terminate"), ""),
        ],
        ("POST", "/instances/{instanceId}/suspend") => vec![(df("/instances/w-1/suspend"), "")],
        ("POST", "/instances/{instanceId}/resume") => vec![
            (df("/instances/w-1/resume"), ""),
            (df("/instances/h-1/resume"), ""),
        ],
        ("POST", "/instances/{instanceId}/restart") => vec![
            (df("/instances/h-1/restart"), ""),
            (df("/instances/nobody/restart"), ""),
        ],
        ("POST", "/instances/{instanceId}/rewind") => vec![
            (df("/instances/f-2/rewind?reason=schema"), ""),
            (df("/instances/h-1/rewind"), ""),
            (df("/instances/t-2/rewind"), ""),
            (df("/instances/nobody/rewind"), ""),
            (df("/instances/@Counter@c/rewind"), ""),
        ],
        ("GET", "/entities") => vec![(df("/entities?fetchState=true"), "")],
        ("GET", "/entities/{entityName}") => vec![
            (df("/entities/Counter?fetchState=true"), ""),
            (df("/entities/Counter"), ""),
        ],
        ("GET", "/entities/{entityName}/{entityKey}") => vec![
            (df("/entities/Counter/c"), ""),
            (df("/entities/Counter/none"), ""),
        ],
        ("POST", "/entities/{entityName}/{entityKey}") => {
            vec![(df("/entities/Counter/c?op=add"), "1")]
        }
        ("GET", "/api/hub") => vec![(p("/api/hub"), "")],
        ("GET", "/api/stats") => vec![(p("/api/stats"), "")],
        ("GET", "/api/instances") => vec![
            (p("/api/instances?order=newest&top=2"), ""),
            (p("/api/instances?includeEntities=true"), ""),
            (p("/api/instances?order=sideways"), ""),
        ],
        ("GET", "/api/instances/{instanceId}") => vec![
            (p("/api/instances/p-1"), ""),
            (p("/api/instances/f-1"), ""),
            (p("/api/instances/nobody"), ""),
        ],
        ("GET", "/api/instances/{instanceId}/executions/{executionId}") => {
            vec![
                (format!("/api/instances/h-1/executions/{execution}"), ""),
                (p("/api/instances/h-1/executions/nope"), ""),
            ]
        }
        ("GET", "/api/entities") => vec![
            (p("/api/entities?includeStateless=true"), ""),
            (p("/api/entities?top=1"), ""),
        ],
        ("POST", "/api/entities/clean") => vec![
            (p("/api/entities/clean"), "{\"minIdleSeconds\": 0}"),
            (p("/api/entities/clean"), "[]"),
        ],
        ("GET", "/api/entities/{entityId}") => vec![
            (p("/api/entities/@Counter@c"), ""),
            (p("/api/entities/@Counter@none"), ""),
        ],
        ("DELETE", "/api/entities/{entityId}") => vec![
            (p("/api/entities/@Counter@gone"), ""),
            (p("/api/entities/@Counter@none"), ""),
        ],
        ("POST", "/api/entities/{entityId}/signal") => vec![
            (p("/api/entities/@Counter@c/signal?op=add"), "2"),
            (p("/api/entities/@Counter@c/signal"), "2"),
        ],
        ("GET", "/api/partitions") => vec![(p("/api/partitions"), "")],
        ("POST", "/api/partitions/{partition}/bump") => vec![
            (p("/api/partitions/3/bump"), ""),
            (p("/api/partitions/99/bump"), ""),
        ],
        ("POST", "/api/partitions/{partition}/offline") => {
            vec![(p("/api/partitions/3/offline"), "")]
        }
        ("POST", "/api/partitions/{partition}/online") => vec![
            (p("/api/partitions/3/online"), ""),
            (p("/api/partitions/x/online"), ""),
        ],
        ("GET", "/api/workers") => vec![(p("/api/workers"), "")],
        ("POST", "/api/workers/{name}/prohibit") => vec![(p("/api/workers/w9/prohibit"), "")],
        ("POST", "/api/workers/{name}/allow") => vec![(p("/api/workers/w9/allow"), "")],
        ("GET", "/api/scale") => vec![
            (p("/api/scale?intervalMs=0"), ""),
            (p("/api/scale?samples=x"), ""),
        ],
        ("GET", "/api/dead-letters") => vec![(p("/api/dead-letters"), "")],
        ("POST", "/api/dead-letters/{id}/replay") => vec![
            (format!("/api/dead-letters/{letter}/replay"), ""),
            (p("/api/dead-letters/none/replay"), ""),
        ],
        (
            "GET",
            "/api/openapi.json" | "/metrics" | "/" | "/app.js" | "/style.css" | "/favicon.svg",
        ) => {
            vec![(p(path), "")]
        }
        _ => panic!("no request for {method} {path}: add one here"),
    }
}

/// What the requests read besides fixed names.
struct Filled {
    /// The dead letter's ID.
    letter: String,
    /// The execution ID of `h-1`.
    execution: String,
}

/// Runs the instances, entities and the dead letter the requests read.
async fn fill(s: &Server) -> Filled {
    for (name, id) in [
        ("Hello", "h-1"),
        ("Parent", "p-1"),
        ("Fails", "f-1"),
        ("Fails", "f-2"),
        ("Waiter", "w-1"),
        ("Waiter", "t-1"),
        ("Waiter", "t-2"),
        ("Echo", "e-1"),
        ("Hello", "x-1"),
    ] {
        let input = if name == "Echo" {
            "{\"big\":12345678901234567890123}"
        } else {
            "null"
        };
        s.post_accepted(&format!("{DF}/orchestrators/{name}/{id}"), input)
            .await;
    }
    for id in ["h-1", "p-1", "e-1", "x-1"] {
        s.wait_status(id, |st| st == S::Completed).await;
    }
    for id in ["f-1", "f-2"] {
        s.wait_status(id, |st| st == S::Failed).await;
    }
    s.post_accepted(&format!("{DF}/instances/t-1/terminate"), "")
        .await;
    s.wait_status("t-1", |st| st == S::Terminated).await;
    for key in ["c", "gone"] {
        s.post_accepted(&format!("/api/entities/@Counter@{key}/signal?op=add"), "5")
            .await;
    }
    wait::until_some("the counter's state", || async {
        (s.get("/api/entities/@Counter@gone").await.status == 200).then_some(())
    })
    .await;
    let execution = s.get("/api/instances/h-1").await.json()["instance"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let letter = s.add_dead_letter("not a message").await;
    Filled { letter, execution }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_as_the_document_says() {
    let s = Server::start_with(Backend::Memory, true, |c| {
        c.with_metrics(std::sync::Arc::new(|| "taskhub_turns_total 7\n".to_owned()))
    })
    .await;
    let doc = s.get("/api/openapi.json").await.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let filled = fill(&s).await;
    let mut failures = Vec::new();
    let mut checked = 0;
    for (method, path) in taskhub_http::ROUTES {
        for (concrete, body) in requests(method, path, &filled) {
            let r = s
                .call(
                    method,
                    &concrete,
                    &[("content-type", "application/json")],
                    body,
                )
                .await;
            let what = format!("{method} {concrete} -> {}", r.status);
            match response_schema(&doc, method, path, r.status) {
                Err(e) => failures.push(format!("{what}: {e}: {}", r.body)),
                Ok(None) => {}
                Ok(Some(schema)) => {
                    let Ok(v) = serde_json::from_str::<Value>(&r.body) else {
                        failures.push(format!("{what}: not JSON: {}", r.body));
                        continue;
                    };
                    checked += 1;
                    for e in check(&doc, schema, &v) {
                        failures.push(format!("{what}: {e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 60, "only {checked} JSON answers were checked");
    // A payload is shown as its stored text: every digit of a large integer.
    let r = s.get(&format!("{DF}/instances/e-1")).await;
    assert!(r.body.contains("12345678901234567890123"), "{}", r.body);
    let r = s.get("/api/instances/e-1").await;
    assert!(r.body.contains("12345678901234567890123"), "{}", r.body);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_fails_on_a_wrong_field() {
    let s = Server::start_with(Backend::Memory, false, |c| c).await;
    let doc = s.get("/api/openapi.json").await.json();
    let path = "/api/hub";
    let schema = response_schema(&doc, "GET", path, 200).unwrap().unwrap();
    let good = s.get(path).await.json();
    assert_eq!(check(&doc, schema, &good), Vec::<String>::new());
    // A renamed field: the real one is missing and the new one is unknown.
    let mut renamed = good.clone();
    let v = renamed
        .as_object_mut()
        .unwrap()
        .remove("partitionCount")
        .unwrap();
    renamed["partition_count"] = v;
    let errors = check(&doc, schema, &renamed);
    assert_eq!(errors.len(), 2, "{errors:?}");
    // A field of the wrong type.
    let mut wrong = good.clone();
    wrong["worker"] = json!("yes");
    assert_eq!(check(&doc, schema, &wrong).len(), 1);
    // Inside an array and behind a $ref.
    let schema = response_schema(&doc, "GET", "/api/partitions", 200)
        .unwrap()
        .unwrap();
    let mut parts = s.get("/api/partitions").await.json();
    assert!(check(&doc, schema, &parts).is_empty());
    parts[0]["epoch"] = json!(null);
    assert_eq!(check(&doc, schema, &parts).len(), 1);
    // A status the route does not list.
    assert!(response_schema(&doc, "GET", "/", 404).is_err());
    s.stop().await;
}
