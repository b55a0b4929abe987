//! The runtime's metric records, one small function per instrumentation point. With no
//! recorder installed each is the `metrics` facade's no-op.

use std::time::Duration;

use metrics::{counter, gauge, histogram};
use taskhub_storage::QueueName;

use super::names;

/// A turn was committed.
pub(crate) fn turn(orchestration: &str) {
    counter!(names::TURNS, "orchestration" => orchestration.to_owned()).increment(1);
}

/// A failed execution of `orchestration` was rewound (its checkpoint committed).
pub(crate) fn rewind(orchestration: &str) {
    counter!(names::REWINDS, "orchestration" => orchestration.to_owned()).increment(1);
}

/// A checkpoint commit took `took`.
pub(crate) fn checkpoint(took: Duration) {
    histogram!(names::CHECKPOINT_DURATION).record(took.as_secs_f64());
}

/// An activity run started.
pub(crate) fn activity_started(activity: &str) {
    counter!(names::ACTIVITIES_STARTED, "activity" => activity.to_owned()).increment(1);
}

/// An activity run ended after `took`, with a result (`ok`) or a failure.
pub(crate) fn activity_finished(activity: &str, ok: bool, took: Duration) {
    let name = if ok {
        names::ACTIVITIES_COMPLETED
    } else {
        names::ACTIVITIES_FAILED
    };
    counter!(name, "activity" => activity.to_owned()).increment(1);
    histogram!(names::ACTIVITY_DURATION, "activity" => activity.to_owned())
        .record(took.as_secs_f64());
}

/// A message of `queue` went to the dead-letter store.
pub(crate) fn dead_letter(queue: QueueName) {
    counter!(names::DEAD_LETTERS, "queue" => queue.to_string()).increment(1);
}

/// A session entered (`true`) or left memory.
pub(crate) fn session(entered: bool) {
    let g = gauge!(names::SESSIONS);
    if entered {
        g.increment(1.0);
    } else {
        g.decrement(1.0);
    }
}

/// Sessions that left memory together (a dropped worker).
pub(crate) fn sessions_left(count: usize) {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a gauge; counts stay far below 2^52"
    )]
    gauge!(names::SESSIONS).decrement(count as f64);
}

/// A worker began processing `partition` (`new_lease`: under an epoch it did not process it
/// under before) or stopped.
pub(crate) fn lease(partition: u32, held: bool, new_lease: bool) {
    let g = gauge!(names::LEASES_HELD);
    if held {
        g.increment(1.0);
    } else {
        g.decrement(1.0);
    }
    if new_lease {
        counter!(names::EPOCH_CHANGES, "partition" => partition.to_string()).increment(1);
    }
}

/// A queue's sampled length and oldest-message age.
pub(crate) fn queue(queue: QueueName, length: u64, oldest_age: Duration) {
    let label = queue.to_string();
    #[expect(
        clippy::cast_precision_loss,
        reason = "a gauge; lengths stay far below 2^52"
    )]
    gauge!(names::QUEUE_DEPTH, "queue" => label.clone()).set(length as f64);
    gauge!(names::QUEUE_OLDEST_AGE, "queue" => label).set(oldest_age.as_secs_f64());
}
