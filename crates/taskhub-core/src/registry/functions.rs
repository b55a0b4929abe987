//! What the registry accepts as an orchestration or an activity: a function of its context and
//! a typed input returning a future of a serializable output or an error, named once here for
//! every registration method.

use std::future::Future;

use serde::Serialize;

/// The future a registered function returns: its output or an error `E`
/// ([`OrchestrationError`](crate::OrchestrationError) or [`ActivityError`](crate::ActivityError)).
pub trait Outcome<E>: Future<Output = Result<Self::Value, E>> + Send + 'static {
    /// The function's output.
    type Value: Serialize + 'static;
}

impl<E, O, T> Outcome<E> for T
where
    O: Serialize + 'static,
    T: Future<Output = Result<O, E>> + Send + 'static,
{
    type Value = O;
}

/// A registered function: its context `C` and an input `I` to an [`Outcome`] with error `E`.
pub trait RegisteredFn<C, I, E>:
    Fn(C, I) -> <Self as RegisteredFn<C, I, E>>::Fut + Send + Sync + 'static
{
    /// The future it returns.
    type Fut: Outcome<E>;
}

impl<C, I, E, F, Fut> RegisteredFn<C, I, E> for F
where
    F: Fn(C, I) -> Fut + Send + Sync + 'static,
    Fut: Outcome<E>,
{
    type Fut = Fut;
}
