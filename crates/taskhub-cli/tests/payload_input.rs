//! `instances start` and `instances raise` take their JSON from a file (`@path`) or standard
//! input (`-`), so payloads beyond the OS limit of one argument (128 KiB) can be passed; an
//! unreadable file or text that is not JSON is an error naming where it came from.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::io::Write as _;
use std::process::{Output, Stdio};

use common::*;

/// More than 200 KB of text, so the payload cannot be one command-line argument.
fn big(tag: &str) -> String {
    format!("{tag}-{}", "x".repeat(210_000))
}

/// Runs `taskhub --db <db> args...` with `stdin` on its standard input.
fn run_with_stdin(dir: &TempDir, args: &[&str], stdin: &str) -> Output {
    let mut child = on_file(dir, &dir.db())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_owned();
    // Written on a thread: the child may exit (on an error) before reading it all.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn status_json(dir: &TempDir, id: &str) -> serde_json::Value {
    json(dir, &["instances", "show", id, "--json"])
}

#[test]
fn large_start_input_and_event_data_from_a_file_and_from_stdin() {
    let dir = TempDir::new("payload-input");
    let worker = WorkerChild::start(&dir);

    // A start whose input (over 200 KB) comes from a file: `Approval` ignores the padding and
    // waits for its event.
    let padding = big("input");
    let input = serde_json::json!({"timeout_ms": 600_000, "padding": padding});
    let file = dir.0.join("input.json");
    std::fs::write(&file, input.to_string()).unwrap();
    let at_file = format!("@{}", file.display());
    let out = ok(
        &dir,
        &[
            "instances",
            "start",
            "Approval",
            "--input",
            &at_file,
            "--id",
            "big-1",
        ],
    );
    assert_eq!(out.trim(), "big-1");
    assert_eq!(status_json(&dir, "big-1")["input"], input);

    // Event data over 200 KB from standard input: the approver's name comes back in the output.
    wait_until(STUCK, || {
        (status_json(&dir, "big-1")["status"] == "Running").then_some(())
    });
    let approver = big("approver");
    let data = serde_json::json!({ "approver": approver }).to_string();
    let out = run_with_stdin(
        &dir,
        &["instances", "raise", "big-1", "approval", "-"],
        &data,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = wait_until(STUCK, || {
        let s = status_json(&dir, "big-1");
        (s["status"] == "Completed").then_some(s)
    });
    assert_eq!(done["output"], format!("approved by {approver}"));

    // The positional argument takes the same syntax: a start input from standard input, and
    // event data from a file through `--data`.
    let input = serde_json::json!({"timeout_ms": 600_000, "padding": big("stdin")});
    let out = run_with_stdin(
        &dir,
        &["instances", "start", "Approval", "-", "--id", "big-2"],
        &input.to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status_json(&dir, "big-2")["input"], input);
    let event = dir.0.join("event.json");
    std::fs::write(&event, r#"{"approver": "file"}"#).unwrap();
    let at_event = format!("@{}", event.display());
    wait_until(STUCK, || {
        (status_json(&dir, "big-2")["status"] == "Running").then_some(())
    });
    ok(
        &dir,
        &[
            "instances",
            "raise",
            "big-2",
            "approval",
            "--data",
            &at_event,
        ],
    );
    wait_until(STUCK, || {
        let s = status_json(&dir, "big-2");
        (s["output"] == "approved by file").then_some(())
    });
    worker.stop();
}

#[test]
fn unreadable_or_invalid_payloads_name_their_source() {
    let dir = TempDir::new("payload-errors");
    let missing = dir.0.join("missing.json");
    let missing_arg = format!("@{}", missing.display());
    let bad = dir.0.join("bad.json");
    std::fs::write(&bad, "{\"timeout_ms\": ").unwrap();
    let bad_arg = format!("@{}", bad.display());
    let cases = [
        (
            vec!["--input", missing_arg.as_str()],
            format!("cannot read the input from file '{}'", missing.display()),
        ),
        (
            vec![bad_arg.as_str()],
            format!(
                "the input in file '{}' is not valid JSON: EOF while parsing",
                bad.display()
            ),
        ),
    ];
    for (input, message) in cases {
        let args = [&["instances", "start", "Approval"], &input[..]].concat();
        let e = fails(&dir, &args, 1);
        assert!(e.contains(&message), "{e}");
        // Nothing was created: the payload is read before the hub is opened.
        assert!(!dir.db().exists(), "a failed start created the task hub");
    }

    ok(&dir, &["instances", "start", "Approval", "--id", "p-1"]);
    let out = run_with_stdin(&dir, &["instances", "raise", "p-1", "approval", "-"], "[1,");
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("the event data from standard input is not valid JSON"),
        "{e}"
    );
    // Both the argument and the option: a usage error.
    let e = fails(
        &dir,
        &["instances", "start", "Approval", "null", "--input", "null"],
        2,
    );
    assert!(e.contains("cannot be used with"), "{e}");
}
