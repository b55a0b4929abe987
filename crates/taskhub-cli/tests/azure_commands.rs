//! Every CLI command group through the real binary on Azure Storage (Azurite): instances
//! start/list/show/history/raise/terminate/purge, dead-letters list/replay, partitions
//! show/resize/offline/online/bump, hub delete; and an endpoint that never answers is one
//! error line within seconds. Needs `TASKHUB_TEST_AZURE_CONNECTION_STRING`:
//! `scripts/with-azurite.sh cargo test -p taskhub-cli --test azure_commands`.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use taskhub_azure::AzureStore;
use taskhub_backends::{BackendConfig, OpenedStore, OptionValue};
use taskhub_storage::{NewQueueMessage, QueueName};

const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn connection_string() -> String {
    taskhub_test_support::env::azure_connection_string(
        "cargo test -p taskhub-cli --test azure_commands",
    )
}

/// A hub on the test account with a name of its own.
struct Hub {
    dir: TempDir,
    name: String,
    account: String,
}

impl Hub {
    fn new(tag: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            dir: TempDir::new(tag),
            name: format!("cli{}x{n}x{:x}", std::process::id(), nanos % (1 << 40)),
            account: connection_string(),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = taskhub(&self.dir.0);
        cmd.env("TASKHUB_AZURE_STORAGE_CONNECTION_STRING", &self.account)
            .env("TASKHUB_TASK_HUB_NAME", &self.name)
            .args(["--backend", "azure"])
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "taskhub {args:?} failed: {stderr}\n{stdout}"
        );
        assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
        stdout
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "taskhub {args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        stderr
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    fn worker(&self) -> WorkerChild {
        WorkerChild::spawn(self.cmd(&[
            "--set",
            "max_queue_polling_interval=100ms",
            "--set",
            "lease_interval=4s",
            "--set",
            "lease_renew_interval=1s",
            "--set",
            "lease_acquire_interval=1s",
            "worker",
        ]))
    }

