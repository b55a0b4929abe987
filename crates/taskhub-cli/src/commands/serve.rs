//! `taskhub serve`: the HTTP management API and the dashboard on the hub, with no worker,
//! until SIGINT or SIGTERM.

use std::io::Write as _;

use crate::args::GlobalArgs;
use crate::settings::{self, DEFAULT_DB};

use super::http::Listen;
use super::worker::StopSignals;

/// Serves until a stop signal.
pub async fn run(global: &GlobalArgs, addr: &str) -> anyhow::Result<()> {
    let settings = settings::resolve(global, &[])?;
    let listen = Listen::check(addr, &settings)?;
    let db = settings::db_path(global, DEFAULT_DB);
    let mut signals = StopSignals::install()?;
    let metrics = crate::metrics::install()?;
    let hub = settings::open_hub(global, &db, settings, false).await?;
    let server = listen.start(&hub, None, metrics).await?;
    let _ = std::io::stdout().flush();
    let signal = signals.recv().await?;
    eprintln!("{signal}: shutting down");
    server.stop().await;
    Ok(())
}
