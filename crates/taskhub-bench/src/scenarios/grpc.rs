//! `grpc`: `hello5` (1,000 orchestrations of five sequential activities) and a 1,000-activity
//! fan-out, each run twice in one sitting: in process (Rust orchestrations in the worker's
//! registry) and over the Durable Task gRPC protocol (an empty registry; every turn and
//! activity goes through the endpoint's dispatcher to a stand-in SDK worker written in Rust,
//! in a child process: `sdk_worker.rs`). The records give the gRPC throughput as a share of
//! the in-process one and the server's CPU per work item (turns + activities; this process
//! only, the stand-in's CPU is its own).

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use taskhub::{Registry, Settings};
use taskhub_grpc::{Dispatcher, DispatcherSettings, GrpcConfig};

use crate::harness::{start_many, wait_one, wait_started, Bench, Config};
use crate::progress;
use crate::report::{round1, round3, Record};
use crate::workloads::{registry, Stamps};

use super::{Measured, Span, TIMEOUT};

/// The fan-outs of 1,000 one fan-out record runs, one after the other: one alone lasts about
/// 20 ms in process, within the noise of a shared machine and of the CPU clock's 10 ms tick.
const FAN_OUTS: u64 = 5;

/// The workloads compared.
#[derive(Clone, Copy)]
enum Workload {
    Hello5,
    FanOut,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Self::Hello5 => "hello5",
            Self::FanOut => "fanout-1000",
        }
    }
}

/// The endpoint and the stand-in SDK worker of a gRPC run.
pub(super) struct Remote {
    dispatcher: Dispatcher,
    /// Where the endpoint listens (`host:port`).
    pub(super) addr: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), taskhub_grpc::GrpcError>>,
    child: Option<tokio::process::Child>,
}

impl Remote {
    /// The endpoint with the stand-in connected.
    async fn start(bench: &Bench, dispatcher: Dispatcher) -> anyhow::Result<Self> {
        let mut remote = Self::serve(bench, dispatcher).await?;
        remote.connect_worker().await?;
        Ok(remote)
    }

    /// The endpoint alone, on a free loopback port (no SDK worker connected yet).
    pub(super) async fn serve(bench: &Bench, dispatcher: Dispatcher) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?.to_string();
        let config = GrpcConfig::new(bench.hub.clone()).with_workers(Arc::new(dispatcher.clone()));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(taskhub_grpc::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        Ok(Self {
            dispatcher,
            addr,
            stop,
            server,
            child: None,
        })
    }

