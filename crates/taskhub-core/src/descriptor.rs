//! Typed descriptors: an activity or orchestration named together with its input and output
//! types, so that a caller and its callee cannot disagree on them.
//!
//! A descriptor is a constant. The registry takes it with the function
//! ([`Registry::register_activity`](crate::Registry::register_activity),
//! [`Registry::register_orchestration`](crate::Registry::register_orchestration)), orchestration
//! code calls through it ([`OrchestrationContext::call`](crate::OrchestrationContext::call),
//! [`call_sub`](crate::OrchestrationContext::call_sub)), and the client starts instances with it
//! (`TaskHubClient::start_typed` in the `taskhub` crate). Each of these checks the types against
//! the descriptor's, so a mismatch is a compile error instead of a payload error at run time. The
//! string API stays: a descriptor is only a name with types attached, and what is recorded in
//! history is the same.
//!
//! ```
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//! const GREET_ALL: OrchestrationRef<Vec<String>, Vec<String>> = OrchestrationRef::new("GreetAll");
//!
//! async fn greet_all(
//!     ctx: OrchestrationContext,
//!     names: Vec<String>,
//! ) -> Result<Vec<String>, OrchestrationError> {
//!     let mut out = Vec::new();
//!     for name in names {
//!         out.push(ctx.call(GREET, name).await?); // a `String` in, a `String` out
//!     }
//!     Ok(out)
//! }
//!
//! let mut registry = Registry::new();
//! registry
//!     .register_orchestration(GREET_ALL, greet_all)
//!     .register_activity(GREET, |_ctx, name: String| async move {
//!         Ok::<_, ActivityError>(format!("Hello {name}!"))
//!     });
//! assert_eq!(registry.activity_names(), ["Greet"]);
//! ```
//!
//! Passing the wrong input type does not compile:
//!
//! ```compile_fail,E0308
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//!
//! async fn wrong(ctx: OrchestrationContext, _: ()) -> Result<String, OrchestrationError> {
//!     Ok(ctx.call(GREET, 42_u32).await?) // GREET takes a String
//! }
//! ```
//!
//! (With a `String` it compiles: each `compile_fail` example here has such a twin, so it fails
//! for its type and nothing else.)
//!
//! ```
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//!
//! async fn right(ctx: OrchestrationContext, _: ()) -> Result<String, OrchestrationError> {
//!     Ok(ctx.call(GREET, 42_u32.to_string()).await?)
//! }
//! ```
//!
//! Nor does expecting another output type:
//!
//! ```compile_fail,E0308
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//!
//! async fn wrong(ctx: OrchestrationContext, name: String) -> Result<u32, OrchestrationError> {
//!     let n: u32 = ctx.call(GREET, name).await?; // GREET returns a String
//!     Ok(n)
//! }
//! ```
//!
//! ```
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//!
//! async fn right(ctx: OrchestrationContext, name: String) -> Result<String, OrchestrationError> {
//!     let n: String = ctx.call(GREET, name).await?;
//!     Ok(n)
//! }
//! ```
//!
//! Nor registering a function whose types differ from the descriptor's:
//!
//! ```compile_fail,E0631
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//!
//! let mut registry = Registry::new();
//! registry.register_activity(GREET, |_ctx, n: u32| async move { Ok::<_, ActivityError>(n) });
//! ```
//!
//! ```
//! use taskhub_core::*;
//!
//! const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
//!
//! let mut registry = Registry::new();
//! registry.register_activity(GREET, |_ctx, n: String| async move { Ok::<_, ActivityError>(n) });
//! ```

use std::fmt;
use std::marker::PhantomData;

/// An activity's name together with its input type `I` and output type `O`.
///
/// Declare one as a constant and use it on both sides: register the activity with
/// [`Registry::register_activity`](crate::Registry::register_activity) and call it with
/// [`OrchestrationContext::call`](crate::OrchestrationContext::call). See the
/// [module docs](self).
pub struct ActivityRef<I, O> {
    name: &'static str,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O> ActivityRef<I, O> {
    /// The activity registered under `name`, taking `I` and returning `O`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            types: PhantomData,
        }
    }

    /// The activity's registered name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// An orchestration's name (and optionally version) together with its input type `I` and
/// output type `O`.
///
/// Register it with [`Registry::register_orchestration`](crate::Registry::register_orchestration),
/// run it as a sub-orchestration with
/// [`OrchestrationContext::call_sub`](crate::OrchestrationContext::call_sub), and start it from
/// a client with `TaskHubClient::start_typed` (in the `taskhub` crate). See the
/// [module docs](self).
pub struct OrchestrationRef<I, O> {
    name: &'static str,
    version: Option<&'static str>,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O> OrchestrationRef<I, O> {
    /// The orchestration registered under `name` (without a version), taking `I` and
    /// returning `O`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            version: None,
            types: PhantomData,
        }
    }

    /// One version of the orchestration `name`: registered as that version, and started and
    /// called as that version.
    #[must_use]
    pub const fn versioned(name: &'static str, version: &'static str) -> Self {
        Self {
            name,
            version: Some(version),
            types: PhantomData,
        }
    }

    /// The orchestration's registered name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The version, if the descriptor names one.
    #[must_use]
    pub const fn version(&self) -> Option<&'static str> {
        self.version
    }
}

// Manual impls: derives would require `I` and `O` themselves to be `Clone`, `Debug`, ...

/// `Clone` and `Copy` of each descriptor, whatever its `I` and `O`.
macro_rules! copy_descriptor {
    ($($descriptor:ident),+) => {$(
        impl<I, O> Clone for $descriptor<I, O> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<I, O> Copy for $descriptor<I, O> {}
    )+};
}

copy_descriptor!(ActivityRef, OrchestrationRef);

impl<I, O> fmt::Debug for ActivityRef<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActivityRef")
            .field("name", &self.name)
            .field("input", &std::any::type_name::<I>())
            .field("output", &std::any::type_name::<O>())
            .finish()
    }
}

impl<I, O> fmt::Debug for OrchestrationRef<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrchestrationRef")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("input", &std::any::type_name::<I>())
            .field("output", &std::any::type_name::<O>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ActivityRef<String, u32> = ActivityRef::new("Count");
    const O: OrchestrationRef<(), ()> = OrchestrationRef::versioned("Main", "2");

    #[test]
    fn descriptors_are_const_copy_and_named() {
        let a = A;
        let b = a;
        assert_eq!((a.name(), b.name()), ("Count", "Count"));
        assert_eq!((O.name(), O.version()), ("Main", Some("2")));
        assert_eq!(OrchestrationRef::<(), ()>::new("X").version(), None);
        let shown = format!("{A:?}");
        assert!(shown.contains("Count") && shown.contains("String") && shown.contains("u32"));
    }
}
