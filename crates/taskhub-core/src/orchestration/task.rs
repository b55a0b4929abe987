//! Futures for durable tasks: activities, sub-orchestrations and timers.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;

use crate::error::CoreError;
use crate::orchestration::error::TaskError;
use crate::orchestration::state::{lock, SharedState, TaskOutcome};

/// Polls the open task `task_id`: takes its outcome if it has one, else stores the waker.
fn poll_slot(state: &SharedState, task_id: u64, cx: &Context<'_>) -> Poll<TaskOutcome> {
    let mut st = lock(state);
    let Some(slot) = st.open.get_mut(&task_id) else {
        // The slot is removed only after its outcome was taken; a second poll after
        // completion is a misuse of the future, reported as a failure rather than a panic.
        return Poll::Ready(Err(crate::FailureDetails::new(
            "FuturePolledAfterCompletion",
            format!("task {task_id} was awaited again after it completed"),
        )));
    };
    if let Some(outcome) = slot.outcome.take() {
        st.open.remove(&task_id);
        return Poll::Ready(outcome);
    }
    slot.waker = Some(cx.waker().clone());
    Poll::Pending
}

/// Marks a still-open task as abandoned when its future is dropped.
fn abandon(state: &SharedState, task_id: u64) {
    let mut st = lock(state);
    if let Some(slot) = st.open.get_mut(&task_id) {
        if slot.outcome.is_some() {
            st.open.remove(&task_id);
        } else {
            slot.abandoned = true;
            slot.waker = None;
        }
    }
}

/// The result of an activity or sub-orchestration, deserialized into `O`.
#[must_use = "a durable task does nothing useful unless awaited"]
pub struct TaskFuture<O> {
    inner: TaskInner,
    _out: PhantomData<fn() -> O>,
}

enum TaskInner {
    Scheduled {
        state: SharedState,
        task_id: u64,
        kind: &'static str,
        name: String,
        done: bool,
    },
    Failed(Option<CoreError>),
}

impl<O> TaskFuture<O> {
    pub(crate) fn scheduled(
        state: SharedState,
        task_id: u64,
        kind: &'static str,
        name: String,
    ) -> Self {
        Self {
            inner: TaskInner::Scheduled {
                state,
                task_id,
                kind,
                name,
                done: false,
            },
            _out: PhantomData,
        }
    }

    pub(crate) fn failed(err: CoreError) -> Self {
        Self {
            inner: TaskInner::Failed(Some(err)),
            _out: PhantomData,
        }
    }

    /// The task ID, if the task was scheduled.
    #[must_use]
    pub fn task_id(&self) -> Option<u64> {
        match &self.inner {
            TaskInner::Scheduled { task_id, .. } => Some(*task_id),
            TaskInner::Failed(_) => None,
        }
    }
}

impl<O: DeserializeOwned> Future for TaskFuture<O> {
    type Output = Result<O, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.inner {
            TaskInner::Failed(err) => Poll::Ready(Err(TaskError::Payload(err.take().unwrap_or(
                CoreError::Malformed {
                    what: "task",
                    detail: "polled after completion".into(),
                },
            )))),
            TaskInner::Scheduled {
                state,
                task_id,
                kind,
                name,
                done,
            } => {
                let outcome = match poll_slot(state, *task_id, cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(o) => o,
                };
                *done = true;
                Poll::Ready(match outcome {
                    Ok(payload) => payload
                        .parse::<O>(&format!("output of {kind} '{name}'"))
                        .map_err(TaskError::Payload),
                    Err(failure) => Err(TaskError::Failed {
                        kind,
                        name: name.clone(),
                        failure,
                    }),
                })
            }
        }
    }
}

impl<O> Drop for TaskFuture<O> {
    fn drop(&mut self) {
        if let TaskInner::Scheduled {
            state,
            task_id,
            done: false,
            ..
        } = &self.inner
        {
            abandon(state, *task_id);
        }
    }
}

/// A durable timer; resolves when the timer fires.
#[must_use = "a durable timer does nothing useful unless awaited"]
pub struct TimerFuture {
    state: SharedState,
    task_id: u64,
    done: bool,
}

impl TimerFuture {
    pub(crate) fn new(state: SharedState, task_id: u64) -> Self {
        Self {
            state,
            task_id,
            done: false,
        }
    }
}

impl Future for TimerFuture {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match poll_slot(&this.state, this.task_id, cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(_) => {
                this.done = true;
                Poll::Ready(())
            }
        }
    }
}

impl Drop for TimerFuture {
    fn drop(&mut self) {
        if !self.done {
            abandon(&self.state, self.task_id);
        }
    }
}
