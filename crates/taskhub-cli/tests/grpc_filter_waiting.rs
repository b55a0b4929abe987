//! Work that no connected SDK worker's filters take, shown by the binary: `taskhub worker
//! --grpc ADDR --http ADDR` with a worker stream whose filters take orchestration `Wanted`
//! only, and an orchestration `Elsewhere` started. The serving process's `GET /api/stats` and
//! `GET /api/scale` report it waiting (by kind, with its name), the scale recommendation does
//! not scale in for it and says it waits for matching filters, not capacity;
//! `taskhub partitions --api ADDR` and `taskhub scale --api ADDR` show the same from another
//! process, and `taskhub scale` without `--api`, which reads storage only, says it cannot know
//! (`"unmatched": null`).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use common::calls::{filtered, orchestration_filters, start};
use common::listening::{http_get, interrupt as stop, on_db, spawn_listening, GRPC, HTTP};
use common::sidecar::connect;
use common::{json, ok, TempDir};

/// Starts `taskhub worker` with both endpoints on free ports; returns it with the HTTP and
/// gRPC addresses.
fn spawn(dir: &TempDir) -> (Child, String, String) {
    let args = [
        "--set",
        "max_queue_polling_interval=100ms",
        "worker",
        "--http",
        "127.0.0.1:0",
        "--grpc",
        "127.0.0.1:0",
    ];
    let listening = spawn_listening(on_db(dir, &args, true), &[HTTP, GRPC]);
    let mut addrs = listening.addrs.into_iter();
    let (http, grpc) = (addrs.next().unwrap(), addrs.next().unwrap());
    (listening.child, http, grpc)
}

/// A raw HTTP/1.1 GET: the body as JSON (asserting 200).
fn get(addr: &str, path: &str) -> serde_json::Value {
    let (head, body) = http_get(addr, path, None);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_no_sdk_worker_filter_takes_shows_in_stats_scale_and_the_cli() {
    let dir = TempDir::new("cli-filter-waiting");
    let (child, http, grpc) = spawn(&dir);
    let mut c = connect(&grpc).await;
    // Before any SDK worker: the process serves SDK workers, and nothing waits.
    let before = get(&http, "/api/stats");
    assert_eq!(before["unmatched"]["orchestrations"], 0, "{before}");
    assert_eq!(before["unmatched"]["workers"], 0, "{before}");

    let _stream = c
        .get_work_items(filtered(orchestration_filters(&[("Wanted", &[])])))
        .await
        .unwrap()
        .into_inner();
    start(&mut c, "Elsewhere", "e1", None).await;

    // The serving process's stats show it waiting, by kind and name.
    let deadline = Instant::now() + Duration::from_secs(30);
    let stats = loop {
        let s = get(&http, "/api/stats");
        if s["unmatched"]["orchestrations"] == 1 {
            break s;
        }
        assert!(Instant::now() < deadline, "never shown as waiting: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let u = &stats["unmatched"];
    assert_eq!(
        (
            &u["workers"],
            &u["activities"],
            &u["entities"],
            &u["omitted"]
        ),
        (&1.into(), &0.into(), &0.into(), &0.into()),
        "{stats}"
    );
    assert_eq!(
        u["names"],
        serde_json::json!([
            {"kind": "orchestration", "name": "Elsewhere", "version": null, "items": 1}
        ])
    );

    // Its scale recommendation: not scaling in, and why.
    let scale = get(&http, "/api/scale");
    assert_eq!(scale["unmatched"]["orchestrations"], 1, "{scale}");
    assert_ne!(scale["action"], "scale_in", "{scale}");
    let reason = scale["reason"].as_str().unwrap();
    assert!(
        reason.contains("orchestration 'Elsewhere' (1)") && reason.contains("not for capacity"),
        "{reason}"
    );

    // The CLI, another process: from the serving process's API with --api...
    let table = ok(&dir, &["partitions", "--api", &http]);
    assert!(
        table.contains("waiting for an SDK worker whose filters take them")
            && table.contains("1 orchestration(s), 0 activity(ies), 0 entity batch(es)")
            && table.contains("orchestration 'Elsewhere' (1)"),
        "{table}"
    );
    let listed = json(&dir, &["partitions", "--json", "--api", &http]);
    assert_eq!(listed["unmatched"]["orchestrations"], 1, "{listed}");
    let asked = json(&dir, &["scale", "--samples", "1", "--api", &http]);
    assert_eq!(
        asked["unmatched"]["names"][0]["name"], "Elsewhere",
        "{asked}"
    );
    assert_ne!(asked["action"], "scale_in", "{asked}");
    // ...and from storage alone it cannot know, and says so.
    let blind = json(&dir, &["scale", "--samples", "1"]);
    assert!(blind["unmatched"].is_null(), "{blind}");
    let plain = json(&dir, &["partitions", "--json"]);
    assert!(plain["unmatched"].is_null(), "{plain}");

    drop(_stream);
    stop(child);
}
