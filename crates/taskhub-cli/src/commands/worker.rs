//! `taskhub worker`: runs the demo registry on `--db` until SIGINT or SIGTERM, then shuts down
//! gracefully (in-flight work finishes or is abandoned for another worker; partitions are
//! released).

use std::io::Write as _;

use anyhow::Context as _;
use taskhub::Worker;

use crate::args::GlobalArgs;
use crate::demo::workloads;
use crate::settings::{self, DEFAULT_DB};

/// Runs the worker.
pub async fn run(global: &GlobalArgs) -> anyhow::Result<()> {
    let settings = settings::resolve(global, &[])?;
    let db = settings::db_path(global, DEFAULT_DB);
    let worker_id = settings.worker_id.clone();
    let hub = settings::open_hub(&db, settings, false).await?;
    let worker = Worker::start(&hub, workloads::registry())
        .await
        .context("cannot start the worker")?;
    crate::outln!(
        "taskhub worker {worker_id} ready on {} ({} partitions); stop with Ctrl-C or SIGTERM",
        db.display(),
        hub.partition_count()
    );
    let _ = std::io::stdout().flush();
    let signal = wait_for_signal().await?;
    eprintln!("{signal}: shutting down");
    let stats = worker.stats();
    worker.shutdown().await;
    crate::outln!(
        "taskhub worker {worker_id} stopped: {} turns, {} activities, {} dead-lettered",
        stats.turns,
        stats.activities,
        stats.dead_lettered
    );
    Ok(())
}

/// Waits for SIGINT (Ctrl-C) or, on Unix, SIGTERM; returns its name.
async fn wait_for_signal() -> anyhow::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.map(|()| "SIGINT").context("cannot listen for SIGINT"),
            _ = term.recv() => Ok("SIGTERM"),
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
