//! A filtered mixed-language hub (issue 34, items 4 and 7): one Taskhub worker whose registry
//! holds a Rust orchestration and activity, a Durable Task Python SDK worker
//! (tests/python/filtered_worker.py, `use_work_item_filters()`) registered for `Py*`, and a
//! Durable Task JavaScript SDK worker (tests/js/filtered_worker.js, `workItemFilters: "auto"`)
//! registered for `Js*`, each SDK sending the work-item filters it builds from what it
//! registered. Several orchestrations of each language run, each activity answering with its
//! language, and one orchestration per language calls the activities of the other two (a Python
//! orchestration calls a Rust and a JavaScript activity, and so on): each item ran in the worker
//! whose filters name it (a worker given an item it has not registered fails it), and all
//! complete. An orchestration no connected worker takes (`PyLater`) stays Pending, never
//! failed, while the rest run (at least 5 s), and completes once a Python worker registered
//! for it connects. On SQLite and on Azurite. Plus versions through the SDK's own filters: a
//! Python worker with strict versioning gets only its version; another version waits, Pending,
//! for a worker of that version (SQLite).
//!
//! Run as `scripts/with-python-sdk.sh scripts/with-js-sdk.sh scripts/with-azurite.sh cargo test
//! -p taskhub-grpc --test sdk_mixed_filters` (scripts/test.sh does).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::time::{Duration, Instant};

use common::calls;
use common::script::{test_file, until_line};
use common::sdk::SdkServer;
use common::Backend;
use taskhub::{ActivityContext, ActivityError, OrchestrationContext, OrchestrationError, Registry};
use taskhub_grpc::proto::OrchestrationStatus;
use tokio::io::{AsyncBufReadExt, BufReader};

const COMMAND: &str = "scripts/with-js-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc \
                       --test sdk_mixed_filters";

/// How long the orchestration nobody takes must stay Pending, at least.
const UNTAKEN_FOR: Duration = Duration::from_secs(5);

/// The Rust side: `RustGreet` (its activity `RustWhere`), `RustCross` (`RustWhere`, then the
/// Python worker's `PyWhere`, then the JavaScript worker's `JsWhere`), and `RustWhere`, which
/// answers "rust: INPUT".
fn rust_registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration(
        "RustGreet",
        |ctx: OrchestrationContext, what: String| async move {
            let where_: String = ctx.call_activity("RustWhere", &what).await?;
            Ok::<_, OrchestrationError>(vec!["rust orchestration".to_owned(), where_])
        },
    )
    .orchestration(
        "RustCross",
        |ctx: OrchestrationContext, what: String| async move {
            let rust: String = ctx.call_activity("RustWhere", &what).await?;
            let py: String = ctx.call_activity("PyWhere", &what).await?;
            let js: String = ctx.call_activity("JsWhere", &what).await?;
            Ok::<_, OrchestrationError>(vec!["rust orchestration".to_owned(), rust, py, js])
        },
    )
    .activity(
        "RustWhere",
        |_ctx: ActivityContext, what: String| async move {
            Ok::<_, ActivityError>(format!("rust: {what}"))
        },
    );
    reg
}

/// Starts an SDK worker process and waits (bounded) for the line it prints once started.
async fn spawn(program: &str, args: &[String], env: &[(&str, String)], ready: &str) -> Worker {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program} {args:?}: {e}"));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    until_line(&mut lines, &format!("{program} {args:?}"), ready).await;
    // Keep reading its stdout, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Worker(child)
}

/// An SDK worker process, killed when dropped.
struct Worker(tokio::process::Child);

impl Worker {
    async fn kill(mut self) {
        self.0.start_kill().unwrap();
        let _ = self.0.wait().await;
    }
}

