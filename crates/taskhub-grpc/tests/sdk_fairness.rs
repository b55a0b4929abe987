//! Fairness between instances whose turns go to SDK workers: an orchestration that floods
//! itself with events and leaves its next turn unanswered cannot keep other instances'
//! turns from starting (issue 33's probe: 1,000 events to itself). The runtime holds what
//! comes for an instance that waits on the executor to its share of the prefetch buffer
//! (`worker/shared/sessions.rs`); the rest goes back to its queue for a while. Each other instance's
//! turn must start within [`USUAL_LATENCY`] of its start, on the memory backend and on SQLite;
//! without the rule (the share set to the whole buffer) they wait until the flood's turn is
//! taken back, minutes later.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::time::{Duration, Instant};

use common::calls::start;
use common::sdk::{answer, turn_of, FakeWorker, SdkServer};
use common::Backend;
use taskhub_grpc::proto::{
    orchestrator_action::OrchestratorActionType as A, OrchestrationInstance, OrchestratorAction,
    SendEventAction, WorkItem,
};
use taskhub_grpc::DispatcherSettings;

/// How many events the flooding orchestration sends itself in one turn.
const FLOOD: i32 = 1_000;

fn event_to(instance: &str, id: i32) -> OrchestratorAction {
    OrchestratorAction {
        id,
        orchestrator_action_type: Some(A::SendEvent(SendEventAction {
            instance: Some(OrchestrationInstance {
                instance_id: instance.to_owned(),
                execution_id: None,
            }),
            name: "Flood".into(),
            data: Some(id.to_string()),
        })),
    }
}

/// How soon another instance's turn starts after its start while the flood's turn is out:
/// a start in this process wakes the poller at once, so a healthy run takes well under a
/// second, even on a loaded 2-core machine; the unfair behaviour is a wait of minutes (until
/// the flood's turn is taken back).
const USUAL_LATENCY: Duration = Duration::from_secs(10);

/// The next orchestration turn (health pings skipped), within a generous deadline.
async fn next_turn(w: &mut FakeWorker) -> WorkItem {
    w.next(Duration::from_secs(60))
        .await
        .expect("a turn within 60 s")
}

common::on_backends!(
    flood_and_others,
    an_instance_that_floods_itself_does_not_hold_back_the_others_turns_on_memory = Memory,
    an_instance_that_floods_itself_does_not_hold_back_the_others_turns_on_sqlite = Sqlite
);

async fn flood_and_others(backend: Backend) {
    // The unanswered turn would be taken back only after an hour (and the runtime's own
    // limit, half the control queue's visibility timeout, is minutes): whatever the others
    // get, they get while the flooding instance's turn is still out.
    let mut settings = DispatcherSettings::default();
    settings.orchestration_timeout = Duration::from_secs(3600);
    let server = SdkServer::start_with_settings(backend, taskhub::Registry::new(), settings).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Flooder", "flood", None).await;
    let first = next_turn(&mut w).await;
    assert_eq!(turn_of(&first).instance_id, "flood");
    let events = (0..FLOOD).map(|n| event_to("flood", n)).collect();
    w.answer_turn(answer(&first, events)).await.unwrap();
    // Its next turn (with some of the events) is left unanswered.
    let held = next_turn(&mut w).await;
    assert_eq!(turn_of(&held).instance_id, "flood");

    // Others start one after the other; each gets its turn while the flood's is out, within
    // the usual latency.
    for n in 0..3 {
        let id = format!("calm-{n}");
        let started = Instant::now();
        start(&mut c, "Calm", &id, None).await;
        let turn = w
            .next(USUAL_LATENCY)
            .await
            .unwrap_or_else(|| panic!("{backend:?}: no turn for {id} within {USUAL_LATENCY:?}"));
        let latency = started.elapsed();
        assert!(
            latency <= USUAL_LATENCY,
            "{backend:?}: {id}'s turn started after {latency:?}"
        );
        assert_eq!(
            turn_of(&turn).instance_id,
            id,
            "the flooding instance has one turn at a time, and it is out"
        );
        w.answer_turn(answer(&turn, Vec::new())).await.unwrap();
    }
    // The flood's turn was never taken back meanwhile: its answer is still taken.
    w.client
        .complete_orchestrator_task(answer(&held, Vec::new()))
        .await
        .expect("the held turn is still out under its token");
    server.stop().await;
}
