//! The runtime end-to-end suite, written once and run on every backend (`runtime.rs`, one
//! test per body and backend): each body takes the [`Backend`] and opens a fresh
//! hub of its own with a real worker. Included as
//! `#[path = "common/runtime_suite.rs"] mod runtime_suite;` next to `mod common;` and
//! `#[path = "common/backends.rs"] mod backends;`.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::future::Future;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::QueueName;

use crate::backends::{settings, Backend, TestStore};
use crate::common::history::history_of;
use crate::common::queues::enqueue_now;
use crate::common::registries::add_fan_out;
use crate::common::{assert_dead_at_third_delivery, wait, wait_done};

/// How long any one wait of the suite may take.
const BOUND: Duration = Duration::from_secs(30);

/// Generates one `#[tokio::test]` per suite body and backend (`sqlite::name`, `azure::name`,
/// …, every backend of `taskhub_backends::BACKENDS`); the calling module imports the bodies
/// (`use runtime_suite::*;`).
#[macro_export]
macro_rules! runtime_suite {
    () => {
        taskhub_test_support::backend_matrix!([every]
            activities_with_retry_fan_out_and_sub_orchestrations,
            unregistered_names_and_invalid_ids_are_clear_errors,
            timers_external_events_when_any_and_custom_status,
            continue_as_new_suspend_resume_and_terminate,
            large_payloads_over_the_queue_and_table_limits,
            reuse_policies_racing_starts_restart_listing_and_purge,
            poison_messages_are_dead_lettered_and_the_loop_stops,
        );
    };
}

/// A fresh hub on `backend` with a worker running `reg`.
pub struct Env {
    pub store: TestStore,
    pub hub: TaskHub,
    pub worker: WorkerHandle,
    pub client: TaskHubClient,
}

