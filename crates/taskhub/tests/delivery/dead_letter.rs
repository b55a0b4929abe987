//! Poison handling: a control message whose processing fails on every delivery (here, an
//! event for an instance whose stored history is corrupt) is retried until it has been
//! delivered more than `max_dequeue_count` times, then moved to the dead-letter store with its
//! reason and deleted from its queue: the loop stops, and the message can be inspected and
//! replayed.

use crate::common::*;
use taskhub::*;
use taskhub_storage::{QueueName, QueueStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_failing_every_delivery_is_dead_lettered_after_max_dequeue_count() {
    // Every turn loads the history, so what is broken below is met.
    let ManualSqliteHub {
        dir: _dir,
        path,
        clock,
        store,
        hub,
    } = manual_sqlite_hub("dead-letter").await;
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("Wait", ()).await.unwrap();
    wait::until(
        "the first turn",
        || worker.stats().turns == 1,
        || worker.stats(),
    )
    .await;

    // Corrupt one stored event of the instance.
    taskhub_sqlite::testing::corrupt_history_event(&path, &id, 1).unwrap();

    client.raise_event(&id, "go", &1u64).await.unwrap();
    // Each failed load gives the message back with a delay of one second: move time on until
    // the third delivery finds it over the threshold.
    let advancing = keep_advancing(clock.clone());
    wait::until(
        "the dead letter",
        || worker.stats().dead_lettered == 1,
        || worker.stats(),
    )
    .await;
    advancing.abort();
    let letters = client.list_dead_letters(None, 10).await.unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    let letter = &letters[0];
    assert_eq!(
        letter.queue,
        QueueName::Control(id.partition(hub.partition_count()))
    );
    assert_dead_at_third_delivery(letter);
    assert!(
        letter.body.contains("go"),
        "the letter keeps the message: {}",
        letter.body
    );

    // The loop stopped: the message left its queue (the count covers invisible messages
    // too, so no later delivery can happen), and the event was never applied.
    assert_eq!(store.stats(letter.queue).await.unwrap().length, 0);
    assert_eq!(worker.stats().dead_lettered, 1);
    assert_eq!(worker.stats().turns, 1, "the event was never applied");
    worker.shutdown().await;
}
