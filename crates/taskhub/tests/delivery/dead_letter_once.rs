//! Dead-lettering is one step (issue 10): a message is never dead-lettered twice, even when
//! the store fails between "store the letter" and "delete the message" or loses the answer
//! to the move.

use std::sync::Arc;
use std::time::Duration;

use crate::common::queues::enqueue_now;
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, MemoryStore, Op, Trigger};
use taskhub_storage::{DeadLetterStore, QueueName, QueueStore, StorageError, SystemClock};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_unanswered_dead_letter_move_is_not_repeated() {
    let unavailable = || StorageError::Unavailable("injected".into());
    // The first delete fails (a crash between adding a letter and deleting the message), and
    // the first move is carried out but its answer is lost.
    let plan = FaultPlan::none()
        .fail(Trigger::nth_of(Op::Delete, 1), unavailable())
        .lose_response(Trigger::nth_of(Op::MoveToDeadLetters, 1), unavailable());
    let store = Arc::new(MemoryStore::with_faults(Arc::new(SystemClock::new()), plan));
    let settings = Settings {
        partition_count: 1,
        // A message left in the queue comes back quickly.
        control_queue_visibility_timeout: Duration::from_millis(300),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, Registry::new()).await.unwrap();
    let queue = QueueName::Control(0);
    enqueue_now(store.as_ref(), queue, "not a message".into()).await;

    // The message leaves its queue once it has been dead-lettered for good.
    tokio::time::timeout(Duration::from_secs(20), async {
        while store.stats(queue).await.unwrap().length > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the malformed message leaves its queue");
    let letters = store.list_dead_letters(None, 10).await.unwrap();
    assert_eq!(letters.len(), 1, "one letter per message: {letters:?}");
    assert!(letters[0].reason.contains("malformed"), "{letters:?}");
    worker.shutdown().await;
}
