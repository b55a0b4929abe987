//! A sub-orchestration started with an explicit instance ID that an active execution already
//! uses is refused, and the parent hears about it: its task fails with a reason naming the
//! child, instead of waiting forever. The running child is left alone.

use std::time::Duration;

use crate::common::history::history_of;
use crate::common::*;
use taskhub::*;

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Child", |ctx: OrchestrationContext, _: ()| async move {
        let v: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    reg.orchestration(
        "Parent",
        |ctx: OrchestrationContext, child: String| async move {
            let options = SubOrchestrationOptions {
                instance_id: Some(InstanceId::new(child).unwrap()),
                ..SubOrchestrationOptions::default()
            };
            let outcome = ctx
                .call_sub_orchestration_with::<_, u64>("Child", (), options)
                .await;
            Ok::<_, OrchestrationError>(match outcome {
                Ok(v) => format!("child returned {v}"),
                Err(TaskError::Failed { failure, .. }) => {
                    format!("{}: {}", failure.error_type, failure.message)
                }
                Err(e) => format!("other error: {e}"),
            })
        },
    );
    reg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_is_told_when_its_explicit_child_id_is_already_running() {
    let (_dir, hub) = sqlite_hub("sub-in-use", fast_settings()).await;
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let child = InstanceId::new("child-1").unwrap();
    start_as(&client, "Child", &child, ()).await;
    let child_status = || async {
        client
            .get_status(&child, StatusOptions::default())
            .await
            .unwrap()
            .map(|s| s.status())
    };
    wait::until_async(
        "the child running",
        || async { child_status().await == Some(OrchestrationStatus::Running) },
        child_status,
    )
    .await;

    let parent = client.start("Parent", "child-1").await.unwrap();
    let done = client
        .wait_for_completion(&parent, Duration::from_secs(20))
        .await
        .expect("the parent was never told its child start was refused");
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    let told = done.output::<String>().unwrap().unwrap();
    assert!(
        told.starts_with("SubOrchestrationInstanceInUse: ")
            && told.contains("'child-1'")
            && told.contains("Running"),
        "{told}"
    );

    // The child that was already running is unaffected and finishes normally.
    client.raise_event(&child, "go", &5u64).await.unwrap();
    let child_done = wait_done(&client, &child, Duration::from_secs(20)).await;
    assert_eq!(child_done.output::<u64>().unwrap(), Some(5));
    let history = history_of(&client, &child).await;
    let starts = history
        .iter()
        .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
        .count();
    assert_eq!(starts, 1, "the parent's start reached the child's history");
    worker.shutdown().await;
}
