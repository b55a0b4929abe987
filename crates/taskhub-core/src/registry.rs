//! Registration of orchestrations and activities by name (and version).
//!
//! Name (and version) map to type-erased factories. A start of a version runs that version's
//! registration, else the one registered without a version (durabletask-dotnet's fallback: the
//! worker's version check is the gate; see [`Registry::has_orchestration_version`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::activity::{ActivityContext, ActivityError};
use crate::descriptor::{ActivityRef, OrchestrationRef};
use crate::entity::{EntityContext, EntityError, EntityType};
use crate::history::FailureDetails;
use crate::orchestration::context::OrchestrationContext;
use crate::orchestration::error::OrchestrationError;
use crate::payload::Payload;

mod functions;

pub use functions::{Outcome, RegisteredFn};

/// A boxed orchestration future, as the engine drives it.
pub type OrchestrationFuture =
    Pin<Box<dyn Future<Output = Result<Payload, OrchestrationError>> + Send>>;

/// A boxed activity future, as the runtime drives it.
pub type ActivityFuture = Pin<Box<dyn Future<Output = Result<Payload, FailureDetails>> + Send>>;

type OrchestrationFactory =
    Arc<dyn Fn(OrchestrationContext, Payload) -> OrchestrationFuture + Send + Sync>;
type ActivityFactory = Arc<dyn Fn(ActivityContext, Payload) -> ActivityFuture + Send + Sync>;

/// A registered entity, type-erased: runs one operation on a context.
pub type EntityFunction =
    Arc<dyn Fn(&mut EntityContext) -> Result<Payload, FailureDetails> + Send + Sync>;

/// The orchestrations and activities a worker can run.
///
/// Orchestrations may be registered in several versions. Which registration runs an instance
/// (see [`start_orchestration`](Self::start_orchestration)):
///
/// * a start with a version runs the registration of exactly that version, or else — the
///   fallback, as in durabletask-dotnet — the one registered *without* a version (so a worker
///   that registers each name once runs starts of any version; its `worker_version` and
///   `version_match` settings decide which versions it accepts, not the registry);
/// * a start without a version runs the one registered without a version, or else the one
///   registered last.
///
/// Register plain async functions by name, or through typed descriptors
/// ([`ActivityRef`], [`OrchestrationRef`]) so that callers cannot get the types wrong:
///
/// ```
/// use taskhub_core::*;
///
/// async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
///     Ok(format!("Hello {city}!"))
/// }
///
/// async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
///     let mut out = Vec::new();
///     for city in ["Tokyo", "Seattle", "London"] {
///         out.push(ctx.call_activity("SayHello", city).await?);
///     }
///     Ok(out)
/// }
///
/// const SHOUT: ActivityRef<String, String> = ActivityRef::new("Shout");
///
/// let mut registry = Registry::new();
/// registry
///     .orchestration("HelloCities", hello_cities)
///     .orchestration_version("HelloCities", "2", hello_cities)
///     .activity("SayHello", say_hello)
///     .register_activity(SHOUT, |_ctx, text: String| async move {
///         Ok::<_, ActivityError>(text.to_uppercase())
///     });
/// assert_eq!(registry.orchestration_names(), ["HelloCities"]);
/// assert_eq!(registry.activity_names(), ["SayHello", "Shout"]);
/// // A worker runs it: `Worker::start(&hub, registry)` in the `taskhub` crate.
/// ```
#[derive(Default, Clone)]
pub struct Registry {
    orchestrations: HashMap<String, Vec<(Option<String>, OrchestrationFactory)>>,
    activities: HashMap<String, ActivityFactory>,
    entities: HashMap<String, EntityFunction>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("orchestrations", &self.orchestration_names())
            .field("activities", &self.activity_names())
            .field("entities", &self.entity_names())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an orchestration: a plain async fn taking the context and a typed input.
    ///
    /// Registered without a version, it runs starts without a version and also starts of any
    /// version that has no registration of its own ([`orchestration_version`](Self::orchestration_version)).
    pub fn orchestration<I, F>(&mut self, name: &str, f: F) -> &mut Self
    where
        I: DeserializeOwned + Send + 'static,
        F: RegisteredFn<OrchestrationContext, I, OrchestrationError>,
    {
        self.insert_orchestration(name, None, f)
    }

