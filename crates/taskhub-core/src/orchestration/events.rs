//! The future of a wait for an external event.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;

use crate::orchestration::error::TaskError;
use crate::orchestration::state::{lock, SharedState};

/// Resolves with the data of the next external event of a name. Events raised before the wait
/// are buffered and delivered in arrival order; several waiters of one name are served in the
/// order they started waiting. Dropping the future before it resolves gives up the place in
/// line, and an event it already received goes back to the buffer.
#[must_use = "an event wait does nothing useful unless awaited"]
pub struct EventFuture<T> {
    state: SharedState,
    waiter: u64,
    name: String,
    done: bool,
    _out: PhantomData<fn() -> T>,
}

impl<T> EventFuture<T> {
    pub(crate) fn new(state: SharedState, name: &str) -> Self {
        let waiter = lock(&state).mailbox.register(name);
        Self {
            state,
            waiter,
            name: name.to_owned(),
            done: false,
            _out: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> Future for EventFuture<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut st = lock(&this.state);
        let Some(w) = st.mailbox.waiters.get_mut(&this.waiter) else {
            return Poll::Pending;
        };
        match w.value.take() {
            Some(value) => {
                st.mailbox.waiters.remove(&this.waiter);
                drop(st);
                this.done = true;
                Poll::Ready(
                    value
                        .parse::<T>(&format!("data of event '{}'", this.name))
                        .map_err(TaskError::Payload),
                )
            }
            None => {
                w.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for EventFuture<T> {
    fn drop(&mut self) {
        if !self.done {
            lock(&self.state).mailbox.unregister(self.waiter);
        }
    }
}
