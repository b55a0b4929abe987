//! Timers on Azure, whose queue delays are whole seconds: a timer's message is sent with its
//! delay rounded down to whole seconds and the worker waits the remainder, so a 1.5 s timer
//! fires no earlier than 1.5 s after it was created (and not a second late). Run with
//! `scripts/with-azurite.sh cargo test -p taskhub --test azure timers::`.

use std::time::Duration;

use crate::backends;
use crate::common::history::history_of;
use crate::common::wait_done;
use taskhub::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_of_one_and_a_half_seconds_fires_no_earlier() {
    let store = backends::azure_store(&backends::unique_hub_name()).await;
    let hub = TaskHub::open(store, backends::settings(backends::Backend::Azure))
        .await
        .unwrap();
    let mut reg = Registry::new();
    reg.orchestration("Nap", |ctx: OrchestrationContext, (): ()| async move {
        let before = ctx.now();
        ctx.sleep(Duration::from_millis(1_500)).await;
        let after = ctx.now();
        let ms = |t: std::time::SystemTime| Timestamp::from_system_time(t).as_millis();
        Ok::<_, OrchestrationError>((ms(before), ms(after)))
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    for _ in 0..3 {
        let id = client.start("Nap", ()).await.unwrap();
        let done = wait_done(&client, &id, Duration::from_secs(60)).await;
        assert_eq!(done.status(), OrchestrationStatus::Completed);
        let (before, after) = done.output::<(u64, u64)>().unwrap().unwrap();
        let history = history_of(&client, &id).await;
        let fired = history
            .iter()
            .find(|e| matches!(e.event, EventKind::TimerFired { .. }))
            .expect("the timer fired");
        assert!(
            after >= before + 1_500,
            "the turn that saw the timer ran {} ms after it was created",
            after - before
        );
        assert!(
            fired.timestamp.as_millis() >= before + 1_500,
            "TimerFired recorded {} ms after the timer was created",
            fired.timestamp.as_millis() - before
        );
    }
    worker.shutdown().await;
}
