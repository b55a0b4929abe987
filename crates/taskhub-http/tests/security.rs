//! The token, the cross-site and Host checks, no state change on GET, the body cap.

mod common;

use common::{Backend, Server, DF};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_every_api_request_needs_it() {
    let s = Server::start_with(Backend::Memory, false, |c| {
        c.with_token(Some("t0ken".into()))
    })
    .await;
    for path in [
        "/api/hub",
        "/api/instances",
        &format!("{DF}/instances"),
        "/api/openapi.json",
        "/metrics",
    ] {
        let r = s.get(path).await;
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert_eq!(r.json()["code"], "unauthorized");
        let r = s
            .call("GET", path, &[("authorization", "Bearer wrong")], "")
            .await;
        assert_eq!(r.status, 401, "{path}");
    }
    let r = s
        .call("POST", &format!("{DF}/orchestrators/Hello/x"), &[], "null")
        .await;
    assert_eq!(r.status, 401, "a start without the token changes nothing");
    assert_eq!(
        s.hub
            .client()
            .get_status(&taskhub::InstanceId::new("x").unwrap(), Default::default())
            .await
            .unwrap(),
        None
    );
    let ok = s
        .call("GET", "/api/hub", &[("authorization", "Bearer t0ken")], "")
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // The dashboard's files hold no data: a browser loads them, then asks for the token.
    for path in ["/", "/app.js", "/style.css", "/favicon.svg"] {
        assert_eq!(s.get(path).await.status, 200, "{path}");
    }
    // With a token, any Host is answered (the server may listen beyond loopback).
    let r = s
        .call(
            "GET",
            "/api/hub",
            &[
                ("authorization", "Bearer t0ken"),
                ("host", "taskhub.internal:8080"),
            ],
            "",
        )
        .await;
    assert_eq!(r.status, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_only_loopback_hosts_and_same_origin() {
    let s = Server::start_with(Backend::Memory, false, |c| c).await;
    assert_eq!(s.get("/api/hub").await.status, 200);
    assert_eq!(
        s.call("GET", "/api/hub", &[("host", "localhost:1234")], "")
            .await
            .status,
        200
    );
    // DNS rebinding: a page on evil.example resolved to 127.0.0.1.
    let r = s
        .call("GET", "/api/hub", &[("host", "evil.example:8080")], "")
        .await;
    r.assert_says(403, "code", "forbidden");
    // A cross-site form or fetch from another origin.
    let r = s
        .call(
            "POST",
            &format!("{DF}/orchestrators/Hello/x"),
            &[("origin", "http://evil.example")],
            "null",
        )
        .await;
    assert_eq!(r.status, 403);
    let same = format!("http://127.0.0.1:{}", s.addr.port());
    let r = s
        .call(
            "POST",
            &format!("{DF}/orchestrators/Hello/x"),
            &[("origin", same.as_str())],
            "null",
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_state_change_on_get_and_bodies_are_capped() {
    let s = Server::start_with(Backend::Memory, false, |c| taskhub_http::HttpConfig {
        body_limit: 1024,
        ..c
    })
    .await;
    for (method, path) in taskhub_http::ROUTES.iter().filter(|(m, _)| *m != "GET") {
        let concrete = path
            .replace("{functionName}", "Hello")
            .replace("{instanceId}", "x")
            .replace("{eventName}", "E")
            .replace("{partition}", "0")
            .replace("{name}", "w")
            .replace("{id}", "d")
            .replace("{entityId}", "@E@k")
            .replace("{entityName}", "E")
            .replace("{entityKey}", "k");
        if taskhub_http::ROUTES.contains(&("GET", path)) {
            continue; // the path's read route (status, list): tested elsewhere
        }
        let r = s.get(&concrete).await;
        assert_eq!(
            r.status, 405,
            "GET {concrete} (a {method} route): {}",
            r.body
        );
    }
    assert!(
        s.hub
            .client()
            .list(&Default::default())
            .await
            .unwrap()
            .instances
            .is_empty(),
        "a GET started something"
    );
    let big = format!("\"{}\"", "x".repeat(2000));
    let r = s.post(&format!("{DF}/orchestrators/Hello/big"), &big).await;
    r.assert_says(413, "code", "payload_too_large");
    let r = s
        .post(&format!("{DF}/orchestrators/Hello/small"), "\"fits\"")
        .await;
    assert_eq!(r.status, 202);
    assert_eq!(
        s.post(&format!("{DF}/instances/small/raiseEvent/E"), &big)
            .await
            .status,
        413
    );
    s.stop().await;
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let any: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap();
    assert!(matches!(
        taskhub_http::check_bind(any, None),
        Err(taskhub_http::HttpError::TokenRequired { .. })
    ));
    assert!(taskhub_http::check_bind(any, Some("t")).is_ok());
}
