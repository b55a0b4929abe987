//! A client that retries `raise_event_with` under one event ID delivers the event once, also
//! when the retry reaches a session reloaded from history or the next execution after a
//! continue-as-new; different IDs are different events.

use std::time::Duration;

use crate::common::*;
use taskhub::*;

/// Sums the `add` events until one carries 0; the running sum is the custom status.
async fn summer(ctx: OrchestrationContext, _: ()) -> Result<u64, OrchestrationError> {
    let mut sum = 0;
    loop {
        let v: u64 = ctx.wait_for_event("add").await?;
        if v == 0 {
            return Ok(sum);
        }
        sum += v;
        ctx.set_custom_status(&sum)?;
    }
}

async fn custom_status_becomes(client: &TaskHubClient, id: &InstanceId, want: u64) {
    let cs = || async {
        let s = find(client, id).await.unwrap();
        s.row
            .custom_status
            .as_ref()
            .map(|p| p.parse::<u64>("cs").unwrap())
    };
    wait::until_async(
        &format!("custom status {want}"),
        || async { cs().await == Some(want) },
        cs,
    )
    .await;
}

async fn raise_with(client: &TaskHubClient, id: &InstanceId, v: u64, event_id: &str) {
    let options = RaiseOptions {
        event_id: Some(event_id.to_owned()),
    };
    client
        .raise_event_with(id, "add", &v, options)
        .await
        .unwrap();
}

/// A SQLite hub in a fresh directory named after `name`, its sessions extended or not, and a
/// worker running `reg`.
async fn hub_and_worker(
    name: &str,
    extended_sessions: bool,
    reg: Registry,
) -> (TempDir, TaskHub, WorkerHandle) {
    let dir = TempDir::new(name);
    let settings = Settings {
        extended_sessions_enabled: extended_sessions,
        ..fast_settings()
    };
    let hub = TaskHub::open(sqlite_store(&dir.0), settings).await.unwrap();
    let worker = Worker::start(&hub, reg).await.unwrap();
    (dir, hub, worker)
}

/// Raises 1 and then 10 at `id`, each under an event ID of its own and each twice (the
/// first again once it was applied, as a client whose reply was lost; the second in the same
/// breath), then 0 to stop: the finished status.
async fn raise_each_event_id_twice(client: &TaskHubClient, id: &InstanceId) -> InstanceStatus {
    raise_with(client, id, 1, "first").await;
    custom_status_becomes(client, id, 1).await;
    raise_with(client, id, 1, "first").await;
    raise_with(client, id, 10, "second").await;
    raise_with(client, id, 10, "second").await;
    custom_status_becomes(client, id, 11).await;
    raise_with(client, id, 0, "stop").await;
    wait_done(client, id, Duration::from_secs(20)).await
}

async fn scenario(extended_sessions: bool) {
    let mut reg = Registry::new();
    reg.orchestration("Sum", summer);
    let (_dir, hub, worker) = hub_and_worker("raise-idempotent", extended_sessions, reg).await;
    let client = hub.client();
    let id = client.start("Sum", ()).await.unwrap();
    // Without extended sessions the turn after the first raise reloads the session from
    // history.
    let done = raise_each_event_id_twice(&client, &id).await;
    assert_eq!(
        done.output::<u64>().unwrap(),
        Some(11),
        "each event ID applied once"
    );

    // Bad event IDs are typed errors.
    let err = client
        .raise_event_with(
            &id,
            "add",
            &1,
            RaiseOptions {
                event_id: Some(String::new()),
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, TaskhubError::Invalid(_)), "{err}");
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_twice_with_one_event_id_applies_once() {
    scenario(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_twice_with_one_event_id_applies_once_in_an_extended_session() {
    scenario(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_event_ids_apply_twice() {
    let mut reg = Registry::new();
    reg.orchestration("Sum", summer);
    let (_dir, hub, worker) = hub_and_worker(
        "raise-distinct",
        fast_settings().extended_sessions_enabled,
        reg,
    )
    .await;
    let client = hub.client();
    let id = client.start("Sum", ()).await.unwrap();
    raise_with(&client, &id, 1, "a").await;
    raise_with(&client, &id, 1, "b").await;
    client.raise_event(&id, "add", &1u64).await.unwrap();
    client.raise_event(&id, "add", &1u64).await.unwrap();
    custom_status_becomes(&client, &id, 4).await;
    client.raise_event(&id, "add", &0u64).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(4));
    worker.shutdown().await;
}

/// Like `summer`, but continues as new after every event, the sum as its input.
async fn summing_generations(
    ctx: OrchestrationContext,
    sum: u64,
) -> Result<u64, OrchestrationError> {
    ctx.set_custom_status(&sum)?;
    let v: u64 = ctx.wait_for_event("add").await?;
    if v == 0 {
        return Ok(sum);
    }
    ctx.continue_as_new(sum + v).await
}

async fn across_continue_as_new(extended_sessions: bool) {
    let mut reg = Registry::new();
    reg.orchestration("Gen", summing_generations);
    let (_dir, hub, worker) = hub_and_worker("raise-idempotent-can", extended_sessions, reg).await;
    let client = hub.client();
    let id = client.start("Gen", 0u64).await.unwrap();
    custom_status_becomes(&client, &id, 0).await;
    // Each event is applied by an execution that then continues as new: the retried first one
    // reaches the next execution, which must not add it.
    let done = raise_each_event_id_twice(&client, &id).await;
    assert_eq!(
        done.output::<u64>().unwrap(),
        Some(11),
        "each event ID applied once across continue-as-new"
    );
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_raise_after_a_continue_as_new_applies_once() {
    across_continue_as_new(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_raise_after_a_continue_as_new_applies_once_in_an_extended_session() {
    across_continue_as_new(true).await;
}