    /// Registers one version of an orchestration: it runs the starts of exactly that version
    /// (preferred over a registration without a version, which runs the versions that have
    /// none of their own).
    pub fn orchestration_version<I, F>(&mut self, name: &str, version: &str, f: F) -> &mut Self
    where
        I: DeserializeOwned + Send + 'static,
        F: RegisteredFn<OrchestrationContext, I, OrchestrationError>,
    {
        self.insert_orchestration(name, Some(version.to_owned()), f)
    }

    /// Registers the orchestration a typed descriptor names (in its version, if it has one).
    /// The function's input and output types must be the descriptor's, so every caller that
    /// uses the same descriptor agrees with it at compile time.
    ///
    /// ```
    /// use taskhub_core::*;
    ///
    /// const DOUBLE: OrchestrationRef<u64, u64> = OrchestrationRef::new("Double");
    ///
    /// let mut registry = Registry::new();
    /// registry.register_orchestration(DOUBLE, |_ctx, n: u64| async move {
    ///     Ok::<_, OrchestrationError>(n * 2)
    /// });
    /// assert!(registry.has_orchestration("Double"));
    /// ```
    pub fn register_orchestration<I, O, F>(
        &mut self,
        orchestration: OrchestrationRef<I, O>,
        f: F,
    ) -> &mut Self
    where
        I: DeserializeOwned + Send + 'static,
        F: RegisteredFn<
            OrchestrationContext,
            I,
            OrchestrationError,
            Fut: Outcome<OrchestrationError, Value = O>,
        >,
    {
        let version = orchestration.version().map(str::to_owned);
        self.insert_orchestration(orchestration.name(), version, f)
    }

    fn insert_orchestration<I, F>(&mut self, name: &str, version: Option<String>, f: F) -> &mut Self
    where
        I: DeserializeOwned + Send + 'static,
        F: RegisteredFn<OrchestrationContext, I, OrchestrationError>,
    {
        let owned_name = name.to_owned();
        let factory: OrchestrationFactory = Arc::new(move |ctx, input: Payload| {
            let what = format!("input of orchestration '{owned_name}'");
            match input.parse::<I>(&what) {
                Ok(input) => {
                    let fut = f(ctx, input);
                    let out_what = format!("output of orchestration '{owned_name}'");
                    Box::pin(async move {
                        let out = fut.await?;
                        Payload::to_payload(&out, &out_what).map_err(OrchestrationError::from)
                    })
                }
                Err(e) => {
                    let err = OrchestrationError::from(e).with_type("InvalidInput");
                    Box::pin(async move { Err(err) })
                }
            }
        });
        let versions = self.orchestrations.entry(name.to_owned()).or_default();
        versions.retain(|(v, _)| *v != version);
        versions.push((version, factory));
        self
    }

    /// Registers an activity: a plain async fn taking the activity context and a typed input.
    pub fn activity<I, F>(&mut self, name: &str, f: F) -> &mut Self
    where
        I: DeserializeOwned + Send + 'static,
        F: RegisteredFn<ActivityContext, I, ActivityError>,
    {
        let owned_name = name.to_owned();
        let factory: ActivityFactory = Arc::new(move |ctx, input: Payload| {
            match input.parse::<I>(&format!("input of activity '{owned_name}'")) {
                Ok(input) => {
                    let fut = f(ctx, input);
                    let out_what = format!("output of activity '{owned_name}'");
                    Box::pin(async move {
                        let out = fut.await.map_err(ActivityError::into_failure)?;
                        Payload::to_payload(&out, &out_what)
                            .map_err(|e| FailureDetails::new("InvalidOutput", e.to_string()))
                    })
                }
                Err(e) => {
                    let mut failure = FailureDetails::new("InvalidInput", e.to_string());
                    failure.non_retryable = true;
                    Box::pin(async move { Err(failure) })
                }
            }
        });
        self.activities.insert(name.to_owned(), factory);
        self
    }