    /// Starts the stand-in SDK worker (a child process) and waits until it is connected.
    pub(super) async fn connect_worker(&mut self) -> anyhow::Result<()> {
        let child = tokio::process::Command::new(std::env::current_exe()?)
            .arg("sdk-worker")
            .arg(&self.addr)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the stand-in SDK worker")?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.dispatcher.connected_workers() == 0 {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the stand-in SDK worker did not connect within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// The stand-in's CPU time so far.
    fn worker_cpu(&self) -> Option<Duration> {
        crate::procstats::cpu_time_of(self.child.as_ref()?.id()?)
    }

    pub(super) async fn stop(mut self) {
        self.dispatcher.close();
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.server).await;
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
}

/// One run of a workload.
struct Run {
    m: Measured,
    /// Its work items (turns + activities).
    items: u64,
    /// Its unit count.
    n: u64,
    /// Over gRPC: the most orchestration and activity items that were out at once.
    peak: Option<[usize; 2]>,
    /// Over gRPC: the stand-in SDK worker's CPU time over the measured part.
    worker_cpu: Option<Duration>,
}

/// A bench whose registry is empty: everything goes through its dispatcher to the stand-in
/// SDK worker, started here.
async fn open_remote(
    config: &Config,
    settings: Settings,
) -> anyhow::Result<(Bench, Dispatcher, Remote)> {
    let bench = Bench::open_with(config, settings, Registry::new(), |hub| {
        Some(Dispatcher::new(
            Arc::clone(hub.clock()),
            DispatcherSettings::default(),
        ))
    })
    .await?;
    let dispatcher = bench
        .dispatcher
        .clone()
        .context("the bench has a dispatcher")?;
    let remote = Remote::start(&bench, dispatcher.clone()).await?;
    Ok((bench, dispatcher, remote))
}

/// Runs `workload` once.
async fn measure(config: &Config, workload: Workload, over_grpc: bool) -> anyhow::Result<Run> {
    let settings = config.settings(&[])?;
    let (bench, remote) = if over_grpc {
        let (bench, _, remote) = open_remote(config, settings).await?;
        (bench, Some(remote))
    } else {
        (
            Bench::open(config, settings, registry(&Stamps::default())).await?,
            None,
        )
    };
    let before = bench.stats();
    let worker_before = remote.as_ref().and_then(Remote::worker_cpu);
    let span = Span::begin(&bench);
    let label = format!(
        "grpc {} {}",
        workload.label(),
        if over_grpc { "gRPC" } else { "in-process" }
    );
    let n = match workload {
        Workload::Hello5 => {
            let n = config.count(1_000);
            let work = async {
                let started = start_many(&bench.client, "Hello5", "hello", (), n).await?;
                wait_started(&bench.client, started, TIMEOUT).await
            };
            progress::drive(&label, n * 5, work, || bench.stats().activities).await?;
            n
        }
        Workload::FanOut => {
            let n = config.count(1_000);
            let work = async {
                for round in 0..FAN_OUTS {
                    let prefix = format!("fan{round}");
                    let started = start_many(&bench.client, "FanOut", &prefix, n, 1).await?;
                    wait_one(&bench.client, &started[0].0, TIMEOUT).await?;
                }
                anyhow::Ok(())
            };
            progress::drive(&label, n * FAN_OUTS, work, || bench.stats().activities).await?;
            n * FAN_OUTS
        }
    };
    let m = span.end();
    let worker_after = remote.as_ref().and_then(Remote::worker_cpu);
    let after = bench.stats();
    let items = (after.turns - before.turns) + (after.activities - before.activities);
    let peak = bench.dispatcher.as_ref().map(Dispatcher::peak_items);
    if let Some(r) = remote {
        r.stop().await;
    }
    bench.close().await;
    Ok(Run {
        m,
        items,
        n,
        peak,
        worker_cpu: worker_before
            .zip(worker_after)
            .map(|(b, a)| a.saturating_sub(b)),
    })
}

/// The dispatcher and the protocol alone, without the runtime: `n` activities through
/// `RemoteExecutor::run_activity`, 1,000 in flight, answered by the stand-in. The ceiling the
/// gRPC path could reach if storage and queues cost nothing.
async fn dispatcher_only(config: &Config) -> anyhow::Result<Record> {
    use taskhub::executor::{ActivityWork, RemoteExecutor as _};
    use taskhub::{ExecutionId, InstanceId, Payload};
    let n = config.count(10_000);
    let (bench, dispatcher, remote) = open_remote(config, config.settings(&[])?).await?;
    let instance = InstanceId::new("bench")?;
    let execution = ExecutionId::new("e")?;
    let span = Span::begin(&bench);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(1_000));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let permit = Arc::clone(&semaphore).acquire_owned().await?;
        let d = dispatcher.clone();
        let work = ActivityWork::new(instance.clone(), execution.clone(), i, "Noop".into())
            .with_input(Payload::from_json(i.to_string())?);
        tasks.spawn(async move {
            let _permit = permit;
            d.run_activity(work).await
        });
    }
    while let Some(r) = tasks.join_next().await {
        r?.map_err(|e| anyhow::anyhow!("{e}"))?
            .map_err(|f| anyhow::anyhow!("{f}"))?;
    }
    let m = span.end();
    remote.stop().await;
    bench.close().await;
    // No storage per step: the runtime takes no part (only an idle worker's polls run).
    let mut record = m
        .record("grpc", config, n, 0)
        .variant("dispatcher only (no runtime)")
        .rate("activities/s")
        .extra("work_items", n);
    if let Some(cpu) = m.cpu {
        record = record.extra(
            "server_cpu_us_per_work_item",
            round1(cpu.as_secs_f64() * 1e6 / n as f64),
        );
    }
    Ok(record)
}

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let mut out = vec![dispatcher_only(config).await?];
    for workload in [Workload::Hello5, Workload::FanOut] {
        let mut throughput = [0.0f64; 2];
        for (i, over_grpc) in [false, true].into_iter().enumerate() {
            let Run {
                m,
                items,
                n,
                peak,
                worker_cpu,
            } = measure(config, workload, over_grpc).await?;
            let unit = match workload {
                Workload::Hello5 => "orchestrations/s",
                Workload::FanOut => "activities/s",
            };
            let mut record = m
                .record("grpc", config, n, items)
                .variant(format!(
                    "{} {}",
                    workload.label(),
                    if over_grpc { "over gRPC" } else { "in process" }
                ))
                .rate(unit)
                .extra("work_items", items)
                .settings(config.changed_settings(&[]));
            if let (Some(cpu), true) = (m.cpu, items > 0) {
                record = record.extra(
                    "server_cpu_us_per_work_item",
                    round1(cpu.as_secs_f64() * 1e6 / items as f64),
                );
            }
            if let (Some(cpu), true) = (worker_cpu, items > 0) {
                record = record.extra(
                    "sdk_worker_cpu_us_per_work_item",
                    round1(cpu.as_secs_f64() * 1e6 / items as f64),
                );
            }
            if let Some([orchestrations, activities]) = peak {
                record = record
                    .extra("peak_orchestration_items_out", orchestrations as u64)
                    .extra("peak_activity_items_out", activities as u64);
            }
            if let Some(slot) = throughput.get_mut(i) {
                *slot = record.throughput.unwrap_or(0.0);
            }
            if over_grpc && throughput[0] > 0.0 {
                let share = throughput[1] / throughput[0];
                record = record
                    .extra("share_of_in_process", round3(share))
                    .target(">= 0.5 of the in-process throughput", share >= 0.5);
            }
            out.push(record);
        }
    }
    Ok(out)
}
