//! `large-starts`: memory after a burst of large starts over the Durable Task gRPC protocol
//! (issue 33, item 3). The endpoint (`taskhub worker --grpc` in process: an empty registry,
//! every turn through the dispatcher) takes `n` (12) `StartInstance` calls of a 15 MB input,
//! one after the other, with no SDK worker connected; the turns find no worker and wait or go
//! back to their queue. After `settle` (20 s) the stand-in SDK worker connects and completes
//! them all; after another `settle` the process's RSS is read again.
//!
//! Reported: RSS at idle before the burst, its peak, RSS while the turns wait for a worker
//! (what they hold), and RSS once all are done (what was not given back). Target: while they
//! wait, at most the idle level plus 512 MiB (the dispatcher's waiting budget and the turns
//! it holds); once done, at most the idle level plus 128 MiB.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use taskhub::{InstanceId, InstanceStatus, Registry};
use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::CreateInstanceRequest;
use taskhub_grpc::{Dispatcher, DispatcherSettings};

use super::grpc::Remote;
use super::{Span, TIMEOUT};
use crate::h2_channel::H2Channel;
use crate::harness::{wait_all, Bench, Config};
use crate::procstats;
use crate::report::{round1, Record};

/// The size of each start's input: under the protocol's 16 MiB message limit.
const INPUT_BYTES: usize = 15 * 1000 * 1000;

/// The most RSS (MiB over idle) the waiting turns may hold.
const WAITING_MIB: f64 = 512.0;

/// The most RSS (MiB over idle) left once every instance is done.
const AFTER_MIB: f64 = 128.0;

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(12);
    let settle = config
        .time(Duration::from_secs(20))
        .max(Duration::from_secs(1));
    let bench = Bench::open_with(config, config.settings(&[])?, Registry::new(), |hub| {
        // The stand-in reads messages up to the protocol's limit and does not stream history:
        // its turns of a 15 MB input go to it inline (by default a turn over 4 MiB goes only to
        // a worker that streams history, and would never be handed out here).
        let mut settings = DispatcherSettings::default();
        settings.inline_history_bytes = taskhub_grpc::MAX_MESSAGE_BYTES;
        Some(Dispatcher::new(Arc::clone(hub.clock()), settings))
    })
    .await?;
    let dispatcher = bench
        .dispatcher
        .clone()
        .context("the bench has a dispatcher")?;
    let mut remote = Remote::serve(&bench, dispatcher).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = procstats::rss_mb();
    let span = Span::begin(&bench);
    let ids = burst(&remote.addr, n).await?;
    let after_burst = procstats::rss_mb();
    tokio::time::sleep(settle).await;
    let waiting = procstats::rss_mb();
    remote.connect_worker().await?;
    check_outputs(wait_all(&bench.client, ids.iter().cloned(), TIMEOUT).await?)?;
    let m = span.end();
    tokio::time::sleep(settle).await;
    let after = procstats::rss_mb();
    remote.stop().await;
    bench.close().await;
    let over = |rss: Option<f64>| rss.zip(idle).map(|(r, i)| r - i);
    let mut record = m
        .record("large-starts", config, n, n)
        .rate("starts/s")
        .extra("input_mb", round1(INPUT_BYTES as f64 / 1e6))
        .extra("settle_seconds", settle.as_secs())
        .settings(config.changed_settings(&[]));
    for (key, value) in [
        ("rss_mb_idle", idle),
        ("rss_mb_after_burst", after_burst),
        ("rss_mb_waiting", waiting),
        ("rss_mb_after", after),
    ] {
        if let Some(v) = value {
            record = record.extra(key, round1(v));
        }
    }
    let met = over(waiting).is_some_and(|w| w <= WAITING_MIB)
        && over(after).is_some_and(|a| a <= AFTER_MIB);
    Ok(vec![record.target(
        "RSS while waiting <= idle + 512 MiB, after <= idle + 128 MiB",
        met,
    )])
}

/// Checks that each instance saw its whole input (the stand-in completes with its size), and
/// drops the statuses: each holds its input, which would count as the server's memory.
fn check_outputs(done: Vec<InstanceStatus>) -> anyhow::Result<()> {
    for status in done {
        let size = status
            .row
            .output
            .as_ref()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        anyhow::ensure!(
            size == INPUT_BYTES.to_string(),
            "{} saw an input of {size} bytes, not {INPUT_BYTES}",
            status.row.instance_id
        );
    }
    Ok(())
}

/// Sends `n` large starts to the endpoint at `addr`, one after the other.
async fn burst(addr: &str, n: u64) -> anyhow::Result<Vec<InstanceId>> {
    let origin = format!("http://{addr}")
        .parse()
        .with_context(|| format!("not an address: {addr}"))?;
    let mut client =
        TaskHubSidecarServiceClient::with_origin(H2Channel::connect(addr).await?, origin)
            .max_encoding_message_size(taskhub_grpc::MAX_MESSAGE_BYTES);
    // A JSON string of `INPUT_BYTES` bytes, quotes included.
    let input = format!("\"{}\"", "x".repeat(INPUT_BYTES - 2));
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("big-{i}");
        client
            .start_instance(CreateInstanceRequest {
                instance_id: id.clone(),
                name: "Big".into(),
                input: Some(input.clone()),
                ..CreateInstanceRequest::default()
            })
            .await
            .with_context(|| {
                format!(
                    "StartInstance {id} ({:?} into the burst)",
                    started.elapsed()
                )
            })?;
        ids.push(InstanceId::new(id)?);
    }
    Ok(ids)
}
