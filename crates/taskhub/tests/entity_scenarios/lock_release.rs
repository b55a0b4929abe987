//! No entity stays locked for an orchestration that no longer wants the lock: a lock request
//! that loses a race to a timer, a critical section held when the orchestration is
//! terminated, and one held across a continue-as-new all release their entities, so a later
//! critical section over them is granted (without `clean_entities`). And `clean_entities`
//! still releases a lock whose holder is gone (here: a lock request from an instance that
//! does not exist). On memory and SQLite.

use std::sync::Arc;
use std::time::Duration;

use crate::common::queues::enqueue_now;
use crate::common::registries::add_cell;
use crate::common::two_stores::memory_and_sqlite;
use crate::common::*;
use taskhub::*;
use taskhub_core::entity::{Caller, EntityRequest, ENTITY_REQUEST_EVENT};
use taskhub_core::format::encode_message;
use taskhub_core::Message;
use taskhub_storage::{QueueName, TaskHubStore};

const BOUND: Duration = Duration::from_secs(30);

fn cell(key: &str) -> EntityId {
    EntityId::new("Cell", key).unwrap()
}

fn cells(keys: &[String]) -> Vec<EntityId> {
    keys.iter().map(|k| cell(k)).collect()
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    add_cell(&mut reg);
    // Holds a section over `keys` until it gets the event "go".
    reg.orchestration(
        "Holder",
        |ctx: OrchestrationContext, keys: Vec<String>| async move {
            let section = ctx.lock_entities(&cells(&keys)).await?;
            ctx.set_custom_status(&"holding")?;
            ctx.wait_for_event::<()>("go").await?;
            drop(section);
            Ok::<_, OrchestrationError>(())
        },
    );
    // Asks for a section over `keys`, but gives up after 200 ms.
    reg.orchestration(
        "Racer",
        |ctx: OrchestrationContext, keys: Vec<String>| async move {
            let got = match when_any2(
                ctx.lock_entities(&cells(&keys)),
                ctx.sleep(Duration::from_millis(200)),
            )
            .await
            {
                Either::Left(section) => {
                    drop(section?);
                    "locked"
                }
                Either::Right(()) => "gave up",
            };
            Ok::<_, OrchestrationError>(got.to_owned())
        },
    );
    // Locks `keys` and continues as new while holding them; the next execution returns.
    reg.orchestration(
        "Looper",
        |ctx: OrchestrationContext, (keys, round): (Vec<String>, u32)| async move {
            if round > 0 {
                return Ok(round);
            }
            let _section = ctx.lock_entities(&cells(&keys)).await?;
            ctx.continue_as_new((keys, round + 1)).await
        },
    );
    // Locks `keys` and touches each.
    reg.orchestration(
        "Later",
        |ctx: OrchestrationContext, keys: Vec<String>| async move {
            let section = ctx.lock_entities(&cells(&keys)).await?;
            for id in section.entities() {
                let _: u64 = ctx.call_entity(id, "touch", &()).await?;
            }
            Ok::<_, OrchestrationError>(())
        },
    );
    reg
}

fn keys(k: &[&str]) -> Vec<String> {
    k.iter().map(|s| (*s).to_owned()).collect()
}

async fn completes(client: &TaskHubClient, id: &InstanceId, what: &str) -> InstanceStatus {
    let done = client
        .wait_for_completion(id, BOUND)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        done.status(),
        OrchestrationStatus::Completed,
        "{what}: {done:?}"
    );
    done
}

async fn until_holding(client: &TaskHubClient, id: &InstanceId) {
    tokio::time::timeout(BOUND, async {
        loop {
            let s = client
                .get_status(id, StatusOptions::default())
                .await
                .unwrap();
            if s.and_then(|s| s.row.custom_status).is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the holder never got its section");
}

async fn scenario(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    // A request that loses its race: it waits behind a holder of `a` when its timer fires.
    let holder = client.start("Holder", keys(&["a"])).await.unwrap();
    until_holding(&client, &holder).await;
    let racer = client.start("Racer", keys(&["a", "b"])).await.unwrap();
    let done = completes(&client, &racer, "racer").await;
    assert_eq!(done.output::<String>().unwrap().as_deref(), Some("gave up"));
    client.raise_event(&holder, "go", &()).await.unwrap();
    completes(&client, &holder, "holder").await;
    let later = client.start("Later", keys(&["a", "b"])).await.unwrap();
    completes(&client, &later, "a section after a given-up request").await;

    // A holder terminated inside its section.
    let holder = client.start("Holder", keys(&["c", "d"])).await.unwrap();
    until_holding(&client, &holder).await;
    client.terminate(&holder, "stop").await.unwrap();
    let later = client.start("Later", keys(&["c", "d"])).await.unwrap();
    completes(&client, &later, "a section after a terminated holder").await;

    // A holder that continued as new inside its section.
    let looper = client.start("Looper", (keys(&["e"]), 0u32)).await.unwrap();
    completes(&client, &looper, "looper").await;
    let later = client.start("Later", keys(&["e"])).await.unwrap();
    completes(&client, &later, "a section after a continue-as-new").await;
    worker.shutdown().await;
}

memory_and_sqlite!(
    scenario, "lock-release":
    given_up_and_abandoned_locks_are_released_in_memory,
    given_up_and_abandoned_locks_are_released_on_sqlite,
);

/// A lock held for an instance that does not exist: only clean-up can release it.
async fn orphan(store: Arc<dyn TaskHubStore>) {
    let settings = Settings {
        partition_count: 1,
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let request = EntityRequest::Lock {
        id: "ghost-section".to_owned(),
        owner: Caller {
            instance_id: InstanceId::new("ghost").unwrap(),
            execution_id: ExecutionId::new("gone").unwrap(),
        },
        lockset: vec![cell("g")],
        position: 0,
    };
    let message = Message::from_client(
        cell("g").instance_id().clone(),
        EventKind::EventRaised {
            name: ENTITY_REQUEST_EVENT.to_owned(),
            input: Payload::to_payload(&request, "request").unwrap(),
        },
        hub.clock().now(),
    );
    enqueue_now(
        store.as_ref(),
        QueueName::Control(0),
        encode_message(&message),
    )
    .await;
    tokio::time::timeout(BOUND, async {
        while client
            .get_entity(&cell("g"))
            .await
            .unwrap()
            .is_none_or(|m| m.locked_by.is_none())
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the ghost never got its lock");
    let cleaned = client
        .clean_entities(&CleanEntities::default())
        .await
        .unwrap();
    assert_eq!(cleaned.locks_released, 1);
    let later = client.start("Later", keys(&["g"])).await.unwrap();
    completes(&client, &later, "a section after clean-up").await;
    worker.shutdown().await;
}

memory_and_sqlite!(
    orphan, "lock-orphan":
    clean_up_releases_a_lock_whose_holder_is_gone_in_memory,
    clean_up_releases_a_lock_whose_holder_is_gone_on_sqlite,
);
