//! `taskhub serve`: the HTTP management API and the dashboard on the hub, and/or the Durable
//! Task gRPC endpoint (`--grpc`), with no worker, until SIGINT or SIGTERM.

use std::io::Write as _;

use crate::args::GlobalArgs;

use super::listen::Opened;

/// Serves until a stop signal: the HTTP API on `http` (if given), the gRPC endpoint on `grpc`
/// (if given).
pub async fn run(
    global: &GlobalArgs,
    http: Option<&str>,
    grpc: Option<&str>,
) -> anyhow::Result<()> {
    let Opened {
        http: listen,
        grpc,
        mut signals,
        metrics,
        hub,
        ..
    } = super::listen::open(global, http, grpc).await?;
    let server = match (listen, metrics) {
        (Some(listen), Some(metrics)) => Some(listen.start(&hub, None, None, metrics).await?),
        _ => None,
    };
    let kinds = vec![taskhub::ProcessKind::Serve];
    let (grpc, announced) = super::listen::start_grpc_and_announce(&hub, grpc, None, kinds).await?;
    let _ = std::io::stdout().flush();
    // A newer build's migration under this process stops it with that error, rather than
    // leave it answering every read with an error.
    let moved = tokio::select! {
        signal = signals.recv() => {
            eprintln!("{}: shutting down", signal?);
            None
        }
        e = announced.schema_moved() => Some(e),
    };
    if let Some(grpc) = grpc {
        grpc.stop().await;
    }
    if let Some(server) = server {
        server.stop().await;
    }
    announced.retire().await;
    match moved {
        Some(e) => Err(anyhow::anyhow!("stopped: {e}")),
        None => Ok(()),
    }
}
