//! SQLite checkpoint benchmarks: the write path of one orchestration turn.
//!
//! * `checkpoint_one_turn`: one checkpoint as a turn after an activity result writes it: four
//!   history events (OrchestratorStarted, TaskCompleted, TaskScheduled, OrchestratorCompleted)
//!   under the history ETag, the instance row, one outbound work item, and the delete of the
//!   consumed control message. One at a time, so every checkpoint is its own transaction.
//! * `checkpoint_32_concurrent`: 32 such checkpoints of 32 instances issued at once (group
//!   commit: the writer applies them in one transaction); the time is for all 32.
//!
//! Both run with `synchronous = NORMAL` and `FULL`.
//!
//! Run: `cargo bench -p taskhub-sqlite --bench checkpoint`.
#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "benchmark code (it measures real time)"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_main, Criterion};
use taskhub_core::{
    EventKind, ExecutionId, HistoryEvent, InstanceId, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_sqlite::{Durability, SqliteOptions, SqliteStore};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, ETag, Expect, HistoryWrite, InstanceRow, NewQueueMessage,
    OutboundMessage, PartitionStore, QueueName, QueueStore,
};

const CONTROL: QueueName = QueueName::Control(0);

/// One instance's chain of turns.
struct Chain {
    id: InstanceId,
    execution: ExecutionId,
    etag: Option<ETag>,
    task: u64,
}

fn payload(json: &str) -> Payload {
    Payload::from_json(json).expect("valid JSON")
}

fn row(chain: &Chain, now: Timestamp) -> InstanceRow {
    InstanceRow {
        status: OrchestrationStatus::Running,
        input: payload("{\"n\":1}"),
        ..InstanceRow::new(chain.id.clone(), "Bench", chain.execution.clone(), now)
    }
}

fn start(id: usize) -> Chain {
    Chain {
        id: InstanceId::new(format!("bench-{id:04}")).expect("valid id"),
        execution: ExecutionId::new("exec-1").expect("valid id"),
        etag: None,
        task: 0,
    }
}

/// The next turn's checkpoint of `chain`, consuming `receipt`.
fn turn(chain: &Chain, receipt: taskhub_storage::Receipt) -> CheckpointRequest {
    let now = Timestamp::from_millis(1_700_000_000_000 + chain.task);
    let t = chain.task;
    let events = if chain.etag.is_none() {
        vec![
            HistoryEvent::new(now, EventKind::OrchestratorStarted),
            HistoryEvent::new(
                now,
                EventKind::ExecutionStarted {
                    name: "Bench".to_owned(),
                    version: None,
                    input: payload("{\"n\":1}"),
                    execution_id: chain.execution.clone(),
                    parent: None,
                    scheduled_start: None,
                    applied_event_ids: Vec::new(),
                    tags: Default::default(),
                },
            ),
        ]
    } else {
        vec![
            HistoryEvent::new(now, EventKind::OrchestratorStarted),
            HistoryEvent::new(
                now,
                EventKind::TaskCompleted {
                    task_id: t,
                    result: payload("42"),
                },
            ),
        ]
    };
    let mut events = events;
    events.push(HistoryEvent::new(
        now,
        EventKind::TaskScheduled {
            task_id: t + 1,
            name: "Step".to_owned(),
            version: None,
            input: payload("7"),
            attempt: 1,
            tags: Default::default(),
        },
    ));
    events.push(HistoryEvent::new(now, EventKind::OrchestratorCompleted));
    CheckpointRequest {
        instance_id: chain.id.clone(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: chain.execution.clone(),
            expected: chain.etag.clone(),
            new_execution: chain.etag.is_none(),
            events,
        }),
        instance: Some((row(chain, now), Expect::Any)),
        outbound: vec![OutboundMessage {
            claim: None,
            queue: QueueName::WorkItems,
            message: NewQueueMessage {
                body: format!("{{\"work\":{t},\"pad\":\"{}\"}}", "x".repeat(200)),
                delay: Duration::ZERO,
            },
        }],
        consumed: vec![(CONTROL, receipt)],
    }
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    store: Arc<SqliteStore>,
    _dir: TempDir,
}

fn fixture(durability: Durability) -> Fixture {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = TempDir::new();
    let store =
        SqliteStore::open(SqliteOptions::new(dir.0.join("bench.db")).with_durability(durability))
            .expect("open store");
    let store = Arc::new(store);
    rt.block_on(store.create_hub(1, Timestamp::from_millis(0)))
        .expect("create hub");
    Fixture {
        rt,
        store,
        _dir: dir,
    }
}

/// Puts `n` control messages in place and dequeues them: the receipts the turns consume.
async fn receipts(store: &SqliteStore, n: usize) -> Vec<taskhub_storage::Receipt> {
    let body = NewQueueMessage {
        body: "{\"result\":42}".to_owned(),
        delay: Duration::ZERO,
    };
    let mut out = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(32) {
        store
            .enqueue(CONTROL, vec![body.clone(); chunk.len()])
            .await
            .expect("enqueue");
    }
    while out.len() < n {
        let got = store
            .dequeue(CONTROL, (n - out.len()).min(32), Duration::from_secs(600))
            .await
            .expect("dequeue");
        assert!(!got.is_empty(), "the control queue ran dry");
        out.extend(got.into_iter().map(|d| d.receipt));
    }
    out
}

async fn advance(store: &SqliteStore, chain: &mut Chain, receipt: taskhub_storage::Receipt) {
    let outcome = store
        .checkpoint(turn(chain, receipt))
        .await
        .expect("checkpoint");
    chain.etag = outcome.history_etag;
    chain.task += 1;
}

fn bench_one(c: &mut Criterion, durability: Durability, label: &str) {
    let f = fixture(durability);
    let mut chain = start(0);
    c.bench_function(&format!("checkpoint_one_turn/{label}"), |b| {
        b.iter_custom(|iters| {
            f.rt.block_on(async {
                let rs = receipts(&f.store, usize::try_from(iters).unwrap_or(usize::MAX)).await;
                let began = Instant::now();
                for r in rs {
                    advance(&f.store, &mut chain, r).await;
                }
                began.elapsed()
            })
        });
    });
}

fn bench_concurrent(c: &mut Criterion, durability: Durability, label: &str) {
    const WIDTH: usize = 32;
    let f = fixture(durability);
    let mut chains: Vec<Chain> = (0..WIDTH).map(start).collect();
    c.bench_function(&format!("checkpoint_32_concurrent/{label}"), |b| {
        b.iter_custom(|iters| {
            f.rt.block_on(async {
                let n = usize::try_from(iters).unwrap_or(usize::MAX) * WIDTH;
                let mut rs = receipts(&f.store, n).await;
                let began = Instant::now();
                for _ in 0..iters {
                    let round: Vec<_> = rs.drain(..WIDTH).collect();
                    let mut tasks = tokio::task::JoinSet::new();
                    for (mut chain, r) in chains.drain(..).zip(round) {
                        let store = f.store.clone();
                        tasks.spawn(async move {
                            advance(&store, &mut chain, r).await;
                            chain
                        });
                    }
                    while let Some(chain) = tasks.join_next().await {
                        chains.push(chain.expect("a checkpoint task panicked"));
                    }
                }
                began.elapsed()
            })
        });
    });
}

fn checkpoints() {
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3));
    for (durability, label) in [(Durability::Normal, "normal"), (Durability::Full, "full")] {
        bench_one(&mut c, durability, label);
        bench_concurrent(&mut c, durability, label);
    }
}

criterion_main!(checkpoints);

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!(
            "taskhub-checkpoint-bench-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