    fn status(&self, id: &str) -> String {
        self.json(&["instances", "show", id, "--json"])["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn wait_status(&self, id: &str, status: &str) {
        wait_until(STUCK, || (self.status(id) == status).then_some(()));
    }

    /// The hub's store, opened directly (it must exist).
    fn store(&self) -> OpenedStore {
        let config = BackendConfig {
            overrides: vec![OptionValue::new(
                "azure.storage_connection_string",
                &self.account,
                "the test",
            )],
            hub_name: self.name.clone(),
            ..BackendConfig::default()
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(taskhub_backends::open_store("azure", &config))
            .unwrap()
    }
}

#[test]
fn instance_commands_work_on_azure() {
    let hub = Hub::new("az-instances");
    // A command that reads a hub that does not exist yet creates nothing.
    let err = hub.fails(&["instances", "list"]);
    assert!(
        err.contains(&format!("no task hub '{}'", hub.name)) && err.contains("task_hub_name"),
        "{err}"
    );
    let worker = hub.worker();

    let out = hub.ok(&[
        "instances",
        "start",
        "HelloCities",
        "--id",
        "hello-1",
        "--wait",
        "120",
    ]);
    assert!(
        out.starts_with("hello-1\n") && out.contains("Completed"),
        "{out}"
    );
    let shown = hub.json(&["instances", "show", "hello-1", "--json"]);
    assert_eq!(shown["output"][2], "Hello London!");
    let history = hub.ok(&["instances", "history", "hello-1"]);
    assert!(
        history.contains("ExecutionStarted 'HelloCities'"),
        "{history}"
    );
    assert_eq!(history.matches("TaskScheduled").count(), 3, "{history}");
    let events = hub.json(&["instances", "history", "hello-1", "--json"]);
    assert_eq!(events.as_array().unwrap().len(), history.lines().count());

    let approval = r#"{"timeout_ms": 600000}"#;
    for id in ["approve-1", "approve-2"] {
        hub.ok(&["instances", "start", "Approval", approval, "--id", id]);
    }
    hub.wait_status("approve-1", "Running");
    hub.ok(&[
        "instances",
        "raise",
        "approve-1",
        "approval",
        r#"{"approver":"ann"}"#,
    ]);
    hub.wait_status("approve-1", "Completed");
    assert_eq!(
        hub.json(&["instances", "show", "approve-1", "--json"])["output"],
        "approved by ann"
    );
    hub.wait_status("approve-2", "Running");
    hub.ok(&[
        "instances",
        "terminate",
        "approve-2",
        "--reason",
        "not needed",
    ]);
    hub.wait_status("approve-2", "Terminated");
    assert!(hub
        .ok(&["instances", "show", "approve-2"])
        .contains("not needed"));

    let all = hub.ok(&["instances", "list"]);
    assert!(all.contains("3 instance(s)"), "{all}");
    let completed = hub.json(&["instances", "list", "--status", "Completed", "--json"]);
    assert_eq!(completed["instances"].as_array().unwrap().len(), 2);
    let paged = hub.json(&["instances", "list", "--page-size", "1", "--all", "--json"]);
    assert_eq!(paged["instances"].as_array().unwrap().len(), 3);

    hub.ok(&["instances", "purge", "hello-1"]);
    assert!(hub
        .fails(&["instances", "show", "hello-1"])
        .contains("not found"));
    let out = hub.ok(&["instances", "purge", "--status", "Completed"]);
    assert!(out.contains("purged 1 instance(s)"), "{out}");
    let left = hub.json(&["instances", "list", "--json"]);
    assert_eq!(left["instances"].as_array().unwrap().len(), 1);
    assert_eq!(left["instances"][0]["instance_id"], "approve-2");
    worker.stop();
}

#[test]
fn dead_letter_commands_work_on_azure() {
    let hub = Hub::new("az-dead-letters");
    let worker = hub.worker();
    let opened = hub.store();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(opened.store.enqueue(
        QueueName::Control(0),
        vec![NewQueueMessage {
            body: "this is not a message".to_owned(),
            delay: Duration::ZERO,
        }],
    ))
    .unwrap();
    let letters = || -> Vec<serde_json::Value> {
        hub.json(&["dead-letters", "list", "--json"])
            .as_array()
            .unwrap()
            .clone()
    };
    let first = wait_until(STUCK, || letters().into_iter().next());
    assert_eq!(first["queue"], "control-00");
    assert_eq!(first["body"], "this is not a message");
    let table = hub.ok(&["dead-letters", "list"]);
    assert!(table.contains("1 dead letter(s)"), "{table}");

    let id = first["id"].as_str().unwrap().to_owned();
    assert!(hub
        .ok(&["dead-letters", "replay", &id])
        .contains("replayed"));
    let again = wait_until(STUCK, || {
        letters()
            .into_iter()
            .find(|l| l["id"].as_str() != Some(id.as_str()))
    });
    assert_eq!(again["body"], "this is not a message");
    assert_eq!(letters().len(), 1, "the replayed letter left the store");
    assert!(hub
        .fails(&["dead-letters", "replay", &id])
        .contains("not found"));
    worker.stop();
}

#[test]
fn partition_commands_work_on_azure() {
    let hub = Hub::new("az-partitions");
    hub.ok(&["instances", "start", "HelloCities", "--id", "p-1"]);
    let rows = || -> Vec<serde_json::Value> {
        hub.json(&["partitions", "--json"])["partitions"]
            .as_array()
            .unwrap()
            .clone()
    };
    assert_eq!(rows().len(), 4);
    let table = hub.ok(&["partitions"]);
    assert!(table.contains("PARTITION"), "{table}");

    hub.ok(&["partitions", "offline", "3"]);
    assert_eq!(rows()[3]["offline"], true, "{:?}", rows()[3]);
    hub.ok(&["partitions", "online", "3"]);
    assert_eq!(rows()[3]["offline"], false);
    let epoch = rows()[0]["epoch"].as_u64().unwrap();
    hub.ok(&["partitions", "bump", "0"]);
    assert_eq!(rows()[0]["epoch"].as_u64().unwrap(), epoch + 1);
    let out = hub.ok(&["partitions", "resize", "6"]);
    assert!(out.contains('6'), "{out}");
    assert!(hub.fails(&["partitions", "resize", "17"]).contains("17"));

    // A worker picks the new layout up and still runs the instance started before.
    let worker = hub.worker();
    wait_until(STUCK, || (rows().len() == 6).then_some(()));
    hub.wait_status("p-1", "Completed");
    worker.stop();
}

#[test]
fn hub_delete_works_on_azure() {
    let hub = Hub::new("az-hub-delete");
    hub.ok(&["instances", "start", "HelloCities", "--id", "d-1"]);
    let opened = hub.store();
    let lister = opened.downcast::<AzureStore>().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mine = |objects: &taskhub_azure::AccountObjects| -> usize {
        let lower = hub.name.to_ascii_lowercase();
        objects
            .tables
            .iter()
            .chain(&objects.queues)
            .chain(&objects.containers)
            .filter(|n| n.to_ascii_lowercase().starts_with(&lower))
            .count()
    };
    assert!(mine(&rt.block_on(lister.account_objects()).unwrap()) >= 5);

    let mut cmd = hub.cmd(&["hub", "delete"]);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(b"no\n").unwrap();
    }
    let no = child.wait_with_output().unwrap();
    assert_eq!(no.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&no.stderr).contains("not confirmed"));
    assert_eq!(hub.status("d-1"), "Pending");

