//! `taskhub-bench`: benchmark scenarios for Taskhub.
//!
//! `taskhub-bench <scenario> [--backend NAME] [--durability normal|full] [--workers N]` runs a
//! scenario on a fresh task hub of any backend of `taskhub_backends` (`sqlite`, `memory`,
//! `azure`, `postgres`; on Azure Storage or PostgreSQL a fresh hub per scenario, deleted at the
//! end; Azure's storage operations counted by kind) with in-process workers (or
//! `--worker-processes N`: the binary re-run on the scenario's hub, `harness::run_child`), the
//! store wrapped in `Instrumented`, and prints one JSON object per result on stdout, with a
//! progress bar and a table on stderr. See `bench/README.md`.
//!
//! Modules: `scenarios/` one file per scenario; `harness` (hub, worker, start and wait for
//! many); `sdk_worker` (a stand-in SDK worker in Rust, run as `taskhub-bench sdk-worker ADDR`
//! for the `grpc` scenario); `report`, `median` (`--repeat`), `procstats` (`/proc/self`),
//! `workloads`.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    reason = "a benchmark measures and paces real time, not a hub's clock, and indexes its \
              own samples (a panic is a failed run)"
)]

mod args;
mod h2_channel;
mod harness;
mod median;
mod procstats;
mod progress;
mod report;
mod scenarios;
mod sdk_worker;
mod server;
mod stats;
mod workloads;

use anyhow::Context as _;
use clap::Parser;

use args::Args;

/// The allocator: mimalloc, not the C library's. glibc's `malloc` made a quarter of the CPU of
/// a `hello5` turn over gRPC, where memory allocated on one thread is freed on another
/// (bench/README.md, "Over gRPC": "The allocator, the accept loop, the stand-in").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    // `taskhub-bench sdk-worker ADDR`: the `grpc` scenario's stand-in SDK worker (a child
    // process of the scenario; not a scenario itself).
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("sdk-worker") {
        let addr = argv
            .get(2)
            .context("sdk-worker needs the endpoint's ADDR")?
            .clone();
        // One thread: its work per item is trivial, and on the two cores it shares with the
        // server, a second thread only added wake-ups across threads (its CPU per work item,
        // `sdk_worker_cpu_us_per_work_item`, fell by about a third).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return runtime.block_on(sdk_worker::run(&addr));
    }
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    // A worker process of `--worker-processes`, started by the bench on its hub.
    if let (Ok(hub), Ok(dir)) = (
        std::env::var(harness::CHILD_HUB_VAR),
        std::env::var(harness::CHILD_DIR_VAR),
    ) {
        return runtime.block_on(harness::run_child(&args, hub, dir.into()));
    }
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let config = harness::Config::from_args(&args)?;
    let mut records = Vec::new();
    let repeat = args.repeat.max(1);
    for scenario in args.scenario.expand(args.backend) {
        let mut runs: Vec<Vec<report::Record>> = Vec::new();
        for run in 1..=repeat {
            let mut results = scenarios::run(scenario, &config).await?;
            for record in &mut results {
                if repeat > 1 {
                    record.run = Some(run.into());
                }
                println!("{}", record.to_json()?);
            }
            runs.push(results);
        }
        if repeat == 1 {
            records.extend(runs.into_iter().flatten());
            continue;
        }
        for medians in median::of_runs(&runs) {
            println!("{}", medians.to_json()?);
            records.push(medians);
        }
    }
    eprintln!("{}", report::table(&records));
    Ok(())
}
