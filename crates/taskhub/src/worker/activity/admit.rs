//! The first step of a work item's run: admitting it (dead-letter what cannot run, decode it,
//! leave out a copy of one that runs or ran here), and what an admitted work item is
//! ([`Admitted`], [`Task`]), which the later steps (`execute`, `report`) read.

use taskhub_core::{EventKind, ExecutionId, Message, Payload, Tags};
use taskhub_storage::{Dequeued, QueueName};

use crate::worker::lifecycle::{decode, poison};
use crate::worker::shared::run_ledger::{self, RunMark};
use crate::worker::shared::Shared;

/// The activity a work item schedules, as its `TaskScheduled` event names it.
pub(super) struct Task {
    pub task_id: u64,
    pub name: String,
    pub version: Option<String>,
    pub input: Payload,
    pub attempt: u32,
    pub tags: Tags,
}

/// A work item admitted to run: decoded, screened, and in flight.
pub(super) struct Admitted {
    /// The work item as dequeued.
    pub m: Dequeued,
    /// Its message (addressing the orchestration that scheduled it).
    pub message: Message,
    pub task: Task,
    pub execution: ExecutionId,
    /// Its mark in the run ledger.
    pub mark: RunMark,
    /// Its in-flight entry (see `Lifecycle::take_off`).
    pub flight: u64,
}

/// Admits a work item: dead-letters one delivered too often, malformed or not an activity's;
/// gives back one whose large input cannot be read now; drops a copy of one this worker runs
/// or ran (see `run_ledger`). `None`: it does not run (now).
pub(super) async fn admit(shared: &Shared, m: Dequeued) -> Option<Admitted> {
    let queue = QueueName::WorkItems;
    let settings = shared.hub.settings();
    if m.dequeue_count > settings.max_dequeue_count {
        let reason = poison::too_many_deliveries(m.dequeue_count, settings.max_dequeue_count);
        poison::dead_letter(&shared.hub, &shared.lifecycle, queue, &m, reason).await;
        return None;
    }
    let message = decode::decoded(&shared.hub, &shared.lifecycle, queue, &m).await?;
    let (task, execution) = match task_of(&message) {
        Ok(task) => task,
        Err(reason) => {
            poison::dead_letter(&shared.hub, &shared.lifecycle, queue, &m, reason).await;
            return None;
        }
    };
    // A copy of a work item that runs here now, or whose result is recorded, does not run.
    let runs = &shared.watches.runs;
    let mark = run_ledger::screen(runs, &shared.hub, &shared.lifecycle, &m, &message.id).await?;
    let flight = shared.lifecycle.take_off(queue, m.receipt.clone());
    Some(Admitted {
        m,
        message,
        task,
        execution,
        mark,
        flight,
    })
}

/// The activity a work item schedules and its execution, or why it is not a work item.
fn task_of(message: &Message) -> Result<(Task, ExecutionId), String> {
    let EventKind::TaskScheduled {
        task_id,
        name,
        version,
        input,
        attempt,
        tags,
    } = &message.event
    else {
        let what = message.event.type_name();
        return Err(format!("not an activity work item: {what}"));
    };
    let Some(execution) = message.execution_id.clone() else {
        return Err("work item has no execution ID".into());
    };
    let task = Task {
        task_id: *task_id,
        name: name.clone(),
        version: version.clone(),
        input: input.clone(),
        attempt: *attempt,
        tags: tags.clone(),
    };
    Ok((task, execution))
}
