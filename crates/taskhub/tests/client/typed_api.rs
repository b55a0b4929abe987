//! The typed API end to end on a worker: descriptors register, call and start orchestrations
//! and activities (in the descriptor's version), a typed handle returns the output or says how
//! the instance ended instead, and retry predicates decide on real activity failures.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::history::history_of;
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;

const SQUARE: ActivityRef<u64, u64> = ActivityRef::new("Square");
const CHILD_V1: OrchestrationRef<u64, u64> = OrchestrationRef::new("Child");
const CHILD_V2: OrchestrationRef<u64, u64> = OrchestrationRef::versioned("Child", "2");
const PARENT: OrchestrationRef<Vec<u64>, (u64, u64)> = OrchestrationRef::new("Parent");
const FAILS: OrchestrationRef<(), ()> = OrchestrationRef::new("Fails");
const WAITS: OrchestrationRef<(), String> = OrchestrationRef::new("Waits");

async fn hub() -> TaskHub {
    let store = memory_store();
    TaskHub::open(store, fast_settings()).await.unwrap()
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.register_activity(SQUARE, |_ctx, n: u64| async move {
        Ok::<_, ActivityError>(n * n)
    })
    // Version 1 squares, version 2 squares and adds its version to the result.
    .register_orchestration(CHILD_V1, |ctx, n: u64| async move {
        Ok::<_, OrchestrationError>(ctx.call(SQUARE, n).await?)
    })
    .register_orchestration(CHILD_V2, |ctx, n: u64| async move {
        let version: u64 = ctx.version().unwrap_or_default().parse().unwrap_or(0);
        Ok::<_, OrchestrationError>(ctx.call(SQUARE, n).await? + version * 1000)
    })
    .register_orchestration(PARENT, |ctx, numbers: Vec<u64>| async move {
        let mut v1 = 0;
        let mut v2 = 0;
        for n in numbers {
            v1 += ctx.call_sub(CHILD_V1, n).await?;
            v2 += ctx.call_sub(CHILD_V2, n).await?;
        }
        Ok::<_, OrchestrationError>((v1, v2))
    })
    .register_orchestration(FAILS, |_ctx, ()| async move {
        Err::<(), _>(OrchestrationError::new("out of stock").with_type("OutOfStock"))
    })
    .register_orchestration(WAITS, |ctx, ()| async move {
        Ok::<_, OrchestrationError>(ctx.wait_for_event::<String>("never").await?)
    });
    reg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_starts_calls_and_versions_run_end_to_end() {
    let hub = hub().await;
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    let parent = client.start_typed(&PARENT, vec![2, 3]).await.unwrap();
    let (v1, v2) = parent.wait_for_completion(STUCK).await.unwrap();
    assert_eq!(
        (v1, v2),
        (4 + 9, 4 + 9 + 2 * 2000),
        "v2 ran for CHILD_V2 only"
    );

    // A versioned descriptor starts its version; an unversioned one the unversioned function.
    let two = client.start_typed(&CHILD_V2, 5).await.unwrap();
    assert_eq!(two.wait_for_completion(STUCK).await.unwrap(), 2025);
    let row = two.status().await.unwrap().unwrap().row;
    assert_eq!(row.version.as_deref(), Some("2"));
    let one = client.start_typed(&CHILD_V1, 5).await.unwrap();
    assert_eq!(one.wait_for_completion(STUCK).await.unwrap(), 25);

    // A handle on an instance started through the string API.
    let id = client.start("Child", 7_u64).await.unwrap();
    let handle = client.instance(&CHILD_V1, id.clone());
    assert_eq!(handle.id(), &id);
    assert_eq!(handle.wait_for_completion(STUCK).await.unwrap(), 49);
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_wait_reports_a_failure_or_a_termination() {
    let hub = hub().await;
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    let failed = client.start_typed(&FAILS, ()).await.unwrap();
    match failed.wait_for_completion(STUCK).await {
        Err(TaskhubError::InstanceFailed {
            instance_id,
            failure,
        }) => {
            assert_eq!(&instance_id, failed.id());
            assert_eq!(failure.error_type, "OutOfStock");
            assert_eq!(failure.message, "out of stock");
        }
        other => panic!("expected InstanceFailed, got {other:?}"),
    }

    let waiting = client.start_typed(&WAITS, ()).await.unwrap();
    client
        .terminate(waiting.id(), "no longer needed")
        .await
        .unwrap();
    match waiting.wait_for_completion(STUCK).await {
        Err(TaskhubError::InstanceTerminated {
            instance_id,
            reason,
        }) => {
            assert_eq!(&instance_id, waiting.id());
            assert_eq!(reason, "no longer needed");
        }
        other => panic!("expected InstanceTerminated, got {other:?}"),
    }

    // Too short a wait is a timeout, not a failure.
    let waiting = client.start_typed(&WAITS, ()).await.unwrap();
    let e = waiting
        .wait_for_completion(Duration::from_millis(1))
        .await
        .unwrap_err();
    assert!(matches!(e, TaskhubError::Timeout(..)), "{e:?}");
    worker.shutdown().await;
}

const FLAKY: ActivityRef<(), u32> = ActivityRef::new("Flaky");
const DECLINES: ActivityRef<(), u32> = ActivityRef::new("Declines");
const PAY: OrchestrationRef<bool, u32> = OrchestrationRef::new("Pay");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_predicates_decide_on_real_activity_failures() {
    let hub = hub().await;
    let declined = Arc::new(AtomicU32::new(0));
    let d = declined.clone();
    let mut reg = Registry::new();
    reg.register_activity(FLAKY, |ctx: ActivityContext, ()| async move {
        if ctx.attempt() < 3 {
            return Err(ActivityError::new("try again").with_type("Unavailable"));
        }
        Ok(ctx.attempt())
    })
    .register_activity(DECLINES, move |_ctx, ()| {
        d.fetch_add(1, Ordering::SeqCst);
        async move { Err::<u32, _>(ActivityError::new("card declined").with_type("Declined")) }
    })
    .register_orchestration(PAY, |ctx, flaky: bool| async move {
        let policy = RetryPolicy::new(5, Duration::from_millis(10))
            .with_retry_if(|err| err.error_type() == Some("Unavailable"));
        let step = if flaky { FLAKY } else { DECLINES };
        Ok::<_, OrchestrationError>(ctx.call_with_retry(step, (), policy).await?)
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();

    let flaky = client.start_typed(&PAY, true).await.unwrap();
    assert_eq!(flaky.wait_for_completion(STUCK).await.unwrap(), 3);

    let declining = client.start_typed(&PAY, false).await.unwrap();
    let e = declining.wait_for_completion(STUCK).await.unwrap_err();
    let TaskhubError::InstanceFailed { failure, .. } = e else {
        panic!("expected InstanceFailed, got {e:?}");
    };
    assert_eq!(failure.message, "activity 'Declines' failed: card declined");
    assert_eq!(
        declined.load(Ordering::SeqCst),
        1,
        "a rejected failure is not retried"
    );
    let history = history_of(&client, declining.id()).await;
    assert!(
        !history
            .iter()
            .any(|e| matches!(e.event, EventKind::TimerCreated { .. })),
        "no back-off timer after a rejected failure"
    );
    worker.shutdown().await;
}
