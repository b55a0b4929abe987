//! `taskhub`: the command-line tool of Taskhub.
//!
//! Every command opens the task hub the `backend` setting names, through `taskhub_backends`
//! ([`settings`]): a SQLite file (`--db`, the default), a hub on Azure Storage
//! (`--backend azure`), a schema on a PostgreSQL server (`--backend postgres`), or a memory hub;
//! `--help` lists every backend (`backend_help`).
//!
//! * `taskhub demo` runs sample workloads on a fresh task hub with one in-process worker (or
//!   `--workers N` worker processes) and prints a table of the results;
//! * `taskhub worker` runs a worker with the demo registry until SIGINT or SIGTERM (with
//!   `--http ADDR`, also the HTTP management API and dashboard);
//! * `taskhub serve` serves the HTTP management API and dashboard without a worker;
//! * `taskhub instances ...`, `taskhub entities ...` and `taskhub dead-letters ...` inspect and
//!   control a task hub, `taskhub hub delete` deletes one;
//! * `taskhub partitions ...`, `taskhub workers ...` and `taskhub scale` operate its leases.
//!
//! Settings resolve as defaults < `taskhub.toml` < `TASKHUB_*` environment variables < flags
//! (see [`settings`]). Errors are printed as one `error: ...` line and exit with code 1; usage
//! errors exit with clap's code 2; a purge whose time budget ran out with work left exits 3;
//! `instances start --wait` whose instance ended Failed or Terminated exits 4.
//!
//! Modules: `args` (the clap command), `backend_help`, [`settings`] (the runtime's settings,
//! the binary's own in `own_settings` and the backend's options, from one `taskhub.toml`, the
//! environment and the flags), `commands/` (one file per command; `worker --grpc` makes a
//! `taskhub_grpc::Dispatcher` the worker's `RemoteExecutor` in `grpc.rs`; `json_input` and
//! `json_out` pass payloads on and show them as their stored text, never re-parsed into a
//! `serde_json::Value`, which would round integers beyond 64 bits; `api_read`: `partitions
//! --api` and `scale --api` read a serving process's `/api/stats` or `/api/scale`), `demo/`,
//! `metrics` (the Prometheus recorder of `serve` and `worker --http`, queue sampling on),
//! `otlp` (feature `otlp`: the runtime's spans exported over OTLP/HTTP), `table`, `timefmt`
//! (times through `taskhub::time`).

mod args;
mod backend_help;
mod commands;
mod demo;
mod metrics;
#[cfg(feature = "otlp")]
mod otlp;
mod output;
mod own_settings;
mod settings;
mod table;
mod timefmt;

use std::process::ExitCode;

use args::{Cli, Command};

/// The allocator: mimalloc, not the C library's. glibc's `malloc` made a quarter of the CPU of
/// a `hello5` turn over gRPC, where memory allocated on one thread is freed on another
/// (bench/README.md, "Over gRPC": "The allocator, the accept loop, the stand-in").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = backend_help::parse();
    #[cfg(feature = "otlp")]
    let otlp = init_tracing(&cli);
    #[cfg(not(feature = "otlp"))]
    init_tracing(&cli);
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
    let result = runtime.block_on(run(cli));
    #[cfg(feature = "otlp")]
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<commands::Unfinished>().is_some() => ExitCode::from(3),
        Err(e) if e.downcast_ref::<commands::NotCompleted>().is_some() => {
            eprintln!("error: {e:#}");
            ExitCode::from(commands::EXIT_NOT_COMPLETED)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr; the level comes from `RUST_LOG` and defaults to `warn` so that the demo's
/// output stays clean. With the `otlp` feature and an `otlp_endpoint` setting, the runtime's
/// spans are also exported (whatever the log level); the returned handle flushes them.
#[cfg(feature = "otlp")]
fn init_tracing(cli: &Cli) -> Option<otlp::Otlp> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;

    // A bad setting is reported by the command itself.
    let endpoint = settings::resolve(&cli.global, &[])
        .map(|r| r.own.otlp_endpoint)
        .unwrap_or_default();
    let (handle, layer) = if endpoint.is_empty() {
        (None, None)
    } else {
        match otlp::Otlp::start(&endpoint) {
            Ok((h, l)) => (Some(h), Some(l)),
            Err(e) => {
                eprintln!("warning: {e:#}; spans are not exported");
                (None, None)
            }
        }
    };
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(log_filter()),
        )
        .with(layer)
        .try_init();
    handle
}

/// Logs go to stderr; the level comes from `RUST_LOG` and defaults to `warn` so that the demo's
/// output stays clean. (Built without the `otlp` feature: an `otlp_endpoint` is warned about.)
#[cfg(not(feature = "otlp"))]
fn init_tracing(cli: &Cli) {
    if settings::resolve(&cli.global, &[]).is_ok_and(|r| !r.own.otlp_endpoint.is_empty()) {
        eprintln!(
            "warning: otlp_endpoint is set but this taskhub was built without the `otlp` feature; spans are not exported"
        );
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(log_filter())
        .with_writer(std::io::stderr)
        .try_init();
}

fn log_filter() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => demo::run(&cli.global, &args).await,
        Command::Worker { http, grpc } => {
            commands::worker::run(&cli.global, http.as_deref(), grpc.as_deref()).await
        }
        Command::Serve {
            addr,
            grpc,
            no_http,
        } => {
            let http = (!no_http).then_some(addr.as_str());
            commands::serve::run(&cli.global, http, grpc.as_deref()).await
        }
        Command::Instances(cmd) => commands::instances::run(&cli.global, *cmd).await,
        Command::Entities(cmd) => commands::entities::run(&cli.global, cmd).await,
        Command::DeadLetters(cmd) => commands::dead_letters::run(&cli.global, cmd).await,
        Command::Partitions { cmd, json, api } => {
            commands::partitions::run(&cli.global, cmd, json, api.as_deref()).await
        }
        Command::Workers(cmd) => commands::partitions::workers(&cli.global, cmd).await,
        Command::Hub(cmd) => commands::hub::run(&cli.global, cmd).await,
        Command::Scale {
            samples,
            interval,
            api,
        } => commands::partitions::scale(&cli.global, samples, &interval, api.as_deref()).await,
    }
}
