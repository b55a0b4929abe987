//! The body of the entity end-to-end test (`entities.rs`, on every backend).
//! Included as `#[path = "common/entities_api_suite.rs"]`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use taskhub::*;
use taskhub_storage::TaskHubStore;

use crate::common::*;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Account {
    balance: i64,
}

impl Account {
    fn deposit(&mut self, _ctx: &mut EntityContext, n: i64) -> Result<i64, EntityError> {
        self.balance += n;
        Ok(self.balance)
    }

    /// Changes the state, signals the audit log, then fails when the balance would go
    /// negative: the change and the signal must both be rolled back.
    fn withdraw(&mut self, ctx: &mut EntityContext, n: i64) -> Result<i64, EntityError> {
        self.balance -= n;
        ctx.signal_entity(&audit(), "append", &format!("withdraw {n}"))?;
        if self.balance < 0 {
            return Err(
                EntityError::new(format!("insufficient funds for {n}")).with_type("Overdrawn")
            );
        }
        Ok(self.balance)
    }

    fn balance(&mut self, _ctx: &mut EntityContext, (): ()) -> Result<i64, EntityError> {
        Ok(self.balance)
    }
}

fn audit() -> EntityId {
    EntityId::new("Log", "audit").unwrap()
}

fn counter(key: &str) -> EntityId {
    EntityId::new("Counter", key).unwrap()
}

pub fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Counter", |ctx: &mut EntityContext| {
        let mut value: i64 = ctx.get_state_or_default()?;
        match ctx.operation_name() {
            "add" => value += ctx.input::<i64>()?,
            "get" => {}
            // Changes the state, then fails: the change must be rolled back.
            "add_then_fail" => {
                ctx.set_state(&(value + ctx.input::<i64>()?))?;
                return Err(EntityError::new("failed after changing the state"));
            }
            "delete" => {
                ctx.delete_state();
                return Ok(value);
            }
            // Adds to another counter and starts an orchestration that calls a third one.
            "fan" => {
                let n: i64 = ctx.input()?;
                ctx.signal_entity(&counter("fanned"), "add", &n)?;
                ctx.start_orchestration("CallCounter", &("started", n))?;
            }
            other => return Err(EntityError::new(format!("no operation '{other}'"))),
        }
        ctx.set_state(&value)?;
        Ok(value)
    });
    reg.entity("Log", |ctx: &mut EntityContext| {
        let mut lines: Vec<String> = ctx.get_state_or_default()?;
        if ctx.operation_name() == "append" {
            lines.push(ctx.input()?);
        }
        ctx.set_state(&lines)?;
        Ok(lines.len())
    });
    reg.entity_type(
        "Account",
        EntityType::<Account>::new()
            .operation("deposit", Account::deposit)
            .operation("withdraw", Account::withdraw)
            .operation("balance", Account::balance),
    );
    reg.orchestration(
        "CallCounter",
        |ctx: OrchestrationContext, (key, n): (String, i64)| async move {
            let id = EntityId::new("Counter", key)?;
            let after: i64 = ctx.call_entity(&id, "add", &n).await?;
            Ok::<_, OrchestrationError>(after)
        },
    );
    // Withdraws too much, then deposits: reports the error it got and the final balance.
    reg.orchestration(
        "Overdraw",
        |ctx: OrchestrationContext, key: String| async move {
            let id = EntityId::new("Account", key)?;
            let _: i64 = ctx.call_entity(&id, "deposit", &10).await?;
            let failed = match ctx.call_entity::<_, i64>(&id, "withdraw", &25).await {
                Ok(b) => format!("unexpected balance {b}"),
                Err(e) => format!(
                    "{} {} {}",
                    e.error_type().unwrap_or("?"),
                    e.message().unwrap_or("?"),
                    e.task_name().unwrap_or("?")
                ),
            };
            let after: i64 = ctx.call_entity(&id, "withdraw", &4).await?;
            Ok::<_, OrchestrationError>((failed, after))
        },
    );
    // Signals `n` numbered appends to a log, as one sender.
    reg.orchestration(
        "Numbered",
        |ctx: OrchestrationContext, (log, tag, n): (String, String, u32)| async move {
            let id = EntityId::new("Log", log)?;
            for i in 0..n {
                ctx.signal_entity(&id, "append", &format!("{tag}:{i}"))?;
                if i % 10 == 9 {
                    // Spread the sends over several turns.
                    ctx.sleep(Duration::from_millis(1)).await;
                }
            }
            Ok::<_, OrchestrationError>(())
        },
    );
    reg
}

async fn state<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    client: &TaskHubClient,
    id: &EntityId,
) -> Option<T> {
    client.read_entity_state::<T>(id).await.unwrap()
}

async fn wait_state<T>(client: &TaskHubClient, id: &EntityId, want: T)
where
    T: serde::de::DeserializeOwned + std::fmt::Debug + PartialEq,
{
    let last = std::sync::Mutex::new(None);
    wait::until_async(
        &format!("{id} to reach {want:?}"),
        || async {
            let s: Option<T> = state(client, id).await;
            let done = s.as_ref() == Some(&want);
            *last.lock().unwrap() = Some(format!("{s:?}"));
            done
        },
        || async { last.lock().unwrap().clone() },
    )
    .await;
}

