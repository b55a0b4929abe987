//! The CLI on the backends that run as a service, one test module each (`azure::`, on
//! Azurite; `postgres::`, on a throwaway server): the demo runs on a fresh hub and the admin
//! commands read it; every command group through the real binary (instances
//! start/list/show/history/raise/terminate/purge, dead-letters list/replay, partitions
//! show/resize/offline/online/bump, hub delete and re-create); a read on a missing hub creates
//! nothing; an unreachable service, a bad URL or an endpoint that never answers is one error
//! line naming the setting, within seconds. No run prints the account key or the password.
//!
//! Needs `TASKHUB_TEST_AZURE_CONNECTION_STRING` and `TASKHUB_TEST_POSTGRES_URL`:
//! `scripts/with-azurite.sh scripts/with-postgres.sh cargo test -p taskhub-cli --test
//! service_backends` (`azure::` or `postgres::` to run one backend).
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "test code"
)]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::service_hub::{Backend, Service, ServiceHub};
use common::*;
use taskhub_azure::AzureStore;
use taskhub_storage::{NewQueueMessage, QueueName};

on_services! {
    azure:
        demo_runs_and_the_admin_commands_read_its_hub,
        instance_commands_work,
        dead_letter_commands_work,
        partition_commands_work,
        hub_delete_asks_first_and_the_hub_comes_back,
        an_unreachable_service_or_a_missing_hub_is_one_clear_error,
        an_endpoint_that_never_answers_is_one_error_line_within_seconds;
    postgres:
        demo_runs_and_the_admin_commands_read_its_hub,
        instance_commands_work,
        dead_letter_commands_work,
        hub_delete_asks_first_and_the_hub_comes_back,
        an_unreachable_service_or_a_missing_hub_is_one_clear_error;
}

/// The service backends this suite covers are backends the CLI knows by those names.
#[test]
fn every_service_is_a_registered_backend() {
    let names = taskhub_backends::names();
    for service in Service::all() {
        assert!(names.contains(&service.backend.name()), "{names:?}");
    }
}

fn demo_runs_and_the_admin_commands_read_its_hub(backend: Backend) {
    let hub = ServiceHub::new(backend, "svc-demo");
    // A command that reads a hub that does not exist yet creates nothing.
    let err = hub.fails(&["instances", "list"]);
    assert!(
        err.contains(&format!("no task hub '{}'", hub.name)) && err.contains("task_hub_name"),
        "{err}"
    );
    let out = hub.ok(&["demo", "--fan-out", "20"]);
    assert!(
        out.contains("All 8 demo instances finished as expected."),
        "{out}"
    );
    let place = format!("'{}' on {}", hub.name, hub.service.display);
    assert!(out.contains(&place), "{out}");

    let list = hub.ok(&["instances", "list"]);
    assert!(list.contains("demo-hello"), "{list}");
    let history = hub.ok(&["instances", "history", "demo-hello"]);
    assert!(history.contains("ExecutionStarted"), "{history}");

    let epoch = hub.partitions()[0]["epoch"].as_u64().unwrap();
    hub.ok(&["partitions", "bump", "0"]);
    assert_eq!(hub.partitions()[0]["epoch"].as_u64().unwrap(), epoch + 1);
    hub.ok(&["partitions", "offline", "1"]);
    assert_eq!(hub.partitions()[1]["offline"], true);
    hub.ok(&["partitions", "online", "1"]);
    let letters = hub.json(&["dead-letters", "list", "--json"]);
    assert!(letters.as_array().unwrap().is_empty(), "{letters}");

    hub.ok(&["instances", "start", "HelloCities", "--id", "d-1"]);
    assert_eq!(hub.status("d-1"), "Pending");
    hub.ok(&["instances", "purge", "demo-hello"]);
    assert!(hub
        .fails(&["instances", "show", "demo-hello"])
        .contains("not found"));
}