async fn env(backend: Backend, tag: &str, settings: Settings, reg: Registry) -> Env {
    let store = TestStore::fresh(backend, tag).await;
    let hub = TaskHub::open(store.store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    Env {
        store,
        hub,
        worker,
        client,
    }
}

fn id(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

async fn done(client: &TaskHubClient, id: &InstanceId) -> InstanceStatus {
    wait_done(client, id, BOUND).await
}

/// The output of `id` once it is done (`None` if it has none).
async fn output<T: serde::de::DeserializeOwned>(
    client: &TaskHubClient,
    id: &InstanceId,
) -> Option<T> {
    done(client, id).await.output::<T>().unwrap()
}

/// Waits (in real time, until the test counts as stuck) until `f` holds.
async fn until<F, Fut>(what: &str, f: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait::until_async(what, f, || async {}).await;
}

async fn status_of(client: &TaskHubClient, id: &InstanceId) -> Option<OrchestrationStatus> {
    client
        .get_status(id, StatusOptions::default())
        .await
        .unwrap()
        .map(|s| s.status())
}

async fn wait_status(client: &TaskHubClient, id: &InstanceId, want: OrchestrationStatus) {
    until(&format!("{id} to be {want:?}"), || async {
        status_of(client, id).await == Some(want)
    })
    .await;
}

/// Activities in sequence; an unregistered orchestration fails its instance with a clear
/// error, an unregistered activity fails the call (the orchestration sees why), and invalid
/// instance IDs are rejected before anything is stored.
pub async fn unregistered_names_and_invalid_ids_are_clear_errors(backend: Backend) {
    let mut reg = Registry::new();
    reg.activity("SayHello", |_c: ActivityContext, city: String| async move {
        Ok::<_, ActivityError>(format!("Hello {city}!"))
    });
    reg.orchestration(
        "HelloCities",
        |ctx: OrchestrationContext, _: ()| async move {
            let mut out: Vec<String> = Vec::new();
            for city in ["Tokyo", "Seattle", "London"] {
                out.push(ctx.call_activity("SayHello", city).await?);
            }
            Ok::<_, OrchestrationError>(out)
        },
    );
    reg.orchestration(
        "CallsMissing",
        |ctx: OrchestrationContext, _: ()| async move {
            let r: Result<u32, _> = ctx.call_activity("NoSuchActivity", ()).await;
            Ok::<_, OrchestrationError>(r.map_err(|e| e.to_string()).err().unwrap_or_default())
        },
    );
    let e = env(backend, "unregistered", settings(backend), reg).await;
    let client = &e.client;

    let hello = client.start("HelloCities", ()).await.unwrap();
    let s = done(client, &hello).await;
    assert_eq!(s.status(), OrchestrationStatus::Completed, "{s:?}");
    assert_eq!(
        s.output::<Vec<String>>().unwrap().unwrap(),
        vec!["Hello Tokyo!", "Hello Seattle!", "Hello London!"]
    );
    // Unknown orchestration: the instance fails with a clear error.
    let x = client.start("NoSuchOrchestration", ()).await.unwrap();
    let s = done(client, &x).await;
    assert_eq!(s.status(), OrchestrationStatus::Failed);
    assert!(
        s.row
            .failure
            .as_ref()
            .unwrap()
            .message
            .contains("'NoSuchOrchestration' is not registered"),
        "{:?}",
        s.row.failure
    );
    // Unknown activity: the orchestration sees a typed failure.
    let y = client.start("CallsMissing", ()).await.unwrap();
    let msg = output::<String>(client, &y).await.unwrap();
    assert!(msg.contains("'NoSuchActivity' is not registered"), "{msg}");
    // Invalid instance IDs are rejected before anything is stored.
    assert!(InstanceId::new("a/b").is_err());
    assert!(InstanceId::new("").is_err());
    e.worker.shutdown().await;
}

pub async fn activities_with_retry_fan_out_and_sub_orchestrations(backend: Backend) {
    let mut reg = Registry::new();
    reg.activity("Square", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * x)
    });
    reg.activity("Flaky", |c: ActivityContext, _: ()| async move {
        if c.attempt() < 3 {
            Err(ActivityError::new(format!(
                "attempt {} failed",
                c.attempt()
            )))
        } else {
            Ok(c.attempt())
        }
    });
    reg.activity("Fails", |_c: ActivityContext, _: ()| async move {
        Err::<u32, _>(ActivityError::new("always"))
    });
    add_fan_out(&mut reg, "FanOut", "Square");
    reg.orchestration("Retry", |ctx: OrchestrationContext, _: ()| async move {
        let p = RetryPolicy::new(5, Duration::from_millis(100));
        Ok::<u32, OrchestrationError>(ctx.call_activity_with_retry("Flaky", (), p).await?)
    });
    reg.orchestration("GivesUp", |ctx: OrchestrationContext, _: ()| async move {
        let p = RetryPolicy::new(2, Duration::from_millis(100));
        let r: Result<u32, _> = ctx.call_activity_with_retry("Fails", (), p).await;
        Ok::<_, OrchestrationError>(r.map_err(|e| e.to_string()).err().unwrap_or_default())
    });
    reg.orchestration("Parent", |ctx: OrchestrationContext, _: ()| async move {
        let kids = (1..=3u64).map(|n| ctx.call_sub_orchestration::<_, u64>("FanOut", n));
        let mut total = 0;
        for r in when_all(kids).await {
            total += r?;
        }
        Ok::<_, OrchestrationError>(total)
    });
    let e = env(backend, "suite-fan", settings(backend), reg).await;
    let c = &e.client;
    let fan = c.start("FanOut", 40u64).await.unwrap();
    let retry = c.start("Retry", ()).await.unwrap();
    let gives_up = c.start("GivesUp", ()).await.unwrap();
    let parent = c.start("Parent", ()).await.unwrap();
    assert_eq!(
        output::<u64>(c, &fan).await,
        Some((0..40u64).map(|i| i * i).sum())
    );
    assert_eq!(output::<u32>(c, &retry).await, Some(3));
    let msg = output::<String>(c, &gives_up).await.unwrap();
    assert!(
        msg.contains("always"),
        "the last failure reaches the code: {msg}"
    );
    // Children: FanOut(1)=0, FanOut(2)=1, FanOut(3)=5.
    assert_eq!(output::<u64>(c, &parent).await, Some(6));
    for k in 0..3 {
        let child = id(&format!("{parent}:{k}"));
        assert_eq!(
            status_of(c, &child).await,
            Some(OrchestrationStatus::Completed),
            "{child}"
        );
    }
    e.worker.shutdown().await;
}

async fn approval(
    ctx: OrchestrationContext,
    timeout_ms: u64,
) -> Result<String, OrchestrationError> {
    ctx.set_custom_status("waiting for approval")?;
    match when_any2(
        ctx.sleep(Duration::from_millis(timeout_ms)),
        ctx.wait_for_event::<bool>("approval"),
    )
    .await
    {
        Either::Left(()) => Ok("timed out".into()),
        Either::Right(v) => Ok(if v? {
            "approved".into()
        } else {
            "rejected".into()
        }),
    }
}

