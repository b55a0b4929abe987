//! End-to-end: every orchestration feature on the SQLite backend, with a real worker.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
use std::time::Duration;

use common::*;
use taskhub::*;

async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
    Ok(format!("Hello {city}!"))
}

async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
    let mut out = Vec::new();
    for city in ["Tokyo", "Seattle", "London"] {
        out.push(ctx.call_activity("SayHello", city).await?);
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_cities_on_sqlite() {
    let dir = TempDir::new("hello");
    let hub = TaskHub::open(sqlite_store(&dir.0), fast_settings())
        .await
        .unwrap();
    let mut reg = Registry::new();
    reg.orchestration("HelloCities", hello_cities)
        .activity("SayHello", say_hello);
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("HelloCities", ()).await.unwrap();
    let status = client
        .wait_for_completion(&id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(
        status.status(),
        OrchestrationStatus::Completed,
        "{status:?}"
    );
    assert_eq!(
        status.output::<Vec<String>>().unwrap().unwrap(),
        vec!["Hello Tokyo!", "Hello Seattle!", "Hello London!"]
    );
    worker.shutdown().await;
}

async fn setup(tag: &str, reg: Registry) -> (TempDir, TaskHub, WorkerHandle, TaskHubClient) {
    let dir = TempDir::new(tag);
    let hub = TaskHub::open(sqlite_store(&dir.0), fast_settings())
        .await
        .unwrap();
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    (dir, hub, worker, client)
}

async fn done(client: &TaskHubClient, id: &InstanceId) -> InstanceStatus {
    client.wait_for_completion(id, wait::STUCK).await.unwrap()
}

fn id(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_fan_in_and_retry_and_sub_orchestrations() {
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
    reg.orchestration("FanOut", |ctx: OrchestrationContext, n: u64| async move {
        let results = when_all((0..n).map(|i| ctx.call_activity::<_, u64>("Square", i))).await;
        let mut sum = 0;
        for r in results {
            sum += r?;
        }
        Ok::<_, OrchestrationError>(sum)
    });
    reg.orchestration("Retry", |ctx: OrchestrationContext, _: ()| async move {
        let p = RetryPolicy::new(5, Duration::from_millis(100));
        Ok::<u32, OrchestrationError>(ctx.call_activity_with_retry("Flaky", (), p).await?)
    });
    reg.orchestration("Parent", |ctx: OrchestrationContext, _: ()| async move {
        let kids = (1..=3u64).map(|n| ctx.call_sub_orchestration::<_, u64>("FanOut", n));
        let mut total = 0;
        for r in when_all(kids).await {
            total += r?;
        }
        Ok::<_, OrchestrationError>(total)
    });
    let (_dir, _hub, worker, client) = setup("fan", reg).await;
    let fan = client.start("FanOut", 300u64).await.unwrap();
    let retry = client.start("Retry", ()).await.unwrap();
    let parent = client.start("Parent", ()).await.unwrap();
    assert_eq!(
        done(&client, &fan).await.output::<u64>().unwrap(),
        Some((0..300u64).map(|i| i * i).sum())
    );
    assert_eq!(
        done(&client, &retry).await.output::<u32>().unwrap(),
        Some(3)
    );
    // Children: FanOut(1)=0, FanOut(2)=1, FanOut(3)=5.
    assert_eq!(
        done(&client, &parent).await.output::<u64>().unwrap(),
        Some(6)
    );
    let child = client
        .get_status(&id(&format!("{parent}:0")), StatusOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(child.status(), OrchestrationStatus::Completed);
    worker.shutdown().await;
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

async fn custom_status(client: &TaskHubClient, id: &InstanceId) -> Option<String> {
    client
        .get_status(id, StatusOptions::default())
        .await
        .unwrap()
        .and_then(|s| s.row.custom_status.map(|p| p.as_str().to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_events_and_custom_status() {
    let mut reg = Registry::new();
    reg.orchestration("Approval", approval);
    reg.orchestration("Early", |ctx: OrchestrationContext, _: ()| async move {
        // The test raises both "n" events before "go": they arrive before the waits below,
        // whatever the machine's speed.
        ctx.wait_for_event::<()>("go").await?;
        let a: u32 = ctx.wait_for_event("n").await?;
        let b: u32 = ctx.wait_for_event("n").await?;
        Ok::<_, OrchestrationError>(vec![a, b])
    });
    let (_dir, _hub, worker, client) = setup("timers", reg).await;
    let approved = client.start("Approval", 30_000u64).await.unwrap();
    let timed_out = client.start("Approval", 200u64).await.unwrap();
    let early = client.start("Early", ()).await.unwrap();
    // Events raised before the orchestration waits are buffered, in order.
    client.raise_event(&early, "n", &1).await.unwrap();
    client.raise_event(&early, "n", &2).await.unwrap();
    client.raise_event(&early, "go", &()).await.unwrap();
    // The custom status appears with the first turn.
    wait::until_async(
        "the custom status",
        || async {
            custom_status(&client, &approved).await.as_deref() == Some("\"waiting for approval\"")
        },
        || custom_status(&client, &approved),
    )
    .await;
    client
        .raise_event(&approved, "approval", &true)
        .await
        .unwrap();
    assert_eq!(
        done(&client, &approved)
            .await
            .output::<String>()
            .unwrap()
            .unwrap(),
        "approved"
    );
    let t = done(&client, &timed_out).await;
    assert_eq!(t.output::<String>().unwrap().unwrap(), "timed out");
    assert_eq!(
        done(&client, &early)
            .await
            .output::<Vec<u32>>()
            .unwrap()
            .unwrap(),
        vec![1, 2]
    );
    // Raising on an unknown instance is a NotFound error; on a finished one, WrongStatus.
    assert!(matches!(
        client.raise_event(&id("nobody"), "x", &1).await,
        Err(TaskhubError::NotFound(_))
    ));
    assert!(matches!(
        client.raise_event(&approved, "x", &1).await,
        Err(TaskhubError::WrongStatus { .. })
    ));
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_as_new_suspend_resume_terminate() {
    let mut reg = Registry::new();
    reg.orchestration("Counter", |ctx: OrchestrationContext, n: u32| async move {
        if n >= 5 {
            return Ok(n);
        }
        ctx.sleep(Duration::from_millis(20)).await;
        ctx.continue_as_new(n + 1).await
    });
    reg.orchestration("Wait", |ctx: OrchestrationContext, _: ()| async move {
        let v: u32 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    let (_dir, _hub, worker, client) = setup("can", reg).await;
    let c = client.start("Counter", 0u32).await.unwrap();
    assert_eq!(done(&client, &c).await.output::<u32>().unwrap(), Some(5));
    let h = client
        .get_status(&c, StatusOptions { history: true })
        .await
        .unwrap()
        .unwrap();
    let history = h.history.unwrap();
    assert!(
        matches!(&history[1].event, EventKind::ExecutionStarted { input, .. } if input.as_str() == "5"),
        "history holds only the last generation"
    );

    let w = client.start("Wait", ()).await.unwrap();
    wait_status(&client, &w, OrchestrationStatus::Running).await;
    client.suspend(&w, Some("hold")).await.unwrap();
    wait_status(&client, &w, OrchestrationStatus::Suspended).await;
    client.raise_event(&w, "go", &7).await.unwrap();
    // Once the event is in the history, the turn that would have completed the instance has
    // run: it must have held the event back.
    let history = || async {
        client
            .get_status(&w, StatusOptions { history: true })
            .await
            .unwrap()
            .and_then(|s| s.history)
            .unwrap_or_default()
    };
    wait::until_async(
        "the raised event in the history",
        || async {
            history()
                .await
                .iter()
                .any(|e| matches!(&e.event, EventKind::EventRaised { name, .. } if name == "go"))
        },
        history,
    )
    .await;
    assert_eq!(
        client
            .get_status(&w, StatusOptions::default())
            .await
            .unwrap()
            .unwrap()
            .status(),
        OrchestrationStatus::Suspended
    );
    client.resume(&w, None).await.unwrap();
    assert_eq!(done(&client, &w).await.output::<u32>().unwrap(), Some(7));

    let t = client.start("Wait", ()).await.unwrap();
    client.terminate(&t, "no longer needed").await.unwrap();
    let s = done(&client, &t).await;
    assert_eq!(s.status(), OrchestrationStatus::Terminated);
    assert!(matches!(
        client.terminate(&t, "again").await,
        Err(TaskhubError::WrongStatus { .. })
    ));
    worker.shutdown().await;
}

async fn wait_status(client: &TaskHubClient, id: &InstanceId, want: OrchestrationStatus) {
    let status = || async {
        client
            .get_status(id, StatusOptions::default())
            .await
            .unwrap()
            .map(|s| s.status())
    };
    wait::until_async(
        &format!("{id} reaching {want}"),
        || async { status().await == Some(want) },
        status,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reuse_policy_racing_starts_restart_purge_and_listing() {
    let mut reg = Registry::new();
    reg.orchestration("Echo", |_ctx: OrchestrationContext, v: u32| async move {
        Ok::<_, OrchestrationError>(v)
    });
    reg.orchestration("Wait", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<()>("go").await?;
        Ok::<_, OrchestrationError>(0u32)
    });
    let (_dir, _hub, worker, client) = setup("reuse", reg).await;
    let opts = |i: &str, reuse| StartOptions {
        instance_id: Some(id(i)),
        reuse,
        ..StartOptions::default()
    };

    // A running instance refuses a second start by default.
    client
        .start_with("Wait", (), opts("w1", ReusePolicy::RejectActive))
        .await
        .unwrap();
    let err = client
        .start_with("Echo", 1, opts("w1", ReusePolicy::RejectActive))
        .await
        .unwrap_err();
    assert!(matches!(err, TaskhubError::AlreadyExists { .. }), "{err}");
    // Let the first execution run, so that the terminate is applied to it (its turn must not
    // overwrite the Pending row of the new start).
    wait_status(&client, &id("w1"), OrchestrationStatus::Running).await;
    // Terminate-and-restart replaces it.
    client
        .start_with("Echo", 9u32, opts("w1", ReusePolicy::TerminateActive))
        .await
        .unwrap();
    let s = done(&client, &id("w1")).await;
    assert_eq!(
        (s.status(), s.output::<u32>().unwrap()),
        (OrchestrationStatus::Completed, Some(9))
    );
    // A finished one is replaced by default, refused under RejectExisting.
    assert!(client
        .start_with("Echo", 2, opts("w1", ReusePolicy::RejectExisting))
        .await
        .is_err());
    client
        .start_with("Echo", 3u32, opts("w1", ReusePolicy::RejectActive))
        .await
        .unwrap();
    assert_eq!(
        done(&client, &id("w1")).await.output::<u32>().unwrap(),
        Some(3)
    );

    // Racing starts of one new ID: exactly one wins and exactly one execution runs.
    // (`RejectExisting`: under `RejectActive` a start that comes after the winner's quick
    // execution has already completed rightly succeeds too, as a restart.)
    let (a, b) = tokio::join!(
        client.start_with("Echo", 10u32, opts("race", ReusePolicy::RejectExisting)),
        client.start_with("Echo", 20u32, opts("race", ReusePolicy::RejectExisting)),
    );
    assert!(
        a.is_ok() != b.is_ok(),
        "exactly one start wins: {a:?} {b:?}"
    );
    let s = done(&client, &id("race")).await;
    let out = s.output::<u32>().unwrap().unwrap();
    assert_eq!(out, if a.is_ok() { 10 } else { 20 });
    let h = client
        .get_status(&id("race"), StatusOptions { history: true })
        .await
        .unwrap()
        .unwrap()
        .history
        .unwrap();
    assert_eq!(
        h.iter()
            .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
            .count(),
        1
    );

    // Restart under a new ID keeps name and input.
    let new_id = client.restart(&id("race"), true).await.unwrap();
    assert_ne!(new_id, id("race"));
    assert_eq!(
        done(&client, &new_id).await.output::<u32>().unwrap(),
        Some(out)
    );

    // Listing with filters and paging.
    for i in 0..7 {
        client
            .start_with(
                "Echo",
                i,
                opts(&format!("page-{i}"), ReusePolicy::RejectActive),
            )
            .await
            .unwrap();
        done(&client, &id(&format!("page-{i}"))).await;
    }
    let mut q = InstanceQuery {
        instance_id_prefix: Some("page-".into()),
        page_size: 3,
        ..InstanceQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = client.list(&q).await.unwrap();
        assert!(page.instances.len() <= 3);
        seen.extend(page.instances.iter().map(|r| r.instance_id.to_string()));
        match page.continuation {
            Some(c) => q.continuation = Some(c),
            None => break,
        }
    }
    assert_eq!(
        seen,
        (0..7).map(|i| format!("page-{i}")).collect::<Vec<_>>()
    );
    let q = InstanceQuery {
        statuses: vec![OrchestrationStatus::Running],
        ..InstanceQuery::default()
    };
    assert!(client.list(&q).await.unwrap().instances.is_empty());

    // Purge: one, then by filter; an active instance cannot be purged.
    assert!(client.purge(&id("page-0")).await.unwrap());
    assert!(client
        .get_status(&id("page-0"), StatusOptions::default())
        .await
        .unwrap()
        .is_none());
    let purged = client
        .purge_where(&InstanceQuery {
            instance_id_prefix: Some("page-".into()),
            ..InstanceQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(purged, 6);
    client
        .start_with("Wait", (), opts("active", ReusePolicy::RejectActive))
        .await
        .unwrap();
    assert!(matches!(
        client.purge(&id("active")).await,
        Err(TaskhubError::WrongStatus { .. })
    ));
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_errors_and_nothing_is_lost() {
    let mut reg = Registry::new();
    reg.orchestration(
        "CallsMissing",
        |ctx: OrchestrationContext, _: ()| async move {
            let r: Result<u32, _> = ctx.call_activity("NoSuchActivity", ()).await;
            Ok::<_, OrchestrationError>(r.map_err(|e| e.to_string()).err().unwrap_or_default())
        },
    );
    reg.orchestration("Big", |ctx: OrchestrationContext, n: usize| async move {
        let s: String = ctx.call_activity("MakeBig", n).await?;
        Ok::<_, OrchestrationError>(s.len())
    });
    reg.activity("MakeBig", |_c: ActivityContext, n: usize| async move {
        Ok::<_, ActivityError>("x".repeat(n))
    });
    let (_dir, hub, worker, client) = setup("bad", reg).await;

    // Unknown orchestration: the instance fails with a clear error.
    let x = client.start("NoSuchOrchestration", ()).await.unwrap();
    let s = done(&client, &x).await;
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
    let msg = done(&client, &y).await.output::<String>().unwrap().unwrap();
    assert!(msg.contains("'NoSuchActivity' is not registered"), "{msg}");
    // An oversized payload goes through the large-payload store.
    let big = client.start("Big", 200_000usize).await.unwrap();
    assert_eq!(
        done(&client, &big).await.output::<usize>().unwrap(),
        Some(200_000)
    );
    // Invalid instance IDs are rejected before anything is stored.
    assert!(InstanceId::new("a/b").is_err());
    assert!(InstanceId::new("").is_err());
    // A malformed queue message is dead-lettered with its reason, not retried forever.
    use taskhub_storage::{NewQueueMessage, QueueName};
    hub.store()
        .enqueue(
            QueueName::Control(0),
            vec![NewQueueMessage {
                body: "{not json".into(),
                delay: Duration::ZERO,
            }],
        )
        .await
        .unwrap();
    let listed = || async { client.list_dead_letters(None, 10).await.unwrap() };
    wait::until_async(
        "the malformed message's dead letter",
        || async { !listed().await.is_empty() },
        || async { worker.stats() },
    )
    .await;
    let letters = listed().await;
    assert_eq!(letters.len(), 1, "malformed message dead-lettered");
    assert!(
        letters[0].reason.contains("malformed message"),
        "{}",
        letters[0].reason
    );
    assert_eq!(letters[0].body, "{not json");
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_database_file_is_a_clear_error() {
    let dir = TempDir::new("corrupt");
    let path = dir.0.join("hub.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let opts = taskhub_sqlite::SqliteOptions::new(&path);
    let Err(err) = taskhub_sqlite::SqliteStore::open(opts) else {
        panic!("open must fail")
    };
    assert!(err.to_string().contains("hub.db"), "{err}");
}