    let out = hub.ok(&["hub", "delete", "--yes"]);
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(mine(&rt.block_on(lister.account_objects()).unwrap()), 0);
    let err = hub.fails(&["instances", "list"]);
    assert!(err.contains("no task hub"), "{err}");
    assert!(hub
        .fails(&["hub", "delete", "--yes"])
        .contains("no task hub"));

    // Created again at once, the hub works: the demo after a delete, then the demo's own
    // fresh start (delete and create again at once) on the hub it made.
    for round in 0..2 {
        let out = hub.ok(&["demo", "--fresh", "--fan-out", "5"]);
        assert!(
            out.contains("All 8 demo instances finished as expected."),
            "round {round}: {out}"
        );
    }
    let out = hub.ok(&["instances", "start", "HelloCities", "--id", "d-2"]);
    assert!(out.contains("d-2"), "{out}");
    let list = hub.ok(&["instances", "list"]);
    assert!(
        list.contains("d-2") && list.contains("demo-hello"),
        "{list}"
    );
    assert!(
        !list.contains("d-1"),
        "the deleted hub's instance is gone: {list}"
    );
}

/// An endpoint that accepts TCP connections (the kernel's backlog) but never answers: one
/// error line naming the setting, within seconds, not minutes of retries.
#[test]
fn an_endpoint_that_never_answers_is_one_error_line_within_seconds() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}/devstoreaccount1");
    let hub = Hub {
        dir: TempDir::new("az-silent"),
        name: "Silent1".to_owned(),
        account: format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={KEY};\
             BlobEndpoint={base};QueueEndpoint={base};TableEndpoint={base}"
        ),
    };
    for args in [
        &["instances", "list"][..],
        &["instances", "start", "HelloCities"][..],
    ] {
        let started = Instant::now();
        let mut child = hub
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = started + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("taskhub {args:?} still waits after a minute");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("azure.storage_connection_string")
                && stderr.contains(&port.to_string()),
            "{stderr}"
        );
        eprintln!("taskhub {args:?} gave up after {:?}", started.elapsed());
    }
    drop(silent);
}
