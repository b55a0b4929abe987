//! An SDK orchestration's entity locks are released when the runtime ends it: terminated by
//! a client inside a critical section, completed inside one, or continued as new inside one
//! (the next execution of the same instance is not the lock holder), the entities it locked
//! run other requests afterwards. The orchestrations are scripts of the in-process SDK
//! (`common/sdk.rs`) sending the lock request as an SDK's `sendEntityMessage` does; the
//! entity runs in Rust. On the memory backend and SQLite.

use std::sync::Arc;

use crate::backends::{settings, Backend, TestStore};
use crate::common::{wait_done, STUCK};
use crate::sdk::{End, Replay, Sdk};
use taskhub::*;
use taskhub_core::entity::{Caller, EntityId, EntityRequest, ENTITY_REQUEST_EVENT};
use taskhub_test_support::wait;

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    sdk_sections_ended_by_the_runtime_release_their_entities,
);

fn counter(key: &str) -> EntityId {
    EntityId::new("counter", key).unwrap()
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("counter", |ctx: &mut EntityContext| {
        let n: i64 = ctx.get_state_or_default()?;
        let add: i64 = ctx.input()?;
        ctx.set_state(&(n + add))?;
        Ok(n + add)
    });
    reg
}

/// Locks `@counter@<instance>-x` and `-y` as an SDK does; true once granted.
fn locked(r: &mut Replay) -> bool {
    let me = r.instance.as_str().to_owned();
    let request = EntityRequest::Lock {
        id: format!("lock-{me}"),
        owner: Caller {
            instance_id: r.instance.clone(),
            execution_id: r.execution.clone().unwrap(),
        },
        lockset: vec![counter(&format!("{me}-x")), counter(&format!("{me}-y"))],
        position: 0,
    };
    r.send(
        counter(&format!("{me}-x")).instance_id().as_str(),
        ENTITY_REQUEST_EVENT,
        request,
    );
    r.event(&format!("lock-{me}")).is_some()
}

fn the_sdk() -> Sdk {
    Sdk::new()
        // Holds the section until terminated.
        .orchestration("Hold", |r: &mut Replay| {
            if locked(r) {
                r.set_status("inside");
            }
            End::Pending
        })
        // Returns inside the section.
        .orchestration("Return", |r: &mut Replay| {
            if locked(r) {
                End::Complete(serde_json::json!("done"))
            } else {
                End::Pending
            }
        })
        // Execution 0 continues as new inside the section; execution 1 waits for ever.
        .orchestration("Continue", |r: &mut Replay| {
            if r.input::<u64>() == 1 {
                r.set_status("next");
                return End::Pending;
            }
            if locked(r) {
                End::ContinueAsNew(serde_json::json!(1))
            } else {
                End::Pending
            }
        })
}

async fn sdk_sections_ended_by_the_runtime_release_their_entities(backend: Backend) {
    let store = TestStore::fresh(backend, "remote-lock-release").await;
    let hub = TaskHub::open(store.store.clone(), settings(backend))
        .await
        .unwrap();
    let worker = Worker::start_with_executor(&hub, registry(), Arc::new(the_sdk()))
        .await
        .unwrap();
    let client = hub.client();
    let start = |name: &'static str, instance: &'static str, input: u64| {
        let client = client.clone();
        async move {
            let options = StartOptions {
                instance_id: Some(InstanceId::new(instance).unwrap()),
                ..StartOptions::default()
            };
            client.start_with(name, input, options).await.unwrap()
        }
    };
    let status = |i: InstanceId| {
        let client = client.clone();
        async move {
            client
                .get_status(&i, StatusOptions::default())
                .await
                .unwrap()
                .and_then(|s| s.row.custom_status)
                .map(|p| p.as_str().to_owned())
        }
    };

    let hold = start("Hold", "hold", 0).await;
    wait::until_some("hold is inside its section", || {
        let s = status(hold.clone());
        async move { (s.await.as_deref() == Some("\"inside\"")).then_some(()) }
    })
    .await;
    client.terminate(&hold, "stop").await.unwrap();
    let done = wait_done(&client, &hold, STUCK).await;
    assert_eq!(done.status(), OrchestrationStatus::Terminated);

    let ret = start("Return", "ret", 0).await;
    let done = wait_done(&client, &ret, STUCK).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed, "{done:?}");

    let cont = start("Continue", "cont", 0).await;
    wait::until_some("cont's next execution runs", || {
        let s = status(cont.clone());
        async move { (s.await.as_deref() == Some("\"next\"")).then_some(()) }
    })
    .await;

    // Every locked entity runs a signal afterwards and has no lock holder.
    for who in ["hold", "ret", "cont"] {
        for side in ["x", "y"] {
            let e = counter(&format!("{who}-{side}"));
            client.signal_entity(&e, "add", &1i64).await.unwrap();
            let meta = wait::until_some(&format!("{e} runs the signal"), || {
                let client = client.clone();
                let e = e.clone();
                async move {
                    let state: Option<i64> = client.read_entity_state(&e).await.unwrap();
                    if state != Some(1) {
                        return None;
                    }
                    client.get_entity(&e).await.unwrap()
                }
            })
            .await;
            assert_eq!(meta.locked_by, None, "{e} released");
        }
    }
    client.terminate(&cont, "end").await.unwrap();
    worker.shutdown().await;
}
