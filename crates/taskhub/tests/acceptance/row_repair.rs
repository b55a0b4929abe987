//! A Terminated row rebuilt from history (after a torn checkpoint left it behind) keeps the
//! termination reason as its output, like the row the terminating turn writes.

use std::time::Duration;

use crate::common::*;
use taskhub::*;
use taskhub_storage::Expect;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_row_repaired_from_history_keeps_the_reason() {
    let (_dir, hub) = sqlite_hub("row-repair", fast_settings()).await;
    let mut reg = Registry::new();
    reg.orchestration("Forever", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<()>("never").await?;
        Ok::<_, OrchestrationError>(())
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("Forever", ()).await.unwrap();
    client.terminate(&id, "operator said so").await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(done.status(), OrchestrationStatus::Terminated);
    assert_eq!(
        done.output::<String>().unwrap().as_deref(),
        Some("operator said so")
    );

    // A torn checkpoint: the history holds ExecutionTerminated, the row is still Running.
    let mut behind = done.row.clone();
    behind.status = OrchestrationStatus::Running;
    behind.output = None;
    behind.completed_at = None;
    hub.store()
        .put_instance(&behind, Expect::Any)
        .await
        .unwrap();

    // The next message loads the instance and repairs the row from history.
    client.raise_event(&id, "poke", &()).await.unwrap();
    let repaired = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(repaired.status(), OrchestrationStatus::Terminated);
    assert_eq!(
        repaired.output::<String>().unwrap().as_deref(),
        Some("operator said so"),
        "the repaired row names the termination reason"
    );
    worker.shutdown().await;
}
