//! The pool's gauges: after a few calls, a Prometheus recorder shows the pool's open, idle and
//! waiting connections for the hub. Run with
//! `scripts/with-postgres.sh cargo test -p taskhub-postgres --test pool_metrics`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use taskhub_postgres::{POOL_CONNECTIONS, POOL_IDLE, POOL_WAITING};
use taskhub_storage::{PartitionStore, QueueName, QueueStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_reports_its_connections() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .unwrap();
    let store = common::fresh_store(taskhub_storage::conformance::start_clock()).await;
    store.hub_info().await.unwrap();
    store.stats(QueueName::WorkItems).await.unwrap();
    let pool = store.pool_status();
    assert!(pool.size >= 1 && pool.size <= pool.max_size, "{pool:?}");
    let text = recorder.render();
    let hub = format!("hub=\"{}\"", store.schema());
    for name in [POOL_CONNECTIONS, POOL_IDLE, POOL_WAITING] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(name) && l.contains(&hub)),
            "{name} for {hub} in:\n{text}"
        );
    }
}