async fn mixed_hub(backend: Backend) {
    let python = taskhub_test_support::env::python_sdk(COMMAND);
    let node_path = taskhub_test_support::env::js_sdk(COMMAND);
    let server = SdkServer::start_with(backend, rust_registry()).await;
    let addr = server.addr.to_string();
    let py = spawn(
        &python,
        &[
            test_file("python/filtered_worker.py").display().to_string(),
            addr.clone(),
            "main".into(),
        ],
        &[],
        "worker main started",
    )
    .await;
    let js = spawn(
        "node",
        &[
            test_file("js/filtered_worker.js").display().to_string(),
            addr.clone(),
        ],
        &[("NODE_PATH", node_path)],
        "worker js started",
    )
    .await;
    server.until_connected(2).await;

    let mut c = server.client().await;
    // First: the orchestration no connected worker takes.
    calls::start(&mut c, "PyLater", "later", Some("\"l\"")).await;
    let untaken_since = Instant::now();
    let mut expected: Vec<(String, Vec<String>)> = Vec::new();
    for i in 0..3 {
        for (name, lang, activity) in [
            ("RustGreet", "rust", "rust"),
            ("PyGreet", "python", "python"),
            ("JsGreet", "javascript", "javascript"),
        ] {
            let id = format!("{lang}-{i}");
            let input = format!("{lang} {i}");
            calls::start(&mut c, name, &id, Some(&format!("\"{input}\""))).await;
            expected.push((
                id,
                vec![
                    format!("{lang} orchestration"),
                    format!("{activity}: {input}"),
                ],
            ));
        }
    }
    for (name, lang, order) in [
        ("RustCross", "rust", ["rust", "python", "javascript"]),
        ("PyCross", "python", ["python", "rust", "javascript"]),
        ("JsCross", "javascript", ["javascript", "rust", "python"]),
    ] {
        let id = format!("{lang}-cross");
        calls::start(&mut c, name, &id, Some("\"x\"")).await;
        let mut want = vec![format!("{lang} orchestration")];
        want.extend(order.iter().map(|l| format!("{l}: x")));
        expected.push((id, want));
    }
    for (id, want) in &expected {
        let st = calls::wait_done(&mut c, id).await;
        assert_eq!(
            st.orchestration_status,
            OrchestrationStatus::Completed as i32,
            "{id}: {st:?}"
        );
        let got: Vec<String> = serde_json::from_str(st.output.as_deref().unwrap())
            .unwrap_or_else(|e| panic!("{id}: {e}: {st:?}"));
        assert_eq!(&got, want, "{id}");
    }

    // `PyLater` waits, Pending, never failed, for at least UNTAKEN_FOR.
    loop {
        let st = calls::get(&mut c, "later").await.expect("later exists");
        assert_eq!(
            st.orchestration_status,
            OrchestrationStatus::Pending as i32,
            "an orchestration no worker takes stays Pending: {st:?}"
        );
        if untaken_since.elapsed() >= UNTAKEN_FOR {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A worker that takes it connects: it completes (its activity run by the main Python
    // worker).
    let late = spawn(
        &python,
        &[
            test_file("python/filtered_worker.py").display().to_string(),
            addr.clone(),
            "late".into(),
        ],
        &[],
        "worker late started",
    )
    .await;
    let st = calls::completed(&mut c, "later").await;
    let got: Vec<String> = serde_json::from_str(st.output.as_deref().unwrap()).unwrap();
    assert_eq!(got, ["python late orchestration", "python: l"]);

    late.kill().await;
    js.kill().await;
    py.kill().await;
    server.stop().await;
}

/// Versions through the SDK's own filters: a Python worker with strict versioning at version 2
/// (and the failure strategy FAIL: an orchestration of another version that reached it would be
/// failed) gets version 2 only; version 1 waits, Pending, until a version-1 worker connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strictly_versioned_sdk_worker_gets_only_its_version() {
    let python = taskhub_test_support::env::python_sdk(COMMAND);
    let server = SdkServer::start(Backend::Sqlite).await;
    let addr = server.addr.to_string();
    let worker = |role: &str| {
        vec![
            test_file("python/filtered_worker.py").display().to_string(),
            addr.clone(),
            role.to_owned(),
        ]
    };
    let v2 = spawn(&python, &worker("v2"), &[], "worker v2 started").await;
    server.until_connected(1).await;
    let mut c = server.client().await;
    for (id, version) in [("ver-1", "1"), ("ver-2", "2")] {
        c.start_instance(taskhub_grpc::proto::CreateInstanceRequest {
            instance_id: id.into(),
            name: "PyVersioned".into(),
            version: Some(version.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let started = Instant::now();
    let st = calls::wait_done(&mut c, "ver-2").await;
    assert_eq!(
        st.output.as_deref(),
        Some(r#"["python v2", "2", "activity v2"]"#),
        "{st:?}"
    );
    loop {
        let st = calls::get(&mut c, "ver-1").await.expect("ver-1 exists");
        assert_eq!(
            st.orchestration_status,
            OrchestrationStatus::Pending as i32,
            "a version no worker takes stays Pending: {st:?}"
        );
        if started.elapsed() >= UNTAKEN_FOR {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let v1 = spawn(&python, &worker("v1"), &[], "worker v1 started").await;
    let st = calls::wait_done(&mut c, "ver-1").await;
    assert_eq!(
        st.output.as_deref(),
        Some(r#"["python v1", "1", "activity v1"]"#),
        "{st:?}"
    );
    v1.kill().await;
    v2.kill().await;
    server.stop().await;
}

common::on_backends!(
    mixed_hub,
    a_filtered_mixed_language_hub_on_sqlite = Sqlite,
    a_filtered_mixed_language_hub_on_azurite = Azure
);
