//! Entities written as a type with methods: [`EntityType`].

use std::collections::HashMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::entity::context::{EntityContext, EntityError};
use crate::history::FailureDetails;
use crate::payload::Payload;

type Method<T> =
    Arc<dyn Fn(&mut T, &mut EntityContext) -> Result<Payload, FailureDetails> + Send + Sync>;

/// An entity type: its state is a `T` (`T::default()` while the entity has no state), and
/// each operation is a method `fn(&mut T, &mut EntityContext, I) -> Result<O, EntityError>`.
/// The state is saved after each successful operation, unless it called
/// [`EntityContext::delete_state`]. An operation named `delete` that is not defined deletes
/// the state.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use taskhub_core::*;
///
/// #[derive(Default, Serialize, Deserialize)]
/// struct Counter { value: i64 }
///
/// impl Counter {
///     fn add(&mut self, _ctx: &mut EntityContext, n: i64) -> Result<i64, EntityError> {
///         self.value += n;
///         Ok(self.value)
///     }
///     fn get(&mut self, _ctx: &mut EntityContext, _: ()) -> Result<i64, EntityError> {
///         Ok(self.value)
///     }
/// }
///
/// let mut registry = Registry::new();
/// registry.entity_type(
///     "Counter",
///     EntityType::<Counter>::new().operation("add", Counter::add).operation("get", Counter::get),
/// );
/// assert_eq!(registry.entity_names(), ["Counter"]);
/// ```
pub struct EntityType<T> {
    methods: HashMap<String, Method<T>>,
}

impl<T> std::fmt::Debug for EntityType<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.methods.keys().collect();
        names.sort();
        f.debug_struct("EntityType")
            .field("operations", &names)
            .finish()
    }
}

impl<T> Default for EntityType<T>
where
    T: Default + Serialize + DeserializeOwned + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> EntityType<T>
where
    T: Default + Serialize + DeserializeOwned + 'static,
{
    /// A type with no operations yet.
    #[must_use]
    pub fn new() -> Self {
        Self {
            methods: HashMap::new(),
        }
    }

    /// Adds an operation.
    #[must_use]
    pub fn operation<I, O, F>(mut self, name: &str, f: F) -> Self
    where
        I: DeserializeOwned + 'static,
        O: Serialize + 'static,
        F: Fn(&mut T, &mut EntityContext, I) -> Result<O, EntityError> + Send + Sync + 'static,
    {
        let op = name.to_owned();
        let method: Method<T> = Arc::new(move |state, ctx| {
            let input: I = ctx.input().map_err(EntityError::into_failure)?;
            let out = f(state, ctx, input).map_err(EntityError::into_failure)?;
            Payload::to_payload(&out, &format!("output of operation '{op}'"))
                .map_err(|e| FailureDetails::new("InvalidOutput", e.to_string()))
        });
        self.methods.insert(name.to_owned(), method);
        self
    }

    /// Runs one operation: load the state, call the method, save the state.
    pub(crate) fn dispatch(&self, ctx: &mut EntityContext) -> Result<Payload, FailureDetails> {
        let Some(method) = self.methods.get(ctx.operation_name()) else {
            if ctx.operation_name() == "delete" {
                ctx.delete_state();
                return Ok(Payload::null());
            }
            let mut names: Vec<&String> = self.methods.keys().collect();
            names.sort();
            let mut f = FailureDetails::new(
                "UnknownOperation",
                format!(
                    "entity '{}' has no operation '{}' (it has: {})",
                    ctx.entity_id().name(),
                    ctx.operation_name(),
                    names
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            f.non_retryable = true;
            return Err(f);
        };
        let mut state: T = ctx
            .get_state_or_default()
            .map_err(EntityError::into_failure)?;
        ctx.deleted = false;
        let out = method(&mut state, ctx)?;
        // A method that deleted the state keeps it deleted.
        if !ctx.deleted {
            ctx.set_state(&state).map_err(EntityError::into_failure)?;
        }
        Ok(out)
    }
}