pub async fn everything(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    // Client signals, in order; a call from an orchestration sees them all.
    let c = counter("a");
    for n in 1..=50 {
        client.signal_entity(&c, "add", &n).await.unwrap();
    }
    wait_state(&client, &c, 1275i64).await;
    let id = client
        .start("CallCounter", ("a".to_owned(), 5i64))
        .await
        .unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(done.output::<i64>().unwrap(), Some(1280));
    client
        .signal_entity(&c, "add_then_fail", &1000)
        .await
        .unwrap();
    let id = client
        .start("CallCounter", ("a".to_owned(), 5i64))
        .await
        .unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(
        done.output::<i64>().unwrap(),
        Some(1285),
        "the failed operation's state change was rolled back"
    );

    // A failed operation: state and signal rolled back, error at the caller, entity goes on.
    let id = client.start("Overdraw", "acct-1").await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(
        done.output::<(String, i64)>().unwrap(),
        Some((
            "Overdrawn insufficient funds for 25 @Account@acct-1.withdraw".to_owned(),
            6
        )),
        "{done:?}"
    );
    let acct = EntityId::new("Account", "acct-1").unwrap();
    assert_eq!(state::<Account>(&client, &acct).await.unwrap().balance, 6);
    wait_state(&client, &audit(), vec!["withdraw 4".to_owned()]).await;

    // An entity signals an entity and starts an orchestration (which calls a third).
    client.signal_entity(&c, "fan", &7i64).await.unwrap();
    wait_state(&client, &counter("fanned"), 7i64).await;
    wait_state(&client, &counter("started"), 7i64).await;

    // Per-sender order: two orchestrations and the client send numbered appends at once.
    let log = EntityId::new("Log", "order").unwrap();
    let a = client
        .start("Numbered", ("order".to_owned(), "a".to_owned(), 40u32))
        .await
        .unwrap();
    let b = client
        .start("Numbered", ("order".to_owned(), "b".to_owned(), 40u32))
        .await
        .unwrap();
    for i in 0..40 {
        client
            .signal_entity(&log, "append", &format!("c:{i}"))
            .await
            .unwrap();
    }
    for id in [a, b] {
        wait_done(&client, &id, Duration::from_secs(60)).await;
    }
    let last = std::sync::Mutex::new(0);
    wait::until_async(
        "120 appends",
        || async {
            let n = state::<Vec<String>>(&client, &log)
                .await
                .map_or(0, |v| v.len());
            *last.lock().unwrap() = n;
            n == 120
        },
        || async { *last.lock().unwrap() },
    )
    .await;
    let lines: Vec<String> = state(&client, &log).await.unwrap();
    for tag in ["a", "b", "c"] {
        let seq: Vec<u32> = lines
            .iter()
            .filter_map(|l| l.strip_prefix(&format!("{tag}:")))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(seq, (0..40).collect::<Vec<_>>(), "sender {tag}: {lines:?}");
    }

    // Listing by name, paged; delete makes the entity absent; clean-up removes its row.
    for k in 0..7 {
        client
            .signal_entity(
                &EntityId::new("Counter", format!("page-{k}")).unwrap(),
                "add",
                &1,
            )
            .await
            .unwrap();
    }
    wait_state(&client, &EntityId::new("Counter", "page-6").unwrap(), 1i64).await;
    for k in 0..6 {
        wait_state(
            &client,
            &EntityId::new("Counter", format!("page-{k}")).unwrap(),
            1i64,
        )
        .await;
    }
    let mut query = EntityQuery {
        name: Some("Counter".to_owned()),
        page_size: 3,
        ..EntityQuery::default()
    };
    let mut listed = Vec::new();
    loop {
        let page = client.list_entities(&query).await.unwrap();
        assert!(page.entities.len() <= 3);
        listed.extend(page.entities.iter().map(|e| e.id.key().to_owned()));
        match page.continuation {
            Some(c) => query.continuation = Some(c),
            None => break,
        }
    }
    let mut expected: Vec<String> = ["a", "fanned", "started"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain((0..7).map(|k| format!("page-{k}")))
        .collect();
    expected.sort();
    assert_eq!(listed, expected);
    let gone = EntityId::new("Counter", "page-0").unwrap();
    client.delete_entity(&gone).await.unwrap();
    wait::until_async(
        "the deleted entity to have no state",
        || async { state::<i64>(&client, &gone).await.is_none() },
        || async {},
    )
    .await;
    let all = client
        .list_entities(&EntityQuery {
            name: Some("Counter".to_owned()),
            ..EntityQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(all.entities.len(), 9, "a deleted entity is not listed");
    let cleaned = client
        .clean_entities(&CleanEntities {
            min_idle: Duration::ZERO,
            ..CleanEntities::default()
        })
        .await
        .unwrap();
    assert_eq!(cleaned.removed, 1);
    assert!(client.get_entity(&gone).await.unwrap().is_none());
    worker.shutdown().await;
}
