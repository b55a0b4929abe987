//! The suspension reason is part of an instance's status while it is suspended, and goes away
//! when it is resumed.

use std::time::Duration;

use crate::common::*;
use taskhub::*;

async fn status_becomes(
    client: &TaskHubClient,
    id: &InstanceId,
    want: OrchestrationStatus,
) -> InstanceStatus {
    wait::until_some(&format!("status {want}"), || async {
        let s = find(client, id).await.unwrap();
        (s.status() == want).then_some(s)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suspension_reason_is_in_the_status() {
    let (_dir, hub) = sqlite_hub("suspend-reason", fast_settings()).await;
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("Wait", ()).await.unwrap();
    status_becomes(&client, &id, OrchestrationStatus::Running).await;

    client
        .suspend(&id, Some("maintenance window"))
        .await
        .unwrap();
    let s = status_becomes(&client, &id, OrchestrationStatus::Suspended).await;
    assert_eq!(s.suspend_reason().as_deref(), Some("maintenance window"));
    assert_eq!(
        s.output::<u32>().unwrap(),
        None,
        "a reason is not an output"
    );

    client.resume(&id, Some("done")).await.unwrap();
    let s = status_becomes(&client, &id, OrchestrationStatus::Running).await;
    assert_eq!(s.suspend_reason(), None);
    assert_eq!(s.row.output, None, "resuming clears the reason");

    // Without a reason there is none to show.
    client.suspend(&id, None).await.unwrap();
    let s = status_becomes(&client, &id, OrchestrationStatus::Suspended).await;
    assert_eq!(s.suspend_reason(), None);
    client.resume(&id, None).await.unwrap();
    client.raise_event(&id, "go", &7u32).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(done.output::<u32>().unwrap(), Some(7));
    worker.shutdown().await;
}