pub async fn timers_external_events_when_any_and_custom_status(backend: Backend) {
    let mut reg = Registry::new();
    reg.orchestration("Approval", approval);
    reg.orchestration("Early", |ctx: OrchestrationContext, _: ()| async move {
        ctx.sleep(Duration::from_millis(500)).await;
        let a: u32 = ctx.wait_for_event("n").await?;
        let b: u32 = ctx.wait_for_event("n").await?;
        Ok::<_, OrchestrationError>(vec![a, b])
    });
    reg.orchestration("Timer", |ctx: OrchestrationContext, ms: u64| async move {
        let before = ctx.now();
        ctx.sleep(Duration::from_millis(ms)).await;
        let slept = ctx.now().duration_since(before).unwrap_or_default();
        Ok::<_, OrchestrationError>(u64::try_from(slept.as_millis()).unwrap_or(u64::MAX))
    });
    let e = env(backend, "suite-timers", settings(backend), reg).await;
    let c = &e.client;
    let approved = c.start("Approval", 60_000u64).await.unwrap();
    let timed_out = c.start("Approval", 500u64).await.unwrap();
    let early = c.start("Early", ()).await.unwrap();
    let timer = c.start("Timer", 1_500u64).await.unwrap();
    // Events raised before the orchestration waits for them are buffered, in order.
    c.raise_event(&early, "n", &1u32).await.unwrap();
    c.raise_event(&early, "n", &2u32).await.unwrap();
    until("the custom status", || async {
        c.get_status(&approved, StatusOptions::default())
            .await
            .unwrap()
            .and_then(|s| s.row.custom_status.map(|p| p.as_str().to_owned()))
            == Some("\"waiting for approval\"".to_owned())
    })
    .await;
    c.raise_event(&approved, "approval", &true).await.unwrap();
    assert_eq!(output::<String>(c, &approved).await.unwrap(), "approved");
    assert_eq!(output::<String>(c, &timed_out).await.unwrap(), "timed out");
    assert_eq!(output::<Vec<u32>>(c, &early).await.unwrap(), vec![1, 2]);
    let slept = output::<u64>(c, &timer).await.unwrap();
    assert!(
        slept >= 1_500,
        "a durable timer never fires early: {slept} ms"
    );
    assert!(matches!(
        c.raise_event(&id("nobody"), "x", &1).await,
        Err(TaskhubError::NotFound(_))
    ));
    assert!(matches!(
        c.raise_event(&approved, "x", &1).await,
        Err(TaskhubError::WrongStatus { .. })
    ));
    e.worker.shutdown().await;
}

