//! `taskhub`: the command-line tool of Taskhub.
//!
//! * `taskhub demo` runs sample workloads on a fresh SQLite task hub with one in-process worker
//!   and prints a table of the results;
//! * `taskhub worker` runs a worker with the demo registry until SIGINT or SIGTERM (with
//!   `--http ADDR`, also the HTTP management API and dashboard);
//! * `taskhub serve` serves the HTTP management API and dashboard without a worker;
//! * `taskhub instances ...` and `taskhub dead-letters ...` inspect and control a task hub;
//! * `taskhub partitions ...`, `taskhub workers ...` and `taskhub scale` operate its leases.
//!
//! Settings resolve as defaults < `taskhub.toml` < `TASKHUB_*` environment variables < flags
//! (see [`settings`]). Errors are printed as one `error: ...` line and exit with code 1; usage
//! errors exit with clap's code 2.

mod args;
mod azure;
mod commands;
mod demo;
mod metrics;
mod output;
mod settings;
mod table;
mod timefmt;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr; the level comes from `RUST_LOG` and defaults to `warn` so that the demo's
/// output stays clean.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => demo::run(&cli.global, &args).await,
        Command::Worker { http } => commands::worker::run(&cli.global, http.as_deref()).await,
        Command::Serve { addr } => commands::serve::run(&cli.global, &addr).await,
        Command::Instances(cmd) => commands::instances::run(&cli.global, cmd).await,
        Command::DeadLetters(cmd) => commands::dead_letters::run(&cli.global, cmd).await,
        Command::Partitions { cmd, json } => {
            commands::partitions::run(&cli.global, cmd, json).await
        }
        Command::Workers(cmd) => commands::partitions::workers(&cli.global, cmd).await,
        Command::Scale { samples, interval } => {
            commands::partitions::scale(&cli.global, samples, &interval).await
        }
    }
}
