//! `taskhub serve` and `taskhub worker --http`: the address rule, the token, a live API.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use common::{taskhub, TempDir};

/// Starts the command and returns it with the address from its "dashboard and API on" line.
#[expect(
    clippy::zombie_processes,
    reason = "the caller waits for the child (stop)"
)]
fn spawn(dir: &TempDir, args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = taskhub(&dir.0);
    cmd.arg("--db")
        .arg(dir.db())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("exited before listening").unwrap();
        if let Some(rest) = line.strip_prefix("dashboard and API on http://") {
            let addr = rest.split('/').next().unwrap().to_owned();
            std::thread::spawn(move || for _ in lines {});
            return (child, addr);
        }
    }
}

/// A raw HTTP/1.1 GET; returns the status line and the body.
fn get(addr: &str, path: &str, auth: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
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

    let out = taskhub(&dir.0)
        .arg("--db")
        .arg(dir.db())
        .args(["serve", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
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