    /// Registers the activity a typed descriptor names. The function's input and output types
    /// must be the descriptor's, so every [`call`](OrchestrationContext::call) through the same
    /// descriptor agrees with it at compile time.
    ///
    /// ```
    /// use taskhub_core::*;
    ///
    /// const GREET: ActivityRef<String, String> = ActivityRef::new("Greet");
    ///
    /// let mut registry = Registry::new();
    /// registry.register_activity(GREET, |_ctx, name: String| async move {
    ///     Ok::<_, ActivityError>(format!("Hello {name}!"))
    /// });
    /// assert_eq!(registry.activity_names(), ["Greet"]);
    /// ```
    pub fn register_activity<I, O, F>(&mut self, activity: ActivityRef<I, O>, f: F) -> &mut Self
    where
        I: DeserializeOwned + Send + 'static,
        F: RegisteredFn<ActivityContext, I, ActivityError, Fut: Outcome<ActivityError, Value = O>>,
    {
        self.activity(activity.name(), f)
    }

    /// Creates the orchestration future for `name`/`version`, or explains why it cannot.
    ///
    /// With a version: the registration of exactly that version, else the one registered
    /// without a version (the fallback: the worker's version check is the gate, not the
    /// registry). Without a version: the one registered without a version, else the one
    /// registered last.
    ///
    /// ```
    /// use taskhub_core::*;
    ///
    /// let mut registry = Registry::new();
    /// registry
    ///     .orchestration("Order", |_ctx, (): ()| async { Ok::<_, OrchestrationError>("any") })
    ///     .orchestration_version("Order", "2", |_ctx, (): ()| async {
    ///         Ok::<_, OrchestrationError>("two")
    ///     });
    /// assert!(registry.has_orchestration_version("Order", Some("2")), "exact");
    /// assert!(registry.has_orchestration_version("Order", Some("7")), "the fallback");
    /// assert!(!registry.has_orchestration_version("Refund", Some("2")));
    /// ```
    ///
    /// # Errors
    /// An `OrchestrationNotFound` failure naming what is registered: no registration of that
    /// name, or (with a version) neither that version nor one without a version.
    pub fn start_orchestration(
        &self,
        name: &str,
        version: Option<&str>,
        ctx: OrchestrationContext,
        input: Payload,
    ) -> Result<OrchestrationFuture, FailureDetails> {
        match self.find_orchestration(name, version) {
            Some(factory) => Ok(factory(ctx, input)),
            None => {
                let what = version.map_or_else(
                    || format!("'{name}'"),
                    |v| format!("'{name}' version '{v}'"),
                );
                Err(not_registered(
                    "OrchestrationNotFound",
                    &format!("orchestration {what}"),
                    &self.orchestration_names(),
                ))
            }
        }
    }

