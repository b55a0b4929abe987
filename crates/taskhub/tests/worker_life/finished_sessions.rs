//! Bounded memory (invariant 5): with extended sessions on and a long idle timeout, an
//! instance's in-memory session is dropped as soon as it completes, fails or is terminated,
//! so the sessions a worker holds do not grow with the number of finished instances.

use std::time::Duration;

use crate::common::registries::add_inc;
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;

const N: u64 = 40;

fn registry() -> Registry {
    let mut reg = Registry::new();
    add_inc(&mut reg);
    reg.orchestration("Step", |ctx: OrchestrationContext, x: u64| async move {
        let y: u64 = ctx.call_activity("Inc", x).await?;
        if y.is_multiple_of(4) {
            return Err(OrchestrationError::new(format!("{y} is unlucky")));
        }
        Ok::<_, OrchestrationError>(y)
    });
    reg.orchestration("Forever", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<()>("never").await?;
        Ok::<_, OrchestrationError>(())
    });
    reg
}

/// Waits until the worker holds `n` sessions.
async fn sessions_become(worker: &WorkerHandle, n: usize) {
    wait::until(
        &format!("{n} sessions held"),
        || worker.active_sessions() == n,
        || (worker.active_sessions(), worker.stats()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_instances_leave_memory_at_once() {
    let store = memory_store();
    let settings = Settings {
        extended_sessions_enabled: true,
        extended_session_idle_timeout: Duration::from_secs(3600),
        ..fast_settings()
    };
    let hub = TaskHub::open(store, settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    // One instance that stays active is held the whole time.
    let forever = client.start("Forever", ()).await.unwrap();
    sessions_become(&worker, 1).await;

    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(client.start("Step", i).await.unwrap());
    }
    let mut failed = 0;
    for id in &ids {
        let s = wait_done(&client, id, Duration::from_secs(20)).await;
        failed += u64::from(s.status() == OrchestrationStatus::Failed);
    }
    assert_eq!(
        failed,
        N / 4,
        "some instances fail, and their sessions go too"
    );
    sessions_become(&worker, 1).await;

    // Terminated instances go as well.
    client.terminate(&forever, "done").await.unwrap();
    wait_done(&client, &forever, Duration::from_secs(20)).await;
    sessions_become(&worker, 0).await;
    worker.shutdown().await;
}

/// Once a finished instance's session is gone, starting the instance again loads the old,
/// finished history next to the client's new Pending row. That row is ahead of the history,
/// not behind it: it must not be "repaired" from the history (which used to overwrite the new
/// start and lose it), with or without extended sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_a_finished_instance_again_runs_the_new_execution() {
    for extended in [true, false] {
        let store = memory_store();
        let settings = Settings {
            extended_sessions_enabled: extended,
            ..fast_settings()
        };
        let hub = TaskHub::open(store, settings).await.unwrap();
        let worker = Worker::start(&hub, registry()).await.unwrap();
        let client = hub.client();
        let options = || StartOptions {
            instance_id: Some(InstanceId::new("again").unwrap()),
            ..StartOptions::default()
        };
        for input in [1u64, 5, 9] {
            let id = client.start_with("Step", input, options()).await.unwrap();
            let done = wait_done(&client, &id, Duration::from_secs(20)).await;
            assert_eq!(
                done.output::<u64>().unwrap(),
                Some(input + 1),
                "extended sessions {extended}: start {input} was lost"
            );
            sessions_become(&worker, 0).await;
        }
        worker.shutdown().await;
    }
}
