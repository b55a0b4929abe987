//! Metrics for `taskhub serve` and `taskhub worker --http`: a Prometheus recorder installed for
//! the process (no listener of its own: the HTTP API renders it at `/metrics`), the store
//! wrapped in [`Instrumented`](taskhub_storage::Instrumented) so storage calls are counted by operation, and queue sampling
//! turned on while someone looks (a `/metrics` scrape or a dashboard request in the last
//! minute: an idle worker nobody watches makes no sampling calls). Other commands install
//! nothing, so their metrics cost the facade's no-op.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use taskhub::telemetry::names;
use taskhub_http::MetricsRender;

/// Set once a recorder is installed: stores opened afterwards are instrumented.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Histogram buckets in seconds: 1 ms to 1 min.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 60.0,
];

/// Installs the Prometheus recorder for this process and turns queue sampling on while
/// watched ([`QueueSampling::WhileWatched`](taskhub::telemetry::QueueSampling)); returns the
/// renderer for `/metrics`. Call it before opening the hub. Needs a Tokio runtime (a task
/// keeps the histograms drained).
pub fn install() -> anyhow::Result<MetricsRender> {
    let mut builder = PrometheusBuilder::new();
    for name in names::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(name.to_owned()), &BUCKETS)
            .context("cannot set the histogram buckets")?;
    }
    let handle = builder
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    INSTALLED.store(true, Ordering::SeqCst);
    taskhub::telemetry::set_queue_sampling(taskhub::telemetry::QueueSampling::WhileWatched);
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            #[expect(
                clippy::disallowed_methods,
                reason = "the exporter's upkeep runs in real time for the process, not a hub"
            )]
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    Ok(Arc::new(move || handle.render()))
}

/// True once a recorder is installed: stores opened afterwards are counted by
/// [`Instrumented`](taskhub_storage::Instrumented).
pub fn installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}
