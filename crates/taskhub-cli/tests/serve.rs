//! `taskhub serve` and `taskhub worker --http`: the address rule, the token, a live API.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::process::Child;

use common::listening::{http_get, interrupt as stop, on_db, spawn_listening, HTTP};
use common::{run, taskhub, TempDir};

/// Starts the command and returns it with the address from its "dashboard and API on" line.
fn spawn(dir: &TempDir, args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = on_db(dir, args, false);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let listening = spawn_listening(cmd, &[HTTP]);
    let addr = listening.addr();
    (listening.child, addr)
}

/// A raw HTTP/1.1 GET; returns the status line and the body.
fn get(addr: &str, path: &str, auth: Option<&str>) -> (String, String) {
    let (head, body) = http_get(addr, path, auth);
    (head.lines().next().unwrap().to_owned(), body)
}

#[test]
fn serve_answers_on_loopback_and_refuses_other_addresses_without_a_token() {
    let dir = TempDir::new("serve");
    let (child, addr) = spawn(&dir, &["serve", "--addr", "127.0.0.1:0"], &[]);
    let (status, body) = get(&addr, "/api/hub", None);
    assert!(status.contains("200"), "{status} {body}");
    assert!(
        body.contains("\"partitionCount\":4") && body.contains("\"worker\":false"),
        "{body}"
    );
    let (status, _) = get(
        &addr,
        "/runtime/webhooks/durabletask/instances/nobody",
        None,
    );
    assert!(status.contains("404"), "{status}");
    stop(child);

    let out = run(&dir, &["serve", "--addr", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 without a token")
            && err.contains("TASKHUB_HTTP_TOKEN"),
        "{err}"
    );
    let out = taskhub(&dir.0)
        .args(["serve", "--addr", "localhost"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("expects IP:PORT"));
}

#[test]
fn worker_with_http_and_a_token_from_the_environment() {
    let dir = TempDir::new("worker-http");
    let (child, addr) = spawn(
        &dir,
        &["worker", "--http", "0.0.0.0:0"],
        &[("TASKHUB_HTTP_TOKEN", "cli-t0ken")],
    );
    let port = addr.rsplit(':').next().unwrap();
    let local = format!("127.0.0.1:{port}");
    let (status, _) = get(&local, "/api/hub", None);
    assert!(status.contains("401"), "{status}");
    let (status, body) = get(&local, "/api/hub", Some("cli-t0ken"));
    assert!(
        status.contains("200") && body.contains("\"worker\":true"),
        "{status} {body}"
    );
    stop(child);
}