pub async fn continue_as_new_suspend_resume_and_terminate(backend: Backend) {
    let mut reg = Registry::new();
    reg.orchestration("Counter", |ctx: OrchestrationContext, n: u32| async move {
        if n >= 5 {
            return Ok(n);
        }
        ctx.continue_as_new(n + 1).await
    });
    // Events that arrived but were not consumed are carried over to the next execution: none
    // is lost (their order across generations: `acceptance/carried_order.rs`).
    reg.orchestration(
        "Accumulate",
        |ctx: OrchestrationContext, (seen, sum): (u32, u32)| async move {
            if seen == 4 {
                return Ok(sum);
            }
            let v: u32 = ctx.wait_for_event("add").await?;
            let carry = ContinueAsNewOptions {
                preserve_unprocessed_events: true,
                ..ContinueAsNewOptions::default()
            };
            ctx.continue_as_new_with((seen + 1, sum + v), carry).await
        },
    );
    reg.orchestration("Wait", |ctx: OrchestrationContext, _: ()| async move {
        let v: u32 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    let e = env(backend, "suite-can", settings(backend), reg).await;
    let c = &e.client;
    let counter = c.start("Counter", 0u32).await.unwrap();
    assert_eq!(output::<u32>(c, &counter).await, Some(5));
    let history = history_of(c, &counter).await;
    assert!(
        matches!(&history[1].event, EventKind::ExecutionStarted { input, .. } if input.as_str() == "5"),
        "history holds only the last generation: {history:?}"
    );
    let acc = c.start("Accumulate", (0u32, 0u32)).await.unwrap();
    for v in [1u32, 2, 3, 4] {
        c.raise_event(&acc, "add", &v).await.unwrap();
    }
    assert_eq!(output::<u32>(c, &acc).await, Some(10));

    let w = c.start("Wait", ()).await.unwrap();
    wait_status(c, &w, OrchestrationStatus::Running).await;
    c.suspend(&w, Some("hold")).await.unwrap();
    wait_status(c, &w, OrchestrationStatus::Suspended).await;
    c.raise_event(&w, "go", &7u32).await.unwrap();
    // The event reaches the suspended instance (its queue empties) but it stays suspended.
    let partition = QueueName::Control(w.partition(e.hub.partition_count()));
    until("the event to be taken in", || async {
        e.store.store.stats(partition).await.unwrap().length == 0
    })
    .await;
    assert_eq!(status_of(c, &w).await, Some(OrchestrationStatus::Suspended));
    c.resume(&w, None).await.unwrap();
    assert_eq!(output::<u32>(c, &w).await, Some(7));

    let t = c.start("Wait", ()).await.unwrap();
    c.terminate(&t, "no longer needed").await.unwrap();
    assert_eq!(done(c, &t).await.status(), OrchestrationStatus::Terminated);
    assert!(matches!(
        c.terminate(&t, "again").await,
        Err(TaskhubError::WrongStatus { .. })
    ));
    e.worker.shutdown().await;
}

pub async fn large_payloads_over_the_queue_and_table_limits(backend: Backend) {
    let mut reg = Registry::new();
    // Over Azure's 64 KiB queue message, 64 KiB table property and 1 MiB table entity.
    reg.activity("Grow", |_c: ActivityContext, s: String| async move {
        Ok::<_, ActivityError>(s.repeat(4))
    });
    reg.orchestration("Big", |ctx: OrchestrationContext, s: String| async move {
        ctx.set_custom_status(&format!("got {} bytes", s.len()))?;
        let grown: String = ctx.call_activity("Grow", s).await?;
        let v: String = ctx.wait_for_event("big").await?;
        Ok::<_, OrchestrationError>(format!("{grown}{v}"))
    });
    let e = env(backend, "suite-big", settings(backend), reg).await;
    let c = &e.client;
    let input: String = (0..300_000u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let event = "e".repeat(100_000);
    let big = c.start("Big", input.clone()).await.unwrap();
    c.raise_event(&big, "big", &event).await.unwrap();
    let s = done(c, &big).await;
    assert_eq!(
        s.status(),
        OrchestrationStatus::Completed,
        "{:?}",
        s.row.failure
    );
    let out = s.output::<String>().unwrap().unwrap();
    assert_eq!(out.len(), 1_300_000);
    assert!(
        out == format!("{}{event}", input.repeat(4)),
        "the output round-trips"
    );
    assert_eq!(
        s.row.custom_status.as_ref().map(|p| p.as_str().to_owned()),
        Some("\"got 300000 bytes\"".to_owned())
    );
    let history = history_of(c, &big).await;
    assert!(history.iter().any(
        |h| matches!(&h.event, EventKind::ExecutionStarted { input: i, .. } if i.as_str().len() > 300_000)
    ));
    // Purge removes the instance, its history and its payloads.
    assert!(c.purge(&big).await.unwrap());
    assert!(c
        .get_status(&big, StatusOptions::default())
        .await
        .unwrap()
        .is_none());
    e.worker.shutdown().await;
}

pub async fn reuse_policies_racing_starts_restart_listing_and_purge(backend: Backend) {
    let mut reg = Registry::new();
    reg.orchestration("Echo", |_ctx: OrchestrationContext, v: u32| async move {
        Ok::<_, OrchestrationError>(v)
    });
    reg.orchestration("Wait", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<()>("go").await?;
        Ok::<_, OrchestrationError>(0u32)
    });
    let e = env(backend, "suite-reuse", settings(backend), reg).await;
    let c = &e.client;
    let opts = |i: &str, reuse| StartOptions {
        instance_id: Some(id(i)),
        reuse,
        ..StartOptions::default()
    };
    c.start_with("Wait", (), opts("w1", ReusePolicy::RejectActive))
        .await
        .unwrap();
    let err = c
        .start_with("Echo", 1u32, opts("w1", ReusePolicy::RejectActive))
        .await
        .unwrap_err();
    assert!(matches!(err, TaskhubError::AlreadyExists { .. }), "{err}");
    wait_status(c, &id("w1"), OrchestrationStatus::Running).await;
    c.start_with("Echo", 9u32, opts("w1", ReusePolicy::TerminateActive))
        .await
        .unwrap();
    let s = done(c, &id("w1")).await;
    assert_eq!(
        (s.status(), s.output::<u32>().unwrap()),
        (OrchestrationStatus::Completed, Some(9))
    );
    assert!(matches!(
        c.start_with("Echo", 2u32, opts("w1", ReusePolicy::RejectExisting))
            .await,
        Err(TaskhubError::AlreadyExists { .. })
    ));
    c.start_with("Echo", 3u32, opts("w1", ReusePolicy::RejectActive))
        .await
        .unwrap();
    assert_eq!(output::<u32>(c, &id("w1")).await, Some(3));

    // Racing starts of one new ID: exactly one wins and exactly one execution runs.
    let (a, b) = tokio::join!(
        c.start_with("Echo", 10u32, opts("race", ReusePolicy::RejectExisting)),
        c.start_with("Echo", 20u32, opts("race", ReusePolicy::RejectExisting)),
    );
    assert!(
        a.is_ok() != b.is_ok(),
        "exactly one start wins: {a:?} {b:?}"
    );
    let out = output::<u32>(c, &id("race")).await.unwrap();
    assert_eq!(out, if a.is_ok() { 10 } else { 20 });
    let h = history_of(c, &id("race")).await;
    assert_eq!(
        h.iter()
            .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
            .count(),
        1
    );
    let new_id = c.restart(&id("race"), true).await.unwrap();
    assert_ne!(new_id, id("race"));
    assert_eq!(output::<u32>(c, &new_id).await, Some(out));

    // Listing with filters and paging.
    for i in 0..5u32 {
        let name = format!("page-{i}");
        c.start_with("Echo", i, opts(&name, ReusePolicy::RejectActive))
            .await
            .unwrap();
        done(c, &id(&name)).await;
    }
    let mut q = InstanceQuery {
        instance_id_prefix: Some("page-".into()),
        page_size: 2,
        ..InstanceQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = c.list(&q).await.unwrap();
        assert!(page.instances.len() <= 2);
        seen.extend(page.instances.iter().map(|r| r.instance_id.to_string()));
        match page.continuation {
            Some(next) => q.continuation = Some(next),
            None => break,
        }
    }
    assert_eq!(
        seen,
        (0..5).map(|i| format!("page-{i}")).collect::<Vec<_>>()
    );
    let running = InstanceQuery {
        statuses: vec![OrchestrationStatus::Running],
        ..InstanceQuery::default()
    };
    assert!(c.list(&running).await.unwrap().instances.is_empty());

    // Purge: one, then by filter; an active instance cannot be purged.
    assert!(c.purge(&id("page-0")).await.unwrap());
    assert!(c
        .get_status(&id("page-0"), StatusOptions::default())
        .await
        .unwrap()
        .is_none());
    let purged = c
        .purge_where(&InstanceQuery {
            instance_id_prefix: Some("page-".into()),
            ..InstanceQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(purged, 4);
    c.start_with("Wait", (), opts("active", ReusePolicy::RejectActive))
        .await
        .unwrap();
    assert!(matches!(
        c.purge(&id("active")).await,
        Err(TaskhubError::WrongStatus { .. })
    ));
    e.worker.shutdown().await;
}

pub async fn poison_messages_are_dead_lettered_and_the_loop_stops(backend: Backend) {
    let mut reg = Registry::new();
    reg.orchestration("Wait", |ctx: OrchestrationContext, _: ()| async move {
        let v: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    let s = Settings {
        max_dequeue_count: 2,
        // Every turn loads the history, so the corruption is seen.
        extended_sessions_enabled: false,
        ..settings(backend)
    };
    let e = env(backend, "suite-poison", s, reg).await;
    let c = &e.client;
    let store = &e.store.store;

    // A malformed message is dead-lettered at once, with its reason.
    enqueue_now(store.as_ref(), QueueName::Control(0), "{not json".into()).await;
    until("the malformed message's dead letter", || async {
        e.worker.stats().dead_lettered == 1
    })
    .await;
    let letters = c.list_dead_letters(None, 10).await.unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert!(
        letters[0].reason.contains("malformed message"),
        "{}",
        letters[0].reason
    );
    assert_eq!(letters[0].body, "{not json");

    // A message whose processing fails on every delivery (the instance's history is corrupt)
    // is retried until it was delivered more than max_dequeue_count times, then dead-lettered.
    let w = c.start("Wait", ()).await.unwrap();
    until("the first turn", || async { e.worker.stats().turns == 1 }).await;
    e.store.corrupt_history_event(&w, 1).await;
    c.raise_event(&w, "go", &1u64).await.unwrap();
    until("the poison message's dead letter", || async {
        e.worker.stats().dead_lettered == 2
    })
    .await;
    let letters = c.list_dead_letters(None, 10).await.unwrap();
    let letter = letters
        .iter()
        .find(|l| l.body.contains("go"))
        .unwrap_or_else(|| panic!("the event's letter: {letters:?}"));
    let queue = QueueName::Control(w.partition(e.hub.partition_count()));
    assert_eq!(letter.queue, queue);
    assert_dead_at_third_delivery(letter);
    // The loop stopped: the queue is empty and the event was never applied.
    assert_eq!(store.stats(queue).await.unwrap().length, 0);
    let ws = e.worker.stats();
    assert_eq!((ws.turns, ws.dead_lettered), (1, 2), "{ws:?}");
    e.worker.shutdown().await;
}
