//! Property: re-running any recorded history reproduces exactly the same events, actions and
//! outputs. Random programs (activities, fan-outs, timers, events, races, sub-orchestrations,
//! status, GUIDs, sends) run under random delivery orders and batchings; then every recorded
//! turn is re-run from a fresh replay of the history before it and must match byte for byte.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use taskhub_core::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
enum Step {
    Activity(u8),
    FanOut(u8),
    Timer(u8),
    WaitEvent(u8),
    RaceTimerEvent(u8),
    Sub(u8),
    Status(u8),
    Guid,
    Send(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..3).prop_map(Step::Activity),
        (1u8..6).prop_map(Step::FanOut),
        (1u8..100).prop_map(Step::Timer),
        (0u8..2).prop_map(Step::WaitEvent),
        (0u8..2).prop_map(Step::RaceTimerEvent),
        (0u8..3).prop_map(Step::Sub),
        any::<u8>().prop_map(Step::Status),
        Just(Step::Guid),
        (0u8..3).prop_map(Step::Send),
    ]
}

async fn program(
    ctx: OrchestrationContext,
    steps: Vec<Step>,
) -> Result<Vec<String>, OrchestrationError> {
    let mut out = Vec::new();
    for s in steps {
        let r = match s {
            Step::Activity(n) => format!(
                "{:?}",
                ctx.call_activity::<_, u64>(&format!("A{n}"), n).await
            ),
            Step::FanOut(n) => {
                let all = when_all((0..n).map(|i| ctx.call_activity::<_, u64>("A0", i))).await;
                format!("{all:?}")
            }
            Step::Timer(s) => {
                ctx.sleep(Duration::from_secs(u64::from(s))).await;
                "timer".into()
            }
            Step::WaitEvent(n) => {
                format!("{:?}", ctx.wait_for_event::<u64>(&format!("E{n}")).await)
            }
            Step::RaceTimerEvent(n) => {
                match when_any2(
                    ctx.sleep(Duration::from_secs(30)),
                    ctx.wait_for_event::<u64>(&format!("E{n}")),
                )
                .await
                {
                    Either::Left(()) => "race: timer".into(),
                    Either::Right(v) => format!("race: {v:?}"),
                }
            }
            Step::Sub(n) => format!(
                "{:?}",
                ctx.call_sub_orchestration::<_, u64>("Child", n).await
            ),
            Step::Status(v) => {
                ctx.set_custom_status(&v)?;
                format!("status {v}")
            }
            Step::Guid => ctx.new_guid().to_string(),
            Step::Send(n) => {
                ctx.raise_event(&InstanceId::new(format!("peer{n}")).unwrap(), "hi", &n)?;
                "sent".into()
            }
        };
        out.push(r);
    }
    Ok(out)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Runs the program to completion under random scheduling; returns the driver and the
/// actions of each recorded turn, keyed by the index of its `OrchestratorStarted`.
fn simulate(steps: &[Step], seed: u64) -> (Driver, Vec<(usize, Vec<Action>)>) {
    let mut reg = Registry::new();
    reg.orchestration("Prog", program);
    let mut d = Driver::new(reg, "prog")
        .activity("A0", |i, _| {
            Ok(payload(serde_json::from_str::<u64>(i).unwrap() * 3))
        })
        .activity("A1", |_, _| {
            Err(FailureDetails::new("Nope", "A1 always fails"))
        })
        .activity("A2", |i, _| {
            Ok(payload(serde_json::from_str::<u64>(i).unwrap() + 100))
        });
    d.replay_check = false;
    let mut rng = Rng(seed);
    let mut turns = Vec::new();
    let mut pending_subs: Vec<u64> = Vec::new();
    let record = |d: &mut Driver, turns: &mut Vec<(usize, Vec<Action>)>, msgs: Vec<Message>| {
        let before = d.history.len();
        let r = d.turn(msgs);
        if !r.new_events.is_empty() {
            turns.push((before, r.actions.clone()));
        }
        r
    };
    let r = {
        let m = d.msg(started(
            "Prog",
            payload(steps),
            ExecutionId::new("exec-1").unwrap(),
        ));
        record(&mut d, &mut turns, vec![m])
    };
    let collect_subs = |r: &TurnResult, subs: &mut Vec<u64>| {
        for a in &r.actions {
            if let Action::StartSubOrchestration { task_id, .. } = a {
                subs.push(*task_id);
            }
        }
    };
    collect_subs(&r, &mut pending_subs);
    for _ in 0..500 {
        if d.session.is_finished() {
            break;
        }
        let mut msgs = Vec::new();
        match rng.below(4) {
            0 if !d.inbox.is_empty() => {
                let k = 1 + rng.below(d.inbox.len() as u64) as usize;
                for _ in 0..k {
                    let i = rng.below(d.inbox.len() as u64) as usize;
                    msgs.extend(d.inbox.remove(i));
                }
            }
            1 if !d.timers.is_empty() => {
                let i = rng.below(d.timers.len() as u64) as usize;
                let (task_id, fire_at) = d.timers.remove(i);
                msgs.push(d.msg(EventKind::TimerFired { task_id, fire_at }));
            }
            2 if !pending_subs.is_empty() => {
                let task_id = pending_subs.remove(0);
                msgs.push(d.msg(EventKind::SubOrchestrationCompleted {
                    task_id,
                    result: payload(task_id),
                }));
            }
            _ => {
                let n = rng.below(2);
                msgs.push(d.msg(EventKind::EventRaised {
                    name: format!("E{n}"),
                    input: payload(rng.below(1000)),
                }));
            }
        }
        let r = record(&mut d, &mut turns, msgs);
        collect_subs(&r, &mut pending_subs);
    }
    (d, turns)
}

fn check_reruns(d: &Driver, turns: &[(usize, Vec<Action>)]) {
    let reg: Arc<Registry> = d.registry.clone();
    let bounds: Vec<usize> = turns
        .iter()
        .map(|(i, _)| *i)
        .chain([d.history.len()])
        .collect();
    for (k, (start, actions)) in turns.iter().enumerate() {
        let end = bounds[k + 1];
        let recorded = &d.history[*start..end];
        // The messages of this turn are the recorded events that came from messages.
        let msgs: Vec<Message> = recorded
            .iter()
            .filter_map(|e| {
                let id = e.message_id.clone()?;
                let mut m = Message::from_client(d.id.clone(), e.event.clone(), e.timestamp);
                m.id = id;
                Some(m)
            })
            .collect();
        let mut s = OrchestrationSession::load(reg.clone(), d.id.clone(), &d.history[..*start]);
        let r = s.turn(TurnInput {
            now: recorded[0].timestamp,
            messages: msgs,
        });
        assert_eq!(
            r.new_events, recorded,
            "turn at event {start} re-ran differently"
        );
        assert_eq!(
            &r.actions, actions,
            "turn at event {start} produced different actions"
        );
    }
    // A full replay reaches the same status and output without faults.
    let s = OrchestrationSession::load(reg, d.id.clone(), &d.history);
    assert_eq!(s.status(), d.session.status());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn rerunning_recorded_history_reproduces_events_actions_and_output(
        steps in proptest::collection::vec(step(), 1..12),
        seed in any::<u64>(),
    ) {
        let (d, turns) = simulate(&steps, seed);
        check_reruns(&d, &turns);
        if d.session.status() == OrchestrationStatus::Completed {
            let out: Vec<String> = d.output();
            prop_assert_eq!(out.len(), steps.len());
        }
    }
}
