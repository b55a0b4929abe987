//! The JSON of `instances start`, `instances raise` and `entities signal` is passed on as the
//! text given, not re-parsed into `serde_json::Value`: an integer beyond 64 bits keeps every
//! digit (a `Value` would store `1.2345678901234568e+22`), and `--json` shows it so.
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;

/// 23 digits: more than `u64` or `f64` keep.
const BIG: &str = "12345678901234567890123";

/// The stored text of every history event of `kind` (its `input`) in `history --json`.
fn inputs_of(dir: &TempDir, id: &str, kind: &str) -> Vec<String> {
    let events = json(dir, &["instances", "history", id, "--json"]);
    events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            e["event"]["event"][kind]["input"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn big_integers_in_start_input_and_event_data_keep_their_digits() {
    let dir = TempDir::new("payload-precision");
    let worker = WorkerChild::start(&dir);

    // The input from a file (`Approval` ignores the extra field and waits for its event).
    let input = format!(r#"{{"timeout_ms": 600000, "big": {BIG}}}"#);
    let file = dir.0.join("big.json");
    std::fs::write(&file, &input).unwrap();
    let at_file = format!("@{}", file.display());
    let out = ok(
        &dir,
        &["instances", "start", "Approval", &at_file, "--id", "p-1"],
    );
    assert_eq!(out.trim(), "p-1");

    // The event data inline, positional.
    wait_until(STUCK, || {
        (json(&dir, &["instances", "show", "p-1", "--json"])["status"] == "Running").then_some(())
    });
    let data = format!(r#"{{"approver": "ana", "big": {BIG}}}"#);
    ok(&dir, &["instances", "raise", "p-1", "approval", &data]);
    wait_until(STUCK, || {
        (json(&dir, &["instances", "show", "p-1", "--json"])["status"] == "Completed").then_some(())
    });
    worker.stop();

    // What history recorded is the text given, digit for digit.
    let started = inputs_of(&dir, "p-1", "ExecutionStarted");
    assert_eq!(started, std::slice::from_ref(&input), "the start's input");
    let raised = inputs_of(&dir, "p-1", "EventRaised");
    assert_eq!(raised, [data], "the event's data");
    assert_eq!(
        json(&dir, &["instances", "show", "p-1", "--json"])["output"],
        "approved by ana"
    );

    // `--json` shows the stored text of a payload a `Value` would round (the rest as before).
    let shown = ok(&dir, &["instances", "show", "p-1", "--json"]);
    assert!(shown.contains(&format!(r#""input": {input}"#)), "{shown}");
    let listed = ok(&dir, &["instances", "list", "--json"]);
    assert!(listed.contains(&format!(r#""input": {input}"#)), "{listed}");
}
