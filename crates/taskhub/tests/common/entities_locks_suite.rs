//! The body of the critical-section test (`entities.rs`, on every backend).
//! Included as `#[path = "common/entities_locks_suite.rs"]`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::TaskHubStore;

use crate::common::*;

fn cell(key: &str) -> EntityId {
    EntityId::new("Cell", key).unwrap()
}

/// A cell logs what happens to it; `enter`/`exit` fail if two sections overlap on it.
fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Cell", |ctx: &mut EntityContext| {
        let mut log: Vec<String> = ctx.get_state_or_default()?;
        let who: String = ctx.input()?;
        let inside = log
            .iter()
            .rev()
            .find(|l| l.starts_with("enter:") || l.starts_with("exit:"))
            .and_then(|l| l.strip_prefix("enter:"))
            .map(str::to_owned);
        match ctx.operation_name() {
            "enter" if inside.is_some() => {
                return Err(EntityError::new(format!(
                    "{who} entered while {inside:?} was inside"
                )));
            }
            "exit" if inside.as_deref() != Some(who.as_str()) => {
                return Err(EntityError::new(format!(
                    "{who} left but {inside:?} was inside"
                )));
            }
            _ => {}
        }
        log.push(format!("{}:{who}", ctx.operation_name()));
        ctx.set_state(&log)?;
        Ok(log.len())
    });
    // Locks `keys` (in the given order: the runtime sorts them) and works inside.
    reg.orchestration(
        "Section",
        |ctx: OrchestrationContext, (who, keys): (String, Vec<String>)| async move {
            let ids: Vec<EntityId> = keys.iter().map(|k| cell(k)).collect();
            let section = ctx.lock_entities(&ids).await?;
            for id in section.entities() {
                let _: usize = ctx.call_entity(id, "enter", &who).await?;
            }
            for id in section.entities() {
                let _: usize = ctx.call_entity(id, "touch", &who).await?;
                ctx.signal_entity(id, "touch", &who)?;
            }
            // Outside the lock set: refused.
            let outside = ctx
                .call_entity::<_, usize>(&cell("outside"), "touch", &who)
                .await
                .err()
                .and_then(|e| e.error_type().map(str::to_owned));
            for id in section.entities().iter().rev() {
                let _: usize = ctx.call_entity(id, "exit", &who).await?;
            }
            section.release();
            Ok::<_, OrchestrationError>(outside)
        },
    );
    // Locks a cell and returns without releasing: returning ends the section.
    reg.orchestration(
        "ReturnsInside",
        |ctx: OrchestrationContext, key: String| async move {
            let section = ctx.lock_entities(&[cell(&key)]).await?;
            let _: usize = ctx.call_entity(&cell(&key), "touch", &"returns").await?;
            let _keep = section;
            Ok::<_, OrchestrationError>(())
        },
    );
    // Locks a cell and waits forever.
    reg.orchestration(
        "HoldsForever",
        |ctx: OrchestrationContext, key: String| async move {
            let _section = ctx.lock_entities(&[cell(&key)]).await?;
            let () = ctx.wait_for_event("never").await?;
            Ok::<_, OrchestrationError>(())
        },
    );
    reg
}

async fn log_of(client: &TaskHubClient, key: &str) -> Vec<String> {
    client
        .read_entity_state::<Vec<String>>(&cell(key))
        .await
        .unwrap()
        .unwrap_or_default()
}

/// Between `enter:X` and `exit:X` only X's entries appear.
fn assert_no_interleaving(key: &str, log: &[String]) {
    let mut inside: Option<&str> = None;
    for line in log {
        let (op, who) = line.split_once(':').unwrap();
        match (op, inside) {
            ("enter", None) => inside = Some(who),
            ("exit", Some(w)) if w == who => inside = None,
            (_, Some(w)) => {
                assert_eq!(w, who, "cell {key}: '{line}' inside {w}'s section: {log:?}")
            }
            (_, None) => {}
        }
    }
    assert!(
        inside.is_none(),
        "cell {key}: a section never exited: {log:?}"
    );
}

