//! Queue sampling only while someone looks (issue 20, item 8): under
//! `QueueSampling::WhileWatched` (what `taskhub serve` and `taskhub worker --http` set) an
//! idle worker nobody watches reads no queue depths (on Azure each read is a Get Queue Metadata
//! and a peek, per queue and lease pass); a `/metrics` scrape turns sampling on, and it stops
//! again a minute later by the hub's clock. Storage calls are counted by the memory backend's
//! per-operation counters.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::call;
use taskhub::telemetry::{set_queue_sampling, QueueSampling, WATCH_WINDOW};
use taskhub::*;
use taskhub_http::HttpConfig;
use taskhub_storage::faults::Op;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Clock, SystemClock};

/// The system clock, moved forward by [`jump`](Self::jump) (wall and monotonic time alike).
#[derive(Debug)]
struct JumpClock {
    system: SystemClock,
    jumped: Mutex<Duration>,
}

impl JumpClock {
    fn jump(&self, by: Duration) {
        *self.jumped.lock().unwrap() += by;
    }
}

impl Clock for JumpClock {
    fn now(&self) -> Timestamp {
        self.system
            .now()
            .saturating_add(*self.jumped.lock().unwrap())
    }
    fn monotonic(&self) -> Duration {
        self.system.monotonic() + *self.jumped.lock().unwrap()
    }
    fn sleep(&self, d: Duration) -> taskhub_storage::Sleep {
        self.system.sleep(d)
    }
}

/// Waits (bounded) until `n` more lease passes have read the partitions table (on the memory
/// backend a pass lists the partitions once).
async fn passes(store: &MemoryStore, n: u64) {
    let from = store.faults().calls(Op::ListPartitions);
    common::wait::until(
        &format!("{n} lease passes"),
        || store.faults().calls(Op::ListPartitions) >= from + n,
        || store.faults().counts(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_samples_queues_only_while_someone_looks() {
    set_queue_sampling(QueueSampling::WhileWatched);
    let clock = Arc::new(JumpClock {
        system: SystemClock::new(),
        jumped: Mutex::new(Duration::ZERO),
    });
    let store = Arc::new(MemoryStore::new(clock.clone()));
    // A lease pass every 200 ms.
    let settings = Settings {
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(200),
        lease_acquire_interval: Duration::from_millis(200),
        ..common::settings()
    };
    let hub = TaskHub::open_with_clock(store.clone(), settings, clock.clone())
        .await
        .unwrap();
    let worker = Worker::start(&hub, Registry::new()).await.unwrap();
    let render: taskhub_http::MetricsRender = Arc::new(String::new);
    let app = taskhub_http::router(HttpConfig::new(hub.clone()).with_metrics(render));
    let server = common::serving::Serving::start(app).await;
    let addr = server.addr;

    passes(&store, 5).await;
    assert_eq!(
        store.faults().calls(Op::Stats),
        0,
        "an idle worker nobody watches sampled queue depths"
    );

    let scrape = call(addr, "GET", "/metrics", &[], Vec::new()).await;
    assert_eq!(scrape.status, 200, "{}", scrape.body);
    passes(&store, 2).await;
    let sampled = store.faults().calls(Op::Stats);
    assert!(
        sampled > 0,
        "a scrape did not turn queue sampling on ({sampled} stats calls after two passes)"
    );

    // A minute later by the hub's clock, with no other look, sampling stops.
    clock.jump(WATCH_WINDOW + Duration::from_secs(1));
    passes(&store, 2).await;
    let after = store.faults().calls(Op::Stats);
    passes(&store, 5).await;
    assert_eq!(
        store.faults().calls(Op::Stats),
        after,
        "sampling went on a minute after the last look"
    );

    server.stop().await.unwrap();
    worker.shutdown().await;
}
