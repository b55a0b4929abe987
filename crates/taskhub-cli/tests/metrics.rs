//! `/metrics` on loopback: `taskhub worker --http` renders the runtime's metrics in
//! Prometheus text format and they move with a run; `taskhub serve` (no worker) renders the
//! storage calls its API made.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use common::listening::{http_get, interrupt as stop, on_db, spawn_listening, HTTP};
use common::{run, TempDir};

/// Starts the command and returns it with the address from its "dashboard and API on" line.
fn spawn(dir: &TempDir, args: &[&str]) -> (Child, String) {
    let listening = spawn_listening(on_db(dir, args, false), &[HTTP]);
    let addr = listening.addr();
    (listening.child, addr)
}

/// A raw HTTP/1.1 GET: the status line, the headers and the body.
fn get(addr: &str, path: &str) -> (String, String) {
    http_get(addr, path, None)
}

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

#[test]
fn worker_http_serves_metrics_that_move_with_a_run() {
    let dir = TempDir::new("metrics-worker");
    let (child, addr) = spawn(&dir, &["worker", "--http", "127.0.0.1:0"]);
    let (head, before) = get(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain"), "{head}");
    let done = r#"taskhub_activities_completed_total{activity="SayHello"}"#;
    assert_eq!(value(&before, done), None, "{before}");
    assert_eq!(
        value(&before, "taskhub_partition_leases_held"),
        Some(4.0),
        "{before}"
    );
    // Queues are sampled only while someone looks: this first scrape turns sampling on, and
    // the gauges show from the worker's next lease pass.
    let started = Instant::now();
    loop {
        let (_, text) = get(&addr, "/metrics");
        if text.contains(r#"taskhub_queue_depth{queue="workitems"}"#) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "a scrape did not turn queue sampling on: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let out = run(
        &dir,
        &["instances", "start", "HelloCities", "--id", "metrics-1"],
    );
    assert!(out.status.success(), "{out:?}");
    // Waiting on observable state: the rendered counters.
    let started = Instant::now();
    let text = loop {
        let (_, text) = get(&addr, "/metrics");
        if value(&text, done) == Some(3.0)
            && value(
                &text,
                r#"taskhub_orchestration_turns_total{orchestration="HelloCities"}"#,
            )
            .is_some_and(|t| t >= 4.0)
        {
            break text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the run never showed in /metrics: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        value(
            &text,
            r#"taskhub_storage_calls_total{operation="checkpoint"}"#
        )
        .unwrap()
            >= 4.0
    );
    assert!(value(&text, "taskhub_checkpoint_duration_seconds_count").unwrap() >= 4.0);
    assert!(
        text.contains("taskhub_checkpoint_duration_seconds_bucket{le=\"0.001\"}"),
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            r#"taskhub_activity_duration_seconds_count{activity="SayHello"}"#
        ),
        Some(3.0)
    );
    stop(child);
}

#[test]
fn serve_renders_the_storage_calls_of_its_api() {
    let dir = TempDir::new("metrics-serve");
    let (child, addr) = spawn(&dir, &["serve", "--addr", "127.0.0.1:0"]);
    let (head, _) = get(&addr, "/runtime/webhooks/durabletask/instances/nobody");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, text) = get(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        value(
            &text,
            r#"taskhub_storage_calls_total{operation="get_instance"}"#
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    stop(child);
}
