//! The tally fixture of the entity tests: `Tally` entities that count and sum the numbers
//! they are sent, some relayed by another tally (across partitions), and `Caller`
//! orchestrations that call them. Each number is applied once exactly when the totals over all
//! tallies equal [`Tallies::expected`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use taskhub::{
    EntityContext, EntityError, EntityId, InstanceId, OrchestrationContext, OrchestrationError,
    Registry, TaskHubClient,
};

/// A tally's state.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// How many numbers it applied.
    pub count: u64,
    /// Their sum.
    pub sum: u64,
}

/// The shape of one run.
#[derive(Debug, Clone, Copy)]
pub struct Tallies {
    /// How many tallies (`Tally@t0` ...).
    pub entities: u64,
    /// How many numbers each tally is sent by signal (half of them relayed).
    pub signals: u64,
    /// How many `Caller` orchestrations.
    pub callers: u64,
    /// How many calls each caller makes.
    pub calls: u64,
    /// A relayed number goes from tally `k` to tally `k + relay_step`.
    pub relay_step: u64,
    /// The signalled numbers are `signal_base + tally * 1000 + i`.
    pub signal_base: u64,
    /// How long each operation takes (so a batch is under way when a kill lands).
    pub op_delay: Duration,
    /// The durable sleep of a caller after each call.
    pub call_pause: Duration,
}

/// Tally `k`'s id.
pub fn tally(k: u64) -> EntityId {
    EntityId::new("Tally", format!("t{k}")).unwrap()
}

impl Tallies {
    /// Registers the `Tally` entity and the `Caller` orchestration in `reg`.
    pub fn register(self, reg: &mut Registry) {
        reg.entity("Tally", move |ctx: &mut EntityContext| {
            if !self.op_delay.is_zero() {
                std::thread::sleep(self.op_delay);
            }
            let mut t: Tally = ctx.get_state_or_default()?;
            let n: u64 = ctx.input()?;
            match ctx.operation_name() {
                "add" => {
                    t.count += 1;
                    t.sum += n;
                }
                // Passes the number on to another tally.
                "relay" => {
                    let key: u64 = ctx.entity_id().key()[1..].parse()?;
                    let to = tally((key + self.relay_step) % self.entities);
                    ctx.signal_entity(&to, "add", &n)?;
                }
                other => return Err(EntityError::new(format!("no operation {other}"))),
            }
            ctx.set_state(&t)?;
            Ok(t.count)
        });
        reg.orchestration(
            "Caller",
            move |ctx: OrchestrationContext, base: u64| async move {
                let mut answers = 0;
                for i in 0..self.calls {
                    let to = tally((base + i) % self.entities);
                    let _: u64 = ctx.call_entity(&to, "add", &(base * 100 + i)).await?;
                    if !self.call_pause.is_zero() {
                        ctx.sleep(self.call_pause).await;
                    }
                    answers += 1;
                }
                Ok::<_, OrchestrationError>(answers)
            },
        );
    }

    /// A registry with only the tally fixture.
    pub fn registry(self) -> Registry {
        let mut reg = Registry::new();
        self.register(&mut reg);
        reg
    }

    /// Sends round `i` of the signals: each tally's number `i`, directly when `i` is even,
    /// relayed by the tally `relay_step` before it when odd.
    pub async fn signal_round(self, client: &TaskHubClient, i: u64) {
        for e in 0..self.entities {
            let n = self.signal_base + e * 1_000 + i;
            if i.is_multiple_of(2) {
                client.signal_entity(&tally(e), "add", &n).await.unwrap();
            } else {
                let from = tally((e + self.entities - self.relay_step) % self.entities);
                client.signal_entity(&from, "relay", &n).await.unwrap();
            }
        }
    }

    /// Sends every round of the signals.
    pub async fn signal_all(self, client: &TaskHubClient) {
        for i in 0..self.signals {
            self.signal_round(client, i).await;
        }
    }

    /// Starts the callers (caller `c` of `1..=callers` with input `c * 1000`).
    pub async fn start_callers(self, client: &TaskHubClient) -> Vec<InstanceId> {
        let mut ids = Vec::new();
        for c in 1..=self.callers {
            ids.push(client.start("Caller", c * 1_000).await.unwrap());
        }
        ids
    }

    /// The (count, sum) over all tallies once every signal and call is applied once.
    pub fn expected(self) -> (u64, u64) {
        let mut t = (0, 0);
        for e in 0..self.entities {
            for i in 0..self.signals {
                t.0 += 1;
                t.1 += self.signal_base + e * 1_000 + i;
            }
        }
        for c in 1..=self.callers {
            for i in 0..self.calls {
                t.0 += 1;
                t.1 += c * 1_000 * 100 + i;
            }
        }
        t
    }

    /// The (count, sum) over all tallies now (a tally that cannot be read counts nothing).
    pub async fn totals(self, client: &TaskHubClient) -> (u64, u64) {
        let mut t = (0, 0);
        for k in 0..self.entities {
            if let Ok(Some(s)) = client.read_entity_state::<Tally>(&tally(k)).await {
                t.0 += s.count;
                t.1 += s.sum;
            }
        }
        t
    }

    /// Waits until at least `n` numbers are applied; returns how many were.
    pub async fn wait_for_applied(self, client: &TaskHubClient, n: u64) -> u64 {
        let last = std::sync::Mutex::new(0);
        crate::wait::until_async(
            &format!("{n} operations applied"),
            || async {
                let c = self.totals(client).await.0;
                *last.lock().unwrap() = c;
                c >= n
            },
            || async { *last.lock().unwrap() },
        )
        .await;
        let reached = *last.lock().unwrap();
        reached
    }
}
