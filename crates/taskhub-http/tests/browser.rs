//! The dashboard in headless Chromium: the list, a status filter, sorting, an instance with
//! its timeline and parent/child links, values holding `<script>` shown as text, a confirmed
//! terminate changing the status, partitions and dead letters, entities (left out of the
//! instance list unless asked for; the Entities view with its name filter, an entity's state,
//! a confirmed signal changing it), the work SDK workers' filters leave waiting (on the
//! partitions page), the token prompt. Screenshots
//! go to the test's temp dir (printed), and with `TASKHUB_DOCS_SCREENSHOT=<png>` one of the
//! instance page is saved there for `docs/HTTP.md`.
//!
//! Needs `TASKHUB_CHROMIUM` and `TASKHUB_PLAYWRIGHT_DIR`, which `scripts/with-chromium.sh` sets
//! (`scripts/test.sh` runs the tests under it); without them it fails and says how to run it
//! (never skipped, like the Azure tests without Azurite).

mod common;

use common::{Backend, Server, DF};
use taskhub::OrchestrationStatus as S;

const XSS_ID: &str = "id-<script>alert(\"id\")<script>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_headless_chromium() {
    let taskhub_test_support::env::Chromium {
        binary: chromium,
        playwright_dir: playwright,
    } = taskhub_test_support::env::chromium("cargo test -p taskhub-http --test browser");
    // The work an SDK worker's filters leave waiting, as a `taskhub-grpc` dispatcher reports
    // it (`Dispatcher::unmatched_source`; its counting is tested with real filtered streams in
    // taskhub-grpc/tests/sdk_filter_waiting.rs): shown on the partitions page.
    let s = Server::start_with(Backend::Sqlite, true, |c| {
        c.with_unmatched(std::sync::Arc::new(|| taskhub::admin::UnmatchedWork {
            workers: 1,
            orchestrations: 2,
            activities: 1,
            entities: 0,
            names: vec![
                taskhub::admin::UnmatchedName {
                    kind: taskhub::admin::WorkKind::Orchestration,
                    name: "Unwanted".into(),
                    version: None,
                    items: 2,
                },
                taskhub::admin::UnmatchedName {
                    kind: taskhub::admin::WorkKind::Activity,
                    name: "Charge".into(),
                    version: Some("2".into()),
                    items: 1,
                },
            ],
            omitted: 0,
        }))
    })
    .await;
    for (name, id, input) in [
        ("Parent", "parent-1", "null"),
        ("Hello", "hello-1", "null"),
        ("Echo", XSS_ID, "\"<script>alert(\\\"output\\\")</script>\""),
        ("Waiter", "wait-1", "null"),
        ("Waiter", "wait-2", "null"),
        ("Fails", "fails-1", "null"),
    ] {
        let path = format!("{DF}/orchestrators/{name}/{}", taskhub_http_encode(id));
        s.post_accepted(&path, input).await;
    }
    for id in ["parent-1", "hello-1", XSS_ID, "fails-1"] {
        s.wait_status(id, S::is_terminal).await;
    }
    for id in ["wait-1", "wait-2"] {
        s.wait_status(id, |st| st == S::Running).await;
    }
    fail_gated(&s).await;
    // An entity with state 5, for the Entities view (signalled there to 7).
    s.post_accepted(&format!("{DF}/entities/Counter/browser?op=add"), "5")
        .await;
    let counter = taskhub::EntityId::new("Counter", "browser").unwrap();
    let client = s.hub.client();
    common::wait::until_some("the entity's state", || async {
        (client.read_entity_state::<i64>(&counter).await.unwrap() == Some(5)).then_some(())
    })
    .await;
    let token_server = Server::start_with(Backend::Memory, false, |c| {
        c.with_token(Some("browser-t0ken".into()))
    })
    .await;
    assert_eq!(
        token_server
            .call(
                "POST",
                &format!("{DF}/orchestrators/Hello/t-1"),
                &[("authorization", "Bearer browser-t0ken")],
                "null"
            )
            .await
            .status,
        202
    );

    // Kept after the run (the screenshots are the test's record); the path is printed.
    let out = common::TempDir::new("browser").keep();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/dashboard.cjs");
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(&script)
        .env("BASE_URL", s.url())
        .env("OUT_DIR", &out)
        .env("TASKHUB_CHROMIUM", chromium)
        .env("TASKHUB_PLAYWRIGHT_DIR", playwright)
        .env("XSS_ID", XSS_ID)
        .env("ENTITY_ID", counter.to_string())
        .env("TOKEN_URL", token_server.url())
        .env("TOKEN", "browser-t0ken");
    if let Ok(docs) = std::env::var("TASKHUB_DOCS_SCREENSHOT") {
        cmd.env("DOCS_SCREENSHOT", docs);
    }
    let output = tokio::time::timeout(std::time::Duration::from_secs(240), cmd.output())
        .await
        .expect("the browser test hung")
        .expect("cannot run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    println!("screenshots in {}", out.display());
    assert!(
        output.status.success(),
        "the browser test failed (screenshots in {}):\n{stdout}\n{stderr}",
        out.display()
    );
    assert!(stdout.contains("browser test passed"), "{stdout}");
    // wait-2 was terminated through the dashboard.
    s.wait_status("wait-2", |st| st == S::Terminated).await;
    // gated-1 was rewound through the dashboard, then completed.
    s.wait_status("gated-1", |st| st == S::Completed).await;
    // The entity was signalled through the dashboard: add 2.
    assert_eq!(
        client.read_entity_state::<i64>(&counter).await.unwrap(),
        Some(7)
    );
    token_server.stop().await;
    s.stop().await;
}

/// `gated-1` (`GatedWait`): Failed on its `Gate` activity, whose gate is then opened, so that
/// the dashboard's Rewind (a button only on a Failed instance, asking for the reason) runs it
/// again to its wait for `Go`, with the rewind in its history (`rewindSteps` in the script).
async fn fail_gated(s: &Server) {
    s.post_accepted(
        &format!("{DF}/orchestrators/GatedWait/gated-1"),
        "\"gated-1\"",
    )
    .await;
    s.wait_status("gated-1", |st| st == S::Failed).await;
    common::open_gate("gated-1");
}

/// Percent-encodes an instance ID for a URL path.
fn taskhub_http_encode(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
