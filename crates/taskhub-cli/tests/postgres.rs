//! The CLI on PostgreSQL (a throwaway server): `--backend postgres` with the URL from
//! `TASKHUB_POSTGRES_URL`; the demo, the instance, dead-letter and partition commands, `hub
//! delete` (drops the hub's schema), and an unreachable server or a missing hub as one clear
//! error naming the setting, the password never printed. Needs `TASKHUB_TEST_POSTGRES_URL`:
//! `scripts/with-postgres.sh cargo test -p taskhub-cli --test postgres`.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::process::{Command, Output};

use common::*;

fn url() -> String {
    taskhub_test_support::env::postgres_url("cargo test -p taskhub-cli --test postgres")
}

/// The password of a URL, to check that no output shows it.
fn password(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let userinfo = after_scheme.split_once('@').map_or("", |(u, _)| u);
    userinfo
        .split_once(':')
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

/// A hub on the test server with a name of its own.
struct Hub {
    dir: TempDir,
    name: String,
    url: String,
}

impl Hub {
    fn new(tag: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            dir: TempDir::new(tag),
            name: format!("cli{}x{n}x{nanos}", std::process::id()),
            url: url(),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = taskhub(&self.dir.0);
        cmd.env("TASKHUB_POSTGRES_URL", &self.url)
            .env("TASKHUB_TASK_HUB_NAME", &self.name)
            .args(["--backend", "postgres"])
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        let secret = password(&self.url);
        assert!(!secret.is_empty());
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !String::from_utf8_lossy(text).contains(&secret),
                "the password must never be printed"
            );
        }
        out
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "taskhub {args:?} failed: {stderr}\n{stdout}"
        );
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

    fn status(&self, id: &str) -> String {
        self.json(&["instances", "show", id, "--json"])["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

#[test]
fn demo_and_commands_run_on_postgres_and_hub_delete_drops_the_schema() {
    let hub = Hub::new("pg-cli");
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
    assert!(
        out.contains(&format!("'{}' on PostgreSQL", hub.name)),
        "{out}"
    );

    let list = hub.ok(&["instances", "list"]);
    assert!(list.contains("demo-hello"), "{list}");
    let history = hub.ok(&["instances", "history", "demo-hello"]);
    assert!(history.contains("ExecutionStarted"), "{history}");

    let rows = || -> Vec<serde_json::Value> {
        hub.json(&["partitions", "--json"])["partitions"]
            .as_array()
            .unwrap()
            .clone()
    };
    let epoch = rows()[0]["epoch"].as_u64().unwrap();
    hub.ok(&["partitions", "bump", "0"]);
    assert_eq!(rows()[0]["epoch"].as_u64().unwrap(), epoch + 1);
    hub.ok(&["partitions", "offline", "1"]);
    assert_eq!(rows()[1]["offline"], true);
    hub.ok(&["partitions", "online", "1"]);
    let letters = hub.json(&["dead-letters", "list", "--json"]);
    assert!(letters.as_array().unwrap().is_empty(), "{letters}");

    hub.ok(&["instances", "start", "HelloCities", "--id", "d-1"]);
    assert_eq!(hub.status("d-1"), "Pending");
    hub.ok(&["instances", "purge", "demo-hello"]);
    assert!(hub
        .fails(&["instances", "show", "demo-hello"])
        .contains("not found"));

    let out = hub.ok(&["hub", "delete", "--yes"]);
    assert!(out.contains("deleted") && out.contains("schema"), "{out}");
    let err = hub.fails(&["instances", "list"]);
    assert!(err.contains("no task hub"), "{err}");

    // Created again at once, the hub works (the demo's fresh start on it, twice).
    for round in 0..2 {
        let out = hub.ok(&["demo", "--fresh", "--fan-out", "5"]);
        assert!(
            out.contains("All 8 demo instances finished as expected."),
            "round {round}: {out}"
        );
    }
    hub.ok(&["hub", "delete", "--yes"]);
}

#[test]
fn an_unreachable_server_or_a_bad_url_is_one_clear_error() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let hub = Hub {
        dir: TempDir::new("pg-nowhere"),
        name: "Nowhere1".to_owned(),
        url: format!("postgres://taskhub:n0t-the-password@127.0.0.1:{port}/postgres"),
    };
    let err = hub.fails(&["instances", "list"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("postgres.url") && err.contains(&port.to_string()),
        "{err}"
    );

    let bad = Hub {
        url: "postgres://taskhub:n0t-the-password@127.0.0.1:notaport/x".to_owned(),
        ..Hub::new("pg-bad-url")
    };
    let err = bad.fails(&["instances", "list"]);
    assert!(
        err.contains("postgres.url") && err.contains("TASKHUB_POSTGRES_URL"),
        "{err}"
    );
}