    /// The registration that runs `name` in `version` (the rules of
    /// [`start_orchestration`](Self::start_orchestration)).
    fn find_orchestration(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Option<&OrchestrationFactory> {
        let versions = self.orchestrations.get(name)?;
        let unversioned = || versions.iter().find(|(rv, _)| rv.is_none());
        let found = match version {
            Some(v) => versions
                .iter()
                .find(|(rv, _)| rv.as_deref() == Some(v))
                .or_else(unversioned),
            None => unversioned().or_else(|| versions.last()),
        };
        found.map(|(_, factory)| factory)
    }

    /// True if [`start_orchestration`](Self::start_orchestration) would find code for `name`
    /// in `version`: that version's registration, or (with or without a version) one
    /// registered without a version; without a version, any registration of the name.
    #[must_use]
    pub fn has_orchestration_version(&self, name: &str, version: Option<&str>) -> bool {
        self.find_orchestration(name, version).is_some()
    }

    /// Creates the activity future for `name`, or explains why it cannot.
    ///
    /// # Errors
    /// An `ActivityNotFound` failure naming what is registered.
    pub fn start_activity(
        &self,
        name: &str,
        ctx: ActivityContext,
        input: Payload,
    ) -> Result<ActivityFuture, FailureDetails> {
        match self.activities.get(name) {
            Some(factory) => Ok(factory(ctx, input)),
            None => Err(not_registered(
                "ActivityNotFound",
                &format!("activity '{name}'"),
                &self.activity_names(),
            )),
        }
    }

    /// True if an activity of this name is registered.
    #[must_use]
    pub fn has_activity(&self, name: &str) -> bool {
        self.activities.contains_key(name)
    }

    /// True if an orchestration of this name is registered (any version).
    #[must_use]
    pub fn has_orchestration(&self, name: &str) -> bool {
        self.orchestrations.contains_key(name)
    }

    /// Registered orchestration names, sorted.
    #[must_use]
    pub fn orchestration_names(&self) -> Vec<String> {
        sorted_names(&self.orchestrations)
    }

    /// Registered activity names, sorted.
    #[must_use]
    pub fn activity_names(&self) -> Vec<String> {
        sorted_names(&self.activities)
    }

    /// Registers an entity as a function of its context: it reads the operation name, input and
    /// state from the context, may change the state, and returns the operation's output.
    ///
    /// ```
    /// use taskhub_core::*;
    ///
    /// let mut registry = Registry::new();
    /// registry.entity("Counter", |ctx: &mut EntityContext| {
    ///     let mut value: i64 = ctx.get_state_or_default()?;
    ///     match ctx.operation_name() {
    ///         "add" => value += ctx.input::<i64>()?,
    ///         "reset" => value = 0,
    ///         "get" => {}
    ///         other => return Err(EntityError::new(format!("no operation {other}"))),
    ///     }
    ///     ctx.set_state(&value)?;
    ///     Ok(value)
    /// });
    /// assert!(registry.has_entity("Counter"));
    /// ```
    pub fn entity<O, F>(&mut self, name: &str, f: F) -> &mut Self
    where
        O: Serialize + 'static,
        F: Fn(&mut EntityContext) -> Result<O, EntityError> + Send + Sync + 'static,
    {
        let function: EntityFunction = Arc::new(move |ctx| {
            let out = f(ctx).map_err(EntityError::into_failure)?;
            Payload::to_payload(
                &out,
                &format!("output of operation '{}'", ctx.operation_name()),
            )
            .map_err(|e| FailureDetails::new("InvalidOutput", e.to_string()))
        });
        self.entities.insert(name.to_owned(), function);
        self
    }

    /// Registers an entity written as a type with methods (see [`EntityType`]).
    pub fn entity_type<T>(&mut self, name: &str, entity: EntityType<T>) -> &mut Self
    where
        T: Default + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let entity = Arc::new(entity);
        let function: EntityFunction = Arc::new(move |ctx| entity.dispatch(ctx));
        self.entities.insert(name.to_owned(), function);
        self
    }

    /// The function of a registered entity.
    #[must_use]
    pub fn entity_function(&self, name: &str) -> Option<&EntityFunction> {
        self.entities.get(name)
    }

    /// True if an entity of this name is registered.
    #[must_use]
    pub fn has_entity(&self, name: &str) -> bool {
        self.entities.contains_key(name)
    }

    /// Registered entity names, sorted.
    #[must_use]
    pub fn entity_names(&self) -> Vec<String> {
        sorted_names(&self.entities)
    }
}

/// The keys of a registration map, sorted.
fn sorted_names<V>(map: &HashMap<String, V>) -> Vec<String> {
    let mut names: Vec<String> = map.keys().cloned().collect();
    names.sort();
    names
}

/// The non-retryable failure of a start of `what`, which no registration runs.
pub(crate) fn not_registered(
    error_type: &str,
    what: &str,
    registered: &[String],
) -> FailureDetails {
    let mut failure = FailureDetails::new(
        error_type,
        format!(
            "{what} is not registered on this worker (registered: {})",
            registered.join(", ")
        ),
    );
    failure.non_retryable = true;
    failure
}
