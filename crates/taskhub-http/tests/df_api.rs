//! The Durable Functions routes against a real server on 127.0.0.1, on the memory, SQLite and
//! Azure (Azurite) backends: shapes, headers and every status code.
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use common::{Backend, Server, DF};
use taskhub::OrchestrationStatus as S;

async fn start(s: &Server, name: &str, id: &str, body: &str) -> serde_json::Value {
    let r = s
        .post_accepted(&format!("{DF}/orchestrators/{name}/{id}"), body)
        .await;
    r.json()
}

async fn start_status_and_history(b: Backend) {
    let s = Server::start(b).await;
    // Start with a random ID: 202, Location, Retry-After: 10, the management URLs.
    let r = s
        .post_accepted(&format!("{DF}/orchestrators/Hello"), "\"in\"")
        .await;
    let m = r.json();
    let id = m["id"].as_str().unwrap().to_owned();
    let status_url = format!("{}{DF}/instances/{id}", s.url());
    assert_eq!(r.header("location"), Some(status_url.as_str()));
    assert_eq!(r.header("retry-after"), Some("10"));
    assert_eq!(m["statusQueryGetUri"], status_url);
    assert_eq!(m["purgeHistoryDeleteUri"], status_url);
    assert_eq!(
        m["sendEventPostUri"],
        format!("{status_url}/raiseEvent/{{eventName}}")
    );
    assert_eq!(
        m["terminatePostUri"],
        format!("{status_url}/terminate?reason={{text}}")
    );
    assert_eq!(
        m["suspendPostUri"],
        format!("{status_url}/suspend?reason={{text}}")
    );
    assert_eq!(
        m["resumePostUri"],
        format!("{status_url}/resume?reason={{text}}")
    );
    assert_eq!(m["restartPostUri"], format!("{status_url}/restart"));
    assert_eq!(
        m["rewindPostUri"],
        format!("{status_url}/rewind?reason={{text}}")
    );

    s.wait_status(&id, S::is_terminal).await;
    let r = s.get(&format!("{DF}/instances/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let st = r.json();
    assert_eq!(st["runtimeStatus"], "Completed");
    assert_eq!(st["name"], "Hello");
    assert_eq!(st["instanceId"], id.as_str());
    assert_eq!(st["input"], "in");
    assert_eq!(
        st["output"],
        serde_json::json!(["Hello Tokyo!", "Hello Seattle!", "Hello London!"])
    );
    assert!(st["createdTime"].as_str().unwrap().ends_with('Z'));
    assert!(st.get("historyEvents").is_none(), "history only on request");
    assert!(r.header("location").is_none());

    let h = s
        .get(&format!(
            "{DF}/instances/{id}?showHistory=true&showInput=false"
        ))
        .await
        .json();
    assert_eq!(h["input"], serde_json::Value::Null);
    let events = h["historyEvents"].as_array().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["EventType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"ExecutionStarted"));
    assert_eq!(kinds.last(), Some(&"ExecutionCompleted"));
    assert!(
        !kinds.contains(&"OrchestratorStarted") && !kinds.contains(&"TaskScheduled"),
        "{kinds:?}"
    );
    let done: Vec<_> = events
        .iter()
        .filter(|e| e["EventType"] == "TaskCompleted")
        .collect();
    assert_eq!(done.len(), 3);
    assert_eq!(done[0]["FunctionName"], "SayHello");
    assert!(done[0]["ScheduledTime"].is_string() && done[0].get("Result").is_none());
    let h = s
        .get(&format!(
            "{DF}/instances/{id}?showHistory=true&showHistoryOutput=true"
        ))
        .await
        .json();
    let done: Vec<_> = h["historyEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["EventType"] == "TaskCompleted")
        .cloned()
        .collect();
    assert_eq!(done[0]["Result"], "Hello Tokyo!");

    // Explicit ID; in use while active: 409. Bad ID, bad name, bad JSON: 400 naming the field.
    start(&s, "Waiter", "w-1", "null").await;
    let r = s
        .post(&format!("{DF}/orchestrators/Waiter/w-1"), "null")
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    let r = s
        .post(&format!("{DF}/orchestrators/Hello/a%2Fb"), "null")
        .await;
    r.assert_says(400, "field", "instanceId");
    let r = s
        .post(&format!("{DF}/orchestrators/Hello/x"), "{nope")
        .await;
    r.assert_says(400, "field", "body");
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    let long = "n".repeat(300);
    let r = s.post(&format!("{DF}/orchestrators/{long}"), "null").await;
    r.assert_says(400, "field", "functionName");

    // Running: 202 with Location and Retry-After: 5, custom status shown.
    s.wait_status("w-1", |st| st == S::Running).await;
    let r = s.get(&format!("{DF}/instances/w-1")).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("5"));
    assert_eq!(
        r.header("location"),
        Some(format!("{}{DF}/instances/w-1", s.url()).as_str())
    );
    assert_eq!(r.json()["customStatus"], "waiting for Go");
    assert_eq!(r.json()["output"], serde_json::Value::Null);

    // Unknown: 404; invalid: 400.
    assert_eq!(s.get(&format!("{DF}/instances/nobody")).await.status, 404);
    assert_eq!(s.get(&format!("{DF}/instances/a%23b")).await.status, 400);
    assert_eq!(
        s.get(&format!("{DF}/instances/w-1?showHistory=maybe"))
            .await
            .status,
        400
    );

    // Failed: 200 with the message as output, 500 on request.
    start(&s, "Fails", "f-1", "null").await;
    s.wait_status("f-1", S::is_terminal).await;
    let r = s.get(&format!("{DF}/instances/f-1")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["runtimeStatus"], "Failed");
    assert!(
        r.json()["output"].as_str().unwrap().contains("boom"),
        "{}",
        r.body
    );
    let r = s
        .get(&format!(
            "{DF}/instances/f-1?returnInternalServerErrorOnFailure=true"
        ))
        .await;
    assert_eq!(r.status, 500);
    s.stop().await;
}

async fn raise_terminate_suspend_resume_restart(b: Backend) {
    let s = Server::start(b).await;
    start(&s, "Waiter", "r-1", "null").await;
    let url = format!("{DF}/instances/r-1");
    let raise = format!("{url}/raiseEvent/Go");
    // Content type and JSON are checked; the event name too.
    let r = s
        .call("POST", &raise, &[("content-type", "text/plain")], "1")
        .await;
    r.assert_says(400, "field", "body");
    let r = s.post(&raise, "{nope").await;
    assert_eq!(r.status, 400);
    let long = "e".repeat(300);
    let r = s.post(&format!("{url}/raiseEvent/{long}"), "1").await;
    r.assert_says(400, "field", "eventName");
    assert_eq!(
        s.post(&format!("{DF}/instances/nobody/raiseEvent/Go"), "1")
            .await
            .status,
        404
    );
    let long_key = format!("{raise}?eventId={}", "k".repeat(300));
    let r = s.post(&long_key, "1").await;
    r.assert_says(400, "field", "eventId");
    // Suspend, resume, then the event completes it; a finished instance answers 410.
    s.wait_status("r-1", |st| st == S::Running).await;
    assert_eq!(
        s.post(&format!("{url}/suspend?reason=hold"), "")
            .await
            .status,
        202
    );
    s.wait_status("r-1", |st| st == S::Suspended).await;
    assert_eq!(s.get(&url).await.status, 202);
    assert_eq!(
        s.post(&format!("{url}/suspend"), "").await.status,
        202,
        "suspending again is accepted"
    );
    assert_eq!(
        s.post(&format!("{url}/resume?reason=go"), "").await.status,
        202
    );
    s.wait_status("r-1", |st| st == S::Running).await;
    assert_eq!(s.post(&raise, "{\"ok\":true}").await.status, 202);
    s.wait_status("r-1", S::is_terminal).await;
    let st = s.get(&url).await.json();
    assert_eq!(st["output"], serde_json::json!({"ok": true}));
    for op in ["terminate", "suspend", "resume"] {
        let r = s.post(&format!("{url}/{op}"), "").await;
        assert_eq!(r.status, 410, "{op}: {}", r.body);
        assert_eq!(
            s.post(&format!("{DF}/instances/nobody/{op}"), "")
                .await
                .status,
            404,
            "{op}"
        );
    }
    assert_eq!(s.post(&raise, "1").await.status, 410);

    // Terminate an active instance.
    start(&s, "Waiter", "t-1", "null").await;
    s.post_accepted(&format!("{DF}/instances/t-1/terminate?reason=enough"), "")
        .await;
    s.wait_status("t-1", |st| st == S::Terminated).await;
    let r = s.get(&format!("{DF}/instances/t-1")).await;
    r.assert_says(200, "output", "enough");

    // Restart: same ID on request, a new one by default; an unknown instance is a 400 (as DF).
    let r = s
        .post_accepted(
            &format!("{DF}/instances/r-1/restart?restartWithNewInstanceId=false"),
            "",
        )
        .await;
    assert_eq!(r.json()["id"], "r-1");
    assert!(r.header("location").unwrap().ends_with("/instances/r-1"));
    s.wait_status("r-1", |st| st == S::Running).await;
    let r = s.post(&format!("{DF}/instances/t-1/restart"), "").await;
    assert_eq!(r.status, 202);
    assert_ne!(r.json()["id"], "t-1");
    assert_eq!(
        s.post(&format!("{DF}/instances/nobody/restart"), "")
            .await
            .status,
        400
    );
    // An unknown operation is no route.
    let r = s.post(&format!("{DF}/instances/r-1/explode"), "").await;
    r.assert_says(404, "code", "no_route");
    s.stop().await;
}

async fn list_and_purge(b: Backend) {
    let s = Server::start(b).await;
    for i in 0..5 {
        start(&s, "Hello", &format!("page-{i}"), "null").await;
    }
    start(&s, "Waiter", "page-w", "null").await;
    for i in 0..5 {
        s.wait_status(&format!("page-{i}"), S::is_terminal).await;
    }
    // Paging with the continuation header visits every match once.
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut headers = vec![];
        if let Some(t) = &token {
            headers.push(("x-ms-continuation-token", t.as_str()));
        }
        let r = s
            .call(
                "GET",
                &format!("{DF}/instances?instanceIdPrefix=page-&top=2"),
                &headers,
                "",
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let page = r.json();
        assert!(page.as_array().unwrap().len() <= 2);
        for st in page.as_array().unwrap() {
            seen.push(st["instanceId"].as_str().unwrap().to_owned());
            assert!(st["runtimeStatus"].is_string() && st["createdTime"].is_string());
        }
        match r.header("x-ms-continuation-token") {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["page-0", "page-1", "page-2", "page-3", "page-4", "page-w"]
    );
    let r = s
        .get(&format!(
            "{DF}/instances?instanceIdPrefix=page-&runtimeStatus=Running,Pending"
        ))
        .await;
    let running: Vec<_> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["instanceId"].clone())
        .collect();
    assert_eq!(running, vec![serde_json::json!("page-w")]);
    assert_eq!(
        s.get(&format!("{DF}/instances?runtimeStatus=Bogus"))
            .await
            .status,
        400
    );
    assert_eq!(
        s.get(&format!("{DF}/instances?createdTimeFrom=yesterday"))
            .await
            .status,
        400
    );
    assert_eq!(s.get(&format!("{DF}/instances?top=0")).await.status, 400);
    let future = s
        .get(&format!(
            "{DF}/instances?instanceIdPrefix=page-&createdTimeFrom=2999-01-01T00:00:00Z"
        ))
        .await;
    assert_eq!(future.json().as_array().unwrap().len(), 0);

    // Purge one: active 409, finished 200 {"instancesDeleted": 1}, then 404.
    assert_eq!(
        s.delete(&format!("{DF}/instances/page-w")).await.status,
        409
    );
    let r = s.delete(&format!("{DF}/instances/page-0")).await;
    assert_eq!(
        (r.status, r.json()),
        (200, serde_json::json!({"instancesDeleted": 1}))
    );
    assert_eq!(
        s.delete(&format!("{DF}/instances/page-0")).await.status,
        404
    );
    // Purge by filter: createdTimeFrom required; finished ones only; none left: 404.
    let r = s.delete(&format!("{DF}/instances")).await;
    r.assert_says(400, "field", "createdTimeFrom");
    let r = s
        .delete(&format!(
            "{DF}/instances?createdTimeFrom=2000-01-01T00:00:00Z&runtimeStatus=Completed"
        ))
        .await;
    assert_eq!(
        (r.status, r.json()),
        (200, serde_json::json!({"instancesDeleted": 4})),
        "{}",
        r.body
    );
    let r = s
        .delete(&format!(
            "{DF}/instances?createdTimeFrom=2000-01-01T00:00:00Z&runtimeStatus=Completed"
        ))
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        s.get(&format!("{DF}/instances/page-w")).await.status,
        202,
        "the active one stays"
    );
    s.stop().await;
}

/// `POST …/instances/{id}/rewind?reason=`: 202 with no body (as Durable Functions), the
/// instance Running at once, then completed with what succeeded kept; the status's history
/// shows `ExecutionRewound` with the reason and the rewound task; 404 unknown, 409 for Running
/// and for Completed, each naming the status; the operation's name in any case.
async fn rewind(b: Backend) {
    let s = Server::start(b).await;
    // The gate's key: gates are open for the whole test binary, so one per backend.
    let key = format!("g-{}", b.name());
    start(&s, "Gated", "g-1", &format!("\"{key}\"")).await;
    start(&s, "Waiter", "g-w", "null").await;
    s.wait_status("g-1", |st| st == S::Failed).await;
    s.wait_status("g-w", |st| st == S::Running).await;
    let url = format!("{DF}/instances/g-1");
    let st = s.get(&url).await.json();
    assert_eq!(st["runtimeStatus"], "Failed");
    assert!(
        st["output"]
            .to_string()
            .contains(&format!("gate {key} is closed")),
        "{st}"
    );

    // Refusals name the status.
    let r = s.post(&format!("{DF}/instances/nobody/rewind"), "").await;
    r.assert_says(404, "code", "not_found");
    let r = s
        .post(&format!("{DF}/instances/g-w/rewind?reason=x"), "")
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(
        r.json()["error"],
        "instance 'g-w' is Running: cannot rewind"
    );
    let r = s.post(&format!("{DF}/instances/bad%01id/rewind"), "").await;
    r.assert_says(400, "field", "instanceId");

    // The rewind: 202, no body, no Location (as Durable Functions); Running at once.
    common::open_gate(&key);
    let r = s
        .post_accepted(&format!("{url}/rewind?reason=gate%20fixed"), "")
        .await;
    assert_eq!(r.body, "");
    assert!(r.header("location").is_none());
    s.wait_status("g-1", |st| st == S::Completed).await;
    let st = s
        .get(&format!("{url}?showHistory=true&showHistoryOutput=true"))
        .await
        .json();
    assert_eq!(st["runtimeStatus"], "Completed");
    assert_eq!(st["output"], format!("Hello {key}! passed {key}"));
    let events = st["historyEvents"].as_array().unwrap();
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["EventType"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "ExecutionStarted",
            "TaskCompleted",
            "ExecutionRewound",
            "TaskCompleted",
            "ExecutionCompleted"
        ],
        "{st}"
    );
    let rewound = &events[2];
    assert_eq!(rewound["Reason"], "gate fixed", "{rewound}");
    assert_eq!(rewound["RewoundTasks"], serde_json::json!([1]), "{rewound}");
    assert_eq!(events[3]["FunctionName"], "Gate");
    assert_eq!(events[3]["Result"], format!("passed {key}"));
    assert_eq!(events[4]["OrchestrationStatus"], "Completed");

    // Completed now: 409 naming the status, as for every status but Failed; any case of the
    // name.
    let r = s.post(&format!("{url}/Rewind"), "").await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(
        r.json()["error"],
        "instance 'g-1' is Completed: cannot rewind"
    );
    s.stop().await;
}

taskhub_test_support::backend_matrix!(
    [every]
    start_status_and_history,
    raise_terminate_suspend_resume_restart,
    list_and_purge,
    rewind
);
