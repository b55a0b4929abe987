//! Durable entities over HTTP on a real worker: the Durable Functions routes (signal, get the
//! state, list with `fetchState` and paging), Taskhub's own (list, detail with the lock holder
//! and queued requests, signal, delete, clean-up), typed 400s for bad IDs, names and
//! operations, the token on the mutating routes, and instance lists that leave entities out
//! unless `includeEntities=true` (with full pages).
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use common::{strs, wait, Backend, Resp, Server, DF};
use serde_json::{json, Value};

/// Waits until `GET path` answers 200 with a body for which `ok` holds; returns it.
async fn wait_json(s: &Server, path: &str, ok: impl Fn(&Value) -> bool) -> Value {
    wait::until_some(path, || async {
        let r = s.get(path).await;
        (r.status == 200 && ok(&r.json())).then(|| r.json())
    })
    .await
}

fn invalid(r: &Resp, field: &str) {
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["code"], "invalid", "{}", r.body);
    assert_eq!(r.json()["field"], field, "{}", r.body);
}

async fn durable_functions_entity_routes(b: Backend) {
    let s = Server::start(b).await;
    for (key, n) in [("a", 1), ("b", 2), ("c", 3)] {
        let r = s
            .post(
                &format!("{DF}/entities/Counter/{key}?op=add"),
                &n.to_string(),
            )
            .await;
        assert_eq!((r.status, r.body.as_str()), (202, ""), "{}", r.body);
    }
    let r = s
        .post(&format!("{DF}/entities/Counter/a?op=add"), "4")
        .await;
    assert_eq!(r.status, 202);
    let state = wait_json(&s, &format!("{DF}/entities/Counter/a"), |v| *v == json!(5)).await;
    assert_eq!(state, json!(5));
    // Every signal applied before the list is read (a backend may apply them in any order).
    wait_json(&s, &format!("{DF}/entities/Counter/b"), |v| *v == json!(2)).await;
    wait_json(&s, &format!("{DF}/entities/Counter/c"), |v| *v == json!(3)).await;
    assert_eq!(
        s.get(&format!("{DF}/entities/Counter/nobody")).await.status,
        404
    );

    // The list: by name, with the state on request, paged by x-ms-continuation-token.
    let r = s
        .get(&format!("{DF}/entities/Counter?fetchState=true"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = r.json();
    assert_eq!(listed.as_array().unwrap().len(), 3, "{listed}");
    assert_eq!(
        listed[0]["entityId"],
        json!({"name": "Counter", "key": "a"})
    );
    assert_eq!(listed[0]["state"], json!(5));
    assert!(
        listed[0]["lastOperationTime"].as_str().is_some(),
        "{listed}"
    );
    let bare = s.get(&format!("{DF}/entities/Counter")).await.json();
    assert!(bare[0].get("state").is_none(), "{bare}");
    let first = s.get(&format!("{DF}/entities/Counter?top=2")).await;
    assert_eq!(first.json().as_array().unwrap().len(), 2);
    let token = first.header("x-ms-continuation-token").unwrap().to_owned();
    let second = s
        .call(
            "GET",
            &format!("{DF}/entities/Counter?top=2"),
            &[("x-ms-continuation-token", token.as_str())],
            "",
        )
        .await;
    assert_eq!(second.json()[0]["entityId"]["key"], "c", "{}", second.body);
    assert!(second.header("x-ms-continuation-token").is_none());
    assert_eq!(
        s.get(&format!("{DF}/entities"))
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert!(s
        .get(&format!("{DF}/entities/Other"))
        .await
        .json()
        .as_array()
        .unwrap()
        .is_empty());
    let future = s
        .get(&format!(
            "{DF}/entities/Counter?lastOperationTimeFrom=2999-01-01T00:00:00Z"
        ))
        .await;
    assert!(
        future.json().as_array().unwrap().is_empty(),
        "{}",
        future.body
    );

    // Typed 400s.
    invalid(
        &s.post(&format!("{DF}/entities/Counter/a"), "1").await,
        "op",
    );
    invalid(
        &s.post(&format!("{DF}/entities/Coun@ter/a?op=add"), "1")
            .await,
        "entityName",
    );
    invalid(
        &s.get(&format!("{DF}/entities/Coun@ter/a")).await,
        "entityName",
    );
    invalid(
        &s.get(&format!("{DF}/entities/Counter/a%01b")).await,
        "entityKey",
    );
    invalid(
        &s.post(&format!("{DF}/entities/Counter/a?op=add"), "{nope")
            .await,
        "body",
    );
    let text = s
        .call(
            "POST",
            &format!("{DF}/entities/Counter/a?op=add"),
            &[("content-type", "text/plain")],
            "1",
        )
        .await;
    invalid(&text, "body");
    invalid(&s.get(&format!("{DF}/entities/Counter?top=0")).await, "top");
    s.stop().await;
}

async fn own_entity_routes(b: Backend) {
    let s = Server::start(b).await;
    let r = s
        .post_accepted("/api/entities/%40Counter%40x/signal?op=add", "2")
        .await;
    assert_eq!(r.json(), json!({"entityId": "@Counter@x", "op": "add"}));
    let e = wait_json(&s, "/api/entities/@Counter@x", |v| v["state"] == json!(2)).await;
    assert_eq!(
        (
            e["name"].as_str(),
            e["key"].as_str(),
            e["hasState"].as_bool()
        ),
        (Some("Counter"), Some("x"), Some(true)),
        "{e}"
    );
    assert_eq!(
        (e["lockedBy"].clone(), e["queued"].clone()),
        (Value::Null, json!(0))
    );

    // A critical section holds a counter: the detail names the holder and counts what waits.
    s.post_accepted(&format!("{DF}/orchestrators/Locker/locker-1"), "\"held\"")
        .await;
    wait_json(&s, "/api/entities/@Counter@held", |v| {
        v["lockedBy"] == "locker-1"
    })
    .await;
    assert_eq!(
        s.post("/api/entities/@Counter@held/signal?op=add", "7")
            .await
            .status,
        202
    );
    let held = wait_json(&s, "/api/entities/@Counter@held", |v| v["queued"] == 1).await;
    assert_eq!(held["hasState"], false, "{held}");
    assert_eq!(
        s.post(&format!("{DF}/instances/locker-1/raiseEvent/Go"), "null")
            .await
            .status,
        202
    );
    let done = wait_json(&s, "/api/entities/@Counter@held", |v| {
        v["state"] == json!(7)
    })
    .await;
    assert_eq!(
        (done["lockedBy"].clone(), done["queued"].clone()),
        (Value::Null, json!(0))
    );

    // The list: by name, paged; stateless entities only on request.
    let listed = s.get("/api/entities?name=Counter").await.json();
    assert_eq!(
        strs(&listed["entities"], "entityId"),
        ["@Counter@held", "@Counter@x"],
        "{listed}"
    );
    let page = s.get("/api/entities?top=1").await.json();
    assert_eq!(page["entities"].as_array().unwrap().len(), 1);
    let next = s.next_page("/api/entities?top=1", &page).await;
    assert_eq!(next["entities"][0]["entityId"], "@Counter@x", "{next}");

    // Delete the state: the entity is then absent from the default list, kept as a row
    // until clean-up removes it.
    let r = s.delete("/api/entities/@Counter@x").await;
    r.assert_says(202, "entityId", "@Counter@x");
    wait_json(&s, "/api/entities/@Counter@x", |v| v["hasState"] == false).await;
    let listed = s.get("/api/entities").await.json();
    assert_eq!(listed["entities"].as_array().unwrap().len(), 1, "{listed}");
    let all = s.get("/api/entities?includeStateless=true").await.json();
    assert_eq!(all["entities"].as_array().unwrap().len(), 2, "{all}");
    let r = s
        .post("/api/entities/clean", "{\"minIdleSeconds\": 0}")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["removed"], 1, "{}", r.body);
    assert_eq!(s.get("/api/entities/@Counter@x").await.status, 404);
    assert_eq!(s.delete("/api/entities/@Counter@x").await.status, 404);

    // Typed 400s.
    invalid(&s.get("/api/entities/Counter").await, "entityId");
    invalid(&s.delete("/api/entities/@Co").await, "entityId");
    invalid(&s.post("/api/entities/@Counter@x/signal", "1").await, "op");
    invalid(
        &s.post("/api/entities/@Counter@x/signal?op=add", "{nope")
            .await,
        "body",
    );
    invalid(&s.get("/api/entities?name=a@b").await, "name");
    invalid(
        &s.post("/api/entities/clean", "{\"minIdleSeconds\": \"soon\"}")
            .await,
        "body",
    );
    s.stop().await;
}

async fn instance_lists_leave_entities_out_unless_asked(b: Backend) {
    let s = Server::start(b).await;
    for key in ["a", "b"] {
        assert_eq!(
            s.post(&format!("{DF}/entities/Counter/{key}?op=add"), "1")
                .await
                .status,
            202
        );
    }
    wait_json(&s, "/api/entities", |v| {
        v["entities"].as_array().is_some_and(|a| a.len() == 2)
    })
    .await;
    // Orchestrations on either side of the entities in ID order.
    for id in ["0-first", "z-last"] {
        s.post_accepted(&format!("{DF}/orchestrators/Hello/{id}"), "null")
            .await;
    }
    let own = s.get("/api/instances").await.json();
    assert_eq!(strs(&own["instances"], "instanceId"), ["0-first", "z-last"]);
    let with = s.get("/api/instances?includeEntities=true").await.json();
    assert_eq!(
        strs(&with["instances"], "instanceId"),
        ["0-first", "@Counter@a", "@Counter@b", "z-last"]
    );
    // A page of one after "0-first" is "z-last": the filter is the store's.
    let first = s.get("/api/instances?top=1").await.json();
    let second = s.next_page("/api/instances?top=1", &first).await;
    assert_eq!(strs(&second["instances"], "instanceId"), ["z-last"]);

    let df = s.get(&format!("{DF}/instances")).await.json();
    assert_eq!(strs(&df, "instanceId"), ["0-first", "z-last"]);
    let df_with = s
        .get(&format!("{DF}/instances?includeEntities=true"))
        .await
        .json();
    assert_eq!(df_with.as_array().unwrap().len(), 4, "{df_with}");
    invalid(
        &s.get("/api/instances?includeEntities=maybe").await,
        "includeEntities",
    );
    s.stop().await;
}

taskhub_test_support::backend_matrix!(
    [every]
    durable_functions_entity_routes,
    own_entity_routes,
    instance_lists_leave_entities_out_unless_asked
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_entity_routes_need_the_token() {
    let s = Server::start_with(Backend::Memory, false, |c| {
        c.with_token(Some("t0ken".into()))
    })
    .await;
    for (method, path) in [
        ("POST", format!("{DF}/entities/Counter/a?op=add")),
        ("POST", "/api/entities/@Counter@a/signal?op=add".to_owned()),
        ("DELETE", "/api/entities/@Counter@a".to_owned()),
        ("POST", "/api/entities/clean".to_owned()),
        ("GET", "/api/entities".to_owned()),
    ] {
        let r = s
            .call(method, &path, &[("content-type", "application/json")], "1")
            .await;
        assert_eq!(r.status, 401, "{method} {path}: {}", r.body);
    }
    let r = s
        .call(
            "POST",
            &format!("{DF}/entities/Counter/a?op=add"),
            &[
                ("content-type", "application/json"),
                ("authorization", "Bearer t0ken"),
            ],
            "1",
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    s.stop().await;
}
