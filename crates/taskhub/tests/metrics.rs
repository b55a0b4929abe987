//! The runtime's metrics reach a recorder: after a run the Prometheus rendering shows the
//! turns, the activities started, completed and failed by name, the checkpoint and activity
//! histograms, the queue gauges of the held partitions, the leases held and their epoch
//! changes, a dead letter, the sessions in memory and the storage calls by operation.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::queues::enqueue_now;
use common::*;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use taskhub::telemetry::names;
use taskhub::*;
use taskhub_storage::{Instrumented, QueueName, SystemClock};

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Ok", |_ctx: ActivityContext, n: u64| async move {
        Ok::<_, ActivityError>(n + 1)
    });
    reg.activity("Boom", |_ctx: ActivityContext, _: ()| async move {
        Err::<u64, _>(ActivityError::new("boom"))
    });
    reg.orchestration("Metered", |ctx: OrchestrationContext, _: ()| async move {
        let a: u64 = ctx.call_activity("Ok", 1u64).await?;
        let failed = ctx.call_activity::<_, u64>("Boom", ()).await.is_err();
        ctx.sleep(Duration::from_millis(10)).await;
        Ok::<_, OrchestrationError>((a, failed))
    });
    reg
}

fn recorder() -> PrometheusHandle {
    let mut builder = PrometheusBuilder::new();
    for name in names::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(name.to_owned()), &[0.001, 0.1, 1.0])
            .unwrap();
    }
    builder.install_recorder().unwrap()
}

/// The value of the series `series` (name and labels as rendered), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

/// The sum of every series of `name` (all label values).
fn sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_moves_the_runtime_metrics() {
    let handle = recorder();
    taskhub::telemetry::enable_queue_sampling(true);
    let before = handle.render();
    assert_eq!(sum(&before, names::TURNS), 0.0, "{before}");

    let store = taskhub_storage::memory::MemoryStore::new(Arc::new(SystemClock::new()));
    let hub = TaskHub::open(Arc::new(Instrumented::new(store)), fast_settings())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("Metered", ()).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    // A malformed message is dead-lettered at once.
    enqueue_now(
        hub.store().as_ref(),
        QueueName::Control(0),
        "not a message".into(),
    )
    .await;
    let dead = r#"taskhub_dead_letters_total{queue="control-00"}"#;
    // The finished session leaves memory right after its last turn is published.
    wait::until(
        "the dead letter counted and the finished session gone",
        || {
            let text = handle.render();
            value(&text, dead) == Some(1.0)
                && value(&text, "taskhub_sessions_in_memory") == Some(0.0)
        },
        || handle.render(),
    )
    .await;

    let text = handle.render();
    let v = |series: &str| value(&text, series).unwrap_or_else(|| panic!("{series} in {text}"));
    assert!(v(r#"taskhub_orchestration_turns_total{orchestration="Metered"}"#) >= 4.0);
    assert_eq!(v(r#"taskhub_activities_started_total{activity="Ok"}"#), 1.0);
    assert_eq!(
        v(r#"taskhub_activities_completed_total{activity="Ok"}"#),
        1.0
    );
    assert_eq!(
        v(r#"taskhub_activities_started_total{activity="Boom"}"#),
        1.0
    );
    assert_eq!(
        v(r#"taskhub_activities_failed_total{activity="Boom"}"#),
        1.0
    );
    assert_eq!(
        value(
            &text,
            r#"taskhub_activities_completed_total{activity="Boom"}"#
        ),
        None
    );
    assert_eq!(
        v(r#"taskhub_activity_duration_seconds_count{activity="Ok"}"#),
        1.0
    );
    assert!(v("taskhub_checkpoint_duration_seconds_count") >= 4.0);
    let partitions = f64::from(hub.partition_count());
    assert_eq!(v("taskhub_partition_leases_held"), partitions);
    assert_eq!(sum(&text, names::EPOCH_CHANGES), partitions);
    for p in 0..hub.partition_count() {
        assert!(
            value(
                &text,
                &format!("taskhub_queue_depth{{queue=\"control-{p:02}\"}}")
            )
            .is_some(),
            "{text}"
        );
    }
    assert!(value(
        &text,
        r#"taskhub_queue_oldest_message_age_seconds{queue="workitems"}"#
    )
    .is_some());
    assert!(v(r#"taskhub_storage_calls_total{operation="checkpoint"}"#) >= 4.0);
    assert!(v(r#"taskhub_storage_calls_total{operation="dequeue"}"#) >= 1.0);

    worker.shutdown().await;
    let after = handle.render();
    assert_eq!(
        value(&after, "taskhub_partition_leases_held"),
        Some(0.0),
        "{after}"
    );
}
