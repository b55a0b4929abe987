//! The router nested in a user's own app under `/ops`: the user's routes still answer, the
//! dashboard's page redirects to `/ops/index.html` and loads its assets relative to it, the API answers
//! under the prefix, and a start's management URLs point under the prefix and work.

mod common;

use axum::routing::get;
use axum::Router;
use common::{call, open_hub, Backend, TempDir};
use taskhub_http::HttpConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_under_a_prefix_everything_points_under_it() {
    let dir = TempDir::new("mounted");
    let hub = open_hub(Backend::Memory, &dir).await;
    let app = Router::new()
        .route("/", get(|| async { "the user's own page" }))
        .nest("/ops", taskhub_http::router(HttpConfig::new(hub.clone())));
    let server = common::serving::Serving::start(app).await;
    let addr = server.addr;
    let get_ = |path: &'static str| call(addr, "GET", path, &[], Vec::new());

    let own = get_("/").await;
    assert_eq!(
        (own.status, own.body.as_str()),
        (200, "the user's own page")
    );

    let bare = get_("/ops").await;
    assert_eq!(bare.status, 308, "{}", bare.body);
    assert_eq!(
        bare.headers["location"].to_str().unwrap(),
        "/ops/index.html"
    );
    let page = get_("/ops/index.html").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("src=\"app.js\"") && !page.body.contains("src=\"/"),
        "assets are relative to the page: {}",
        page.body
    );
    assert_eq!(get_("/ops/app.js").await.status, 200);
    let hubinfo = get_("/ops/api/hub").await;
    assert_eq!(hubinfo.status, 200, "{}", hubinfo.body);

    let started = call(
        addr,
        "POST",
        "/ops/runtime/webhooks/durabletask/orchestrators/Hello/mounted-1",
        &[("content-type", "application/json")],
        b"\"x\"".to_vec(),
    )
    .await;
    assert_eq!(started.status, 202, "{}", started.body);
    let body: serde_json::Value = serde_json::from_str(&started.body).unwrap();
    let status_url = body["statusQueryGetUri"].as_str().unwrap();
    let want = format!(
        "http://127.0.0.1:{}/ops/runtime/webhooks/durabletask/instances/mounted-1",
        addr.port()
    );
    assert_eq!(status_url, want);
    assert_eq!(
        started.headers["location"].to_str().unwrap(),
        want,
        "Location points under the prefix"
    );
    let path = status_url
        .split_once(&format!(":{}", addr.port()))
        .unwrap()
        .1;
    let status = call(addr, "GET", path, &[], Vec::new()).await;
    assert_eq!(
        status.status, 202,
        "the status URL answers: {}",
        status.body
    );
    assert!(status.body.contains("\"Pending\""), "{}", status.body);
    assert!(
        status.headers["location"]
            .to_str()
            .unwrap()
            .contains("/ops/runtime/"),
        "{:?}",
        status.headers
    );

    server.stop().await.unwrap();
}