pub async fn sections(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    // Opposite orders over overlapping sets, all at once, while the client signals the cells.
    let sets: [&[&str]; 4] = [&["a", "b"], &["b", "a"], &["b", "c"], &["c", "a", "b"]];
    let mut ids = Vec::new();
    for round in 0..3 {
        for (i, set) in sets.iter().enumerate() {
            let who = format!("o{round}{i}");
            let keys: Vec<String> = set.iter().map(|s| (*s).to_owned()).collect();
            ids.push(client.start("Section", (who, keys)).await.unwrap());
        }
        for key in ["a", "b", "c"] {
            client
                .signal_entity(&cell(key), "touch", &"client")
                .await
                .unwrap();
        }
    }
    for id in &ids {
        let done = wait_done(&client, id, Duration::from_secs(120)).await;
        assert_eq!(
            done.row.status,
            OrchestrationStatus::Completed,
            "{id}: {:?}",
            done.row.failure
        );
        assert_eq!(
            done.output::<Option<String>>().unwrap(),
            Some(Some("EntityNotLocked".to_owned())),
            "a call outside the lock set is refused"
        );
    }
    // Every section's signals and the client's touches arrive; then check the order.
    for (key, sections) in [("a", 9), ("b", 12), ("c", 6)] {
        // Per section: enter, touch (call), touch (signal), exit; and 3 client touches.
        let want = sections * 4 + 3;
        let last = std::sync::Mutex::new(Vec::new());
        wait::until_async(
            &format!("cell {key} to log {want} entries"),
            || async {
                let log = log_of(&client, key).await;
                let done = log.len() == want;
                *last.lock().unwrap() = log;
                done
            },
            || async { last.lock().unwrap().clone() },
        )
        .await;
        assert_no_interleaving(key, &log_of(&client, key).await);
    }
    assert!(
        client.get_entity(&cell("outside")).await.unwrap().is_none(),
        "the refused call never reached its entity"
    );

    // Returning ends the section: a later request runs.
    let id = client.start("ReturnsInside", "d").await.unwrap();
    wait_done(&client, &id, Duration::from_secs(60)).await;
    client
        .signal_entity(&cell("d"), "touch", &"after")
        .await
        .unwrap();
    wait::until_async(
        "a request after the section",
        || async { log_of(&client, "d").await.len() == 2 },
        || async { log_of(&client, "d").await },
    )
    .await;
    assert!(client
        .get_entity(&cell("d"))
        .await
        .unwrap()
        .unwrap()
        .locked_by
        .is_none());

    // A holder inside its section: requests wait for it; clean-up leaves a live holder alone.
    let holder = client.start("HoldsForever", "e").await.unwrap();
    wait::until_async(
        "the lock to be taken",
        || async {
            client
                .get_entity(&cell("e"))
                .await
                .unwrap()
                .is_some_and(|m| m.locked_by.as_ref() == Some(&holder))
        },
        || async { client.get_entity(&cell("e")).await.unwrap() },
    )
    .await;
    client
        .signal_entity(&cell("e"), "touch", &"waiting")
        .await
        .unwrap();
    wait::until_async(
        "the signal to wait behind the lock",
        || async {
            client
                .get_entity(&cell("e"))
                .await
                .unwrap()
                .is_some_and(|m| m.queued == 1)
        },
        || async { client.get_entity(&cell("e")).await.unwrap() },
    )
    .await;
    let kept = client
        .clean_entities(&CleanEntities::default())
        .await
        .unwrap();
    assert_eq!(kept.locks_released, 0, "a live holder keeps its lock");
    // Terminated inside its section, the holder releases it (no clean-up needed).
    client.terminate(&holder, "stuck").await.unwrap();
    wait_done(&client, &holder, Duration::from_secs(60)).await;
    wait::until_async(
        "the waiting signal to run",
        || async { log_of(&client, "e").await == ["touch:waiting"] },
        || async {
            (
                log_of(&client, "e").await,
                client.get_entity(&cell("e")).await.unwrap(),
            )
        },
    )
    .await;
    worker.shutdown().await;
}
