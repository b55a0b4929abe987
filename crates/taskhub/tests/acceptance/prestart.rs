//! Terminate, suspend and purge act at once on a Pending instance whose start is scheduled in
//! the future, instead of waiting behind the delayed start. Driven by a `ManualClock`: the
//! start is scheduled 1 h ahead, and the clock is moved past it only after the client acted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Clock, HistoryStore, ManualClock, QueueName, QueueStore};

const HOUR: Duration = Duration::from_secs(3600);
const BOUND: Duration = Duration::from_secs(10);

struct Setup {
    clock: Arc<ManualClock>,
    store: Arc<MemoryStore>,
    hub: TaskHub,
    worker: WorkerHandle,
    runs: Arc<AtomicUsize>,
}

async fn setup() -> Setup {
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(fast_settings()).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut reg = Registry::new();
    reg.activity("Mark", move |_c: ActivityContext, _: ()| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ActivityError>(())
        }
    });
    reg.orchestration("Later", |ctx: OrchestrationContext, _: ()| async move {
        ctx.call_activity::<_, ()>("Mark", ()).await?;
        Ok::<_, OrchestrationError>("ran".to_owned())
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    Setup {
        clock,
        store,
        hub,
        worker,
        runs,
    }
}

impl Setup {
    async fn start_in_an_hour(&self, id: &str) -> InstanceId {
        let at = self.clock.now().saturating_add(HOUR).to_system_time();
        let options = StartOptions {
            instance_id: Some(InstanceId::new(id).unwrap()),
            start_at: Some(at),
            ..StartOptions::default()
        };
        self.hub
            .client()
            .start_with("Later", (), options)
            .await
            .unwrap()
    }

    async fn status(&self, id: &InstanceId) -> Option<InstanceStatus> {
        self.hub
            .client()
            .get_status(id, StatusOptions::default())
            .await
            .unwrap()
    }

    /// Moves the clock past the scheduled start and waits (in real time) until the worker
    /// consumed everything in the instance's control queue.
    async fn pass_the_start(&self, id: &InstanceId) {
        self.clock.advance(2 * HOUR);
        let queue = QueueName::Control(id.partition(self.hub.partition_count()));
        tokio::time::timeout(BOUND, async {
            while self.store.stats(queue).await.unwrap().length > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the delayed start is delivered and consumed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_a_scheduled_start_acts_at_once_and_it_never_runs() {
    let s = setup().await;
    let id = s.start_in_an_hour("t-1").await;
    s.hub.client().terminate(&id, "not wanted").await.unwrap();
    let now = s.status(&id).await.unwrap();
    assert_eq!(now.status(), OrchestrationStatus::Terminated, "at once");
    assert_eq!(
        now.output::<String>().unwrap().as_deref(),
        Some("not wanted")
    );

    s.pass_the_start(&id).await;
    let after = s.status(&id).await.unwrap();
    assert_eq!(after.status(), OrchestrationStatus::Terminated);
    assert_eq!(
        s.runs.load(Ordering::SeqCst),
        0,
        "the orchestration never ran"
    );
    assert!(s.store.load_history(&id).await.unwrap().is_none());
    s.worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspending_a_scheduled_start_acts_at_once_and_it_runs_only_after_resume() {
    let s = setup().await;
    let client = s.hub.client();
    let id = s.start_in_an_hour("s-1").await;
    client.suspend(&id, Some("hold")).await.unwrap();
    let now = s.status(&id).await.unwrap();
    assert_eq!(now.status(), OrchestrationStatus::Suspended, "at once");
    assert_eq!(now.suspend_reason().as_deref(), Some("hold"));

    s.pass_the_start(&id).await;
    assert_eq!(
        s.status(&id).await.unwrap().status(),
        OrchestrationStatus::Suspended
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 0, "not run while suspended");

    client.resume(&id, None).await.unwrap();
    let done = wait_done(&client, &id, BOUND).await;
    assert_eq!(done.output::<String>().unwrap().as_deref(), Some("ran"));
    assert_eq!(s.runs.load(Ordering::SeqCst), 1);
    s.worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_before_the_scheduled_start_runs_it_once_at_its_time() {
    let s = setup().await;
    let client = s.hub.client();
    let id = s.start_in_an_hour("s-2").await;
    client.suspend(&id, None).await.unwrap();
    client.resume(&id, None).await.unwrap();
    let now = s.status(&id).await.unwrap();
    assert_eq!(now.status(), OrchestrationStatus::Pending);
    s.clock.advance(2 * HOUR);
    let done = wait_done(&client, &id, BOUND).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    s.pass_the_start(&id).await;
    assert_eq!(
        s.runs.load(Ordering::SeqCst),
        1,
        "the two starts run it once"
    );
    s.worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purging_a_scheduled_start_acts_at_once_and_it_never_runs() {
    let s = setup().await;
    let id = s.start_in_an_hour("p-1").await;
    assert!(s.hub.client().purge(&id).await.unwrap());
    assert!(s.status(&id).await.is_none(), "gone at once");

    s.pass_the_start(&id).await;
    assert!(s.status(&id).await.is_none());
    assert_eq!(
        s.runs.load(Ordering::SeqCst),
        0,
        "the orchestration never ran"
    );
    assert!(s.store.load_history(&id).await.unwrap().is_none());
    s.worker.shutdown().await;
}
