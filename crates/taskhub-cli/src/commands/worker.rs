//! `taskhub worker`: runs the demo registry on `--db` until SIGINT or SIGTERM, then shuts down
//! gracefully (in-flight work finishes or is abandoned for another worker; partitions are
//! released). With `--http ADDR` it also serves the management API and the dashboard; with
//! `--grpc ADDR` the Durable Task gRPC endpoint: the SDKs' client calls, and SDK workers
//! (Python, JavaScript, ...) that run every orchestration, activity and entity the demo registry does
//! not name.

use std::io::Write as _;

use std::sync::Arc;

use anyhow::Context as _;
use taskhub::Worker;
use taskhub_grpc::Dispatcher;

use crate::args::GlobalArgs;
use crate::demo::workloads;

use super::listen::Opened;

/// Runs the worker.
pub async fn run(
    global: &GlobalArgs,
    http: Option<&str>,
    grpc: Option<&str>,
) -> anyhow::Result<()> {
    let Opened {
        resolved,
        http,
        grpc,
        mut signals,
        metrics,
        hub,
    } = super::listen::open(global, http, grpc).await?;
    // With --grpc, what the registry does not name goes to the connected SDK workers.
    let dispatcher = grpc
        .as_ref()
        .map(|_| Dispatcher::new(Arc::clone(hub.clock()), resolved.own.dispatcher()));
    let worker = match &dispatcher {
        Some(d) => {
            Worker::start_with_executor(&hub, workloads::registry(), Arc::new(d.clone())).await
        }
        None => Worker::start(&hub, workloads::registry()).await,
    }
    .context("cannot start the worker")?;
    let server = match (http, metrics) {
        (Some(listen), Some(metrics)) => Some(
            listen
                .start(
                    &hub,
                    Some(worker.stats_source()),
                    dispatcher.as_ref().map(Dispatcher::unmatched_source),
                    metrics,
                )
                .await?,
        ),
        _ => None,
    };
    let mut kinds = Vec::new();
    if server.is_some() {
        kinds.push(taskhub::ProcessKind::Http);
    }
    let (grpc, announced) =
        super::listen::start_grpc_and_announce(&hub, grpc, dispatcher, kinds).await?;
    let worker_id = worker.name().to_owned();
    crate::outln!(
        "taskhub worker {worker_id} ready on {} ({} partitions); stop with Ctrl-C or SIGTERM",
        resolved.hub.place(),
        hub.partition_count()
    );
    let _ = std::io::stdout().flush();
    // A newer build's migration under this process stops it with that error, rather than
    // leave it serving errors.
    let moved = tokio::select! {
        signal = signals.recv() => {
            eprintln!("{}: shutting down", signal?);
            None
        }
        why = super::announce::worker_halted(&hub, &worker) => Some(why),
        e = announced.schema_moved() => Some(e.to_string()),
    };
    if let Some(server) = server {
        server.stop().await;
    }
    let stats = worker.stats();
    // The gRPC endpoint stays up while the worker drains, so connected SDK workers can still
    // answer the turns and activities they hold; then their streams end.
    worker.shutdown().await;
    if let Some(grpc) = grpc {
        grpc.stop().await;
    }
    announced.retire().await;
    crate::outln!(
        "taskhub worker {worker_id} stopped: {} turns, {} activities, {} dead-lettered",
        stats.turns,
        stats.activities,
        stats.dead_lettered
    );
    match moved {
        Some(why) => Err(anyhow::anyhow!("the worker stopped taking work: {why}")),
        None => Ok(()),
    }
}

/// The stop signals, listened for from creation on (so a signal that arrives right after the
/// ready line is not missed).
pub(crate) struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Installs the handlers for SIGINT and, on Unix, SIGTERM.
    pub(crate) fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
                terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for one; returns its name.
    pub(crate) async fn recv(&mut self) -> anyhow::Result<&'static str> {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => Ok("SIGINT"),
                _ = self.terminate.recv() => Ok("SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c()
                .await
                .context("cannot listen for Ctrl-C")?;
            Ok("Ctrl-C")
        }
    }
}