fn instance_commands_work(backend: Backend) {
    let hub = ServiceHub::new(backend, "svc-instances");
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

fn dead_letter_commands_work(backend: Backend) {
    let hub = ServiceHub::new(backend, "svc-dead-letters");
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

fn partition_commands_work(backend: Backend) {
    let hub = ServiceHub::new(backend, "svc-partitions");
    hub.ok(&["instances", "start", "HelloCities", "--id", "p-1"]);
    assert_eq!(hub.partitions().len(), 4);
    let table = hub.ok(&["partitions"]);
    assert!(table.contains("PARTITION"), "{table}");

    hub.ok(&["partitions", "offline", "3"]);
    assert_eq!(
        hub.partitions()[3]["offline"],
        true,
        "{:?}",
        hub.partitions()[3]
    );
    hub.ok(&["partitions", "online", "3"]);
    assert_eq!(hub.partitions()[3]["offline"], false);
    let epoch = hub.partitions()[0]["epoch"].as_u64().unwrap();
    hub.ok(&["partitions", "bump", "0"]);
    assert_eq!(hub.partitions()[0]["epoch"].as_u64().unwrap(), epoch + 1);
    let out = hub.ok(&["partitions", "resize", "6"]);
    assert!(out.contains('6'), "{out}");
    assert!(hub.fails(&["partitions", "resize", "17"]).contains("17"));

    // A worker picks the new layout up and still runs the instance started before.
    let worker = hub.worker();
    wait_until(STUCK, || (hub.partitions().len() == 6).then_some(()));
    hub.wait_status("p-1", "Completed");
    worker.stop();
}

/// Counts the service's objects that hold `hub`'s data where the test can (Azure: its tables,
/// queues and containers, listed through a store opened while the hub exists); `None`
/// elsewhere.
fn object_counter(hub: &ServiceHub) -> Option<impl Fn() -> usize + '_> {
    if hub.service.backend != Backend::Azure {
        return None;
    }
    let opened = hub.store();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lower = hub.name.to_ascii_lowercase();
    Some(move || {
        let lister = opened.downcast::<AzureStore>().unwrap();
        let objects = rt.block_on(lister.account_objects()).unwrap();
        objects
            .tables
            .iter()
            .chain(&objects.queues)
            .chain(&objects.containers)
            .filter(|n| n.to_ascii_lowercase().starts_with(&lower))
            .count()
    })
}

fn hub_delete_asks_first_and_the_hub_comes_back(backend: Backend) {
    let hub = ServiceHub::new(backend, "svc-hub-delete");
    hub.ok(&["instances", "start", "HelloCities", "--id", "d-1"]);
    let objects = object_counter(&hub);
    if let Some(count) = &objects {
        assert!(count() >= 5);
    }

    let mut child = hub
        .cmd(&["hub", "delete"])
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
    assert!(
        out.contains("deleted") && out.contains(hub.service.deleted),
        "{out}"
    );
    if let Some(count) = &objects {
        assert_eq!(count(), 0);
    }
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

fn an_unreachable_service_or_a_missing_hub_is_one_clear_error(backend: Backend) {
    let service = Service::of(backend);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let nowhere = ServiceHub {
        dir: TempDir::new("svc-nowhere"),
        name: "NoHub1".to_owned(),
        service,
        connection: service.connection_to_port(port),
    };
    let err = nowhere.fails(&["instances", "list"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(service.setting) && err.contains(service.unreachable_hint(port).as_str()),
        "{err}"
    );

    let missing = ServiceHub::new(backend, "svc-missing");
    let err = missing.fails(&["instances", "list"]);
    assert!(
        err.contains(&format!("no task hub '{}'", missing.name)) && err.contains("task_hub_name"),
        "{err}"
    );
}

#[test]
fn a_bad_postgres_url_names_the_setting_and_its_variable() {
    let service = Service::of(Backend::Postgres);
    let bad = ServiceHub {
        connection: "postgres://taskhub:n0t-the-password@127.0.0.1:notaport/x".to_owned(),
        ..ServiceHub::new(Backend::Postgres, "svc-bad-url")
    };
    let err = bad.fails(&["instances", "list"]);
    assert!(
        err.contains(service.setting) && err.contains(service.variable),
        "{err}"
    );
}

/// An endpoint that accepts TCP connections (the kernel's backlog) but never answers: one
/// error line naming the setting, within seconds, not minutes of retries.
fn an_endpoint_that_never_answers_is_one_error_line_within_seconds(backend: Backend) {
    let service = Service::of(backend);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let hub = ServiceHub {
        dir: TempDir::new("svc-silent"),
        name: "Silent1".to_owned(),
        service,
        connection: service.connection_to_port(port),
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
            stderr.contains(service.setting) && stderr.contains(&port.to_string()),
            "{stderr}"
        );
        eprintln!("taskhub {args:?} gave up after {:?}", started.elapsed());
    }
    drop(silent);
}
