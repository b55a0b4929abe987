//! What entity code sees while one operation runs: [`EntityContext`], and the error an
//! operation returns, [`EntityError`].

use std::time::SystemTime;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::entity::id::EntityId;
use crate::entity::protocol::Caller;
use crate::history::FailureDetails;
use crate::ids::InstanceId;
use crate::orchestration::error::failure_wrapper;
use crate::payload::Payload;
use crate::time::Timestamp;

/// Something an operation asked for besides changing the state, carried out by the runtime
/// once the batch commits (and dropped if the operation fails).
#[derive(Debug, Clone, PartialEq)]
pub enum EntityAction {
    /// Signal an entity (one-way), now or at a later time.
    Signal {
        /// The target entity.
        target: EntityId,
        /// The operation.
        op: String,
        /// Its input.
        input: Payload,
        /// Not before this time.
        at: Option<Timestamp>,
    },
    /// Start an orchestration.
    StartOrchestration {
        /// Its instance ID.
        instance_id: InstanceId,
        /// The orchestration name.
        name: String,
        /// Its input.
        input: Payload,
    },
}

/// The context of one entity operation: the entity's state, the operation and its input, and
/// the actions it may take (signal entities, start orchestrations).
///
/// An operation that returns an error leaves the state as it was before the operation and
/// takes none of its actions.
#[derive(Debug)]
pub struct EntityContext {
    id: EntityId,
    operation: String,
    input: Payload,
    state: Option<Payload>,
    now: Timestamp,
    /// The message the operation came from (makes the IDs of started orchestrations
    /// deterministic).
    origin: String,
    /// The orchestration that called it (`None`: a signal).
    caller: Option<Caller>,
    pub(crate) actions: Vec<EntityAction>,
    /// Set by [`delete_state`](Self::delete_state), cleared by [`set_state`](Self::set_state).
    pub(crate) deleted: bool,
}

impl EntityContext {
    pub(crate) fn new(request: OperationRequest) -> Self {
        Self {
            id: request.id,
            operation: request.operation,
            input: request.input,
            state: request.state,
            now: request.now,
            origin: request.origin,
            caller: request.caller,
            actions: Vec::new(),
            deleted: false,
        }
    }

    /// A context outside a worker, to unit-test entity functions: `state` is the state before
    /// the operation.
    #[must_use]
    pub fn for_test(id: EntityId, operation: &str, input: Payload, state: Option<Payload>) -> Self {
        Self::new(OperationRequest {
            id,
            operation: operation.to_owned(),
            input,
            state,
            now: Timestamp::EPOCH,
            origin: "test".to_owned(),
            caller: None,
        })
    }

    /// The orchestration that called the operation and waits for its result (`None`: a
    /// signal, which nobody waits for).
    #[must_use]
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_ref()
    }

    /// This entity's ID.
    #[must_use]
    pub fn entity_id(&self) -> &EntityId {
        &self.id
    }

    /// The name of the operation being run.
    #[must_use]
    pub fn operation_name(&self) -> &str {
        &self.operation
    }

    /// The operation's input.
    ///
    /// # Errors
    /// An `InvalidInput` error if it does not deserialize as `T`.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T, EntityError> {
        self.input
            .parse(&format!("input of operation '{}'", self.operation))
            .map_err(|e| EntityError::new(e.to_string()).with_type("InvalidInput"))
    }

    /// The operation's input as stored JSON.
    #[must_use]
    pub fn raw_input(&self) -> &Payload {
        &self.input
    }

    /// True if the entity has state.
    #[must_use]
    pub fn has_state(&self) -> bool {
        self.state.is_some()
    }

    /// The current state, `None` if the entity has none.
    ///
    /// # Errors
    /// An `InvalidState` error if it does not deserialize as `T`.
    pub fn get_state<T: DeserializeOwned>(&self) -> Result<Option<T>, EntityError> {
        self.state
            .as_ref()
            .map(|s| s.parse(&format!("state of entity '{}'", self.id)))
            .transpose()
            .map_err(|e| EntityError::new(e.to_string()).with_type("InvalidState"))
    }

    /// The current state, or `T::default()` if the entity has none.
    ///
    /// # Errors
    /// As [`get_state`](Self::get_state).
    pub fn get_state_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, EntityError> {
        Ok(self.get_state()?.unwrap_or_default())
    }

    /// Replaces the state.
    ///
    /// # Errors
    /// An `InvalidState` error if `state` cannot be serialized (the state is unchanged).
    pub fn set_state<T: Serialize + ?Sized>(&mut self, state: &T) -> Result<(), EntityError> {
        let p = Payload::to_payload(state, &format!("state of entity '{}'", self.id))
            .map_err(|e| EntityError::new(e.to_string()).with_type("InvalidState"))?;
        self.state = Some(p);
        self.deleted = false;
        Ok(())
    }

    /// Deletes the state: the entity no longer exists once the batch commits (unless a later
    /// operation sets a state again).
    pub fn delete_state(&mut self) {
        self.state = None;
        self.deleted = true;
    }

    /// The time of the batch this operation runs in (the same for every operation of a batch).
    #[must_use]
    pub fn now(&self) -> SystemTime {
        self.now.to_system_time()
    }

    /// Signals an entity (one-way): the operation runs there after this batch commits.
    ///
    /// # Errors
    /// An `InvalidInput` error if `input` cannot be serialized.
    pub fn signal_entity<I: Serialize + ?Sized>(
        &mut self,
        target: &EntityId,
        op: &str,
        input: &I,
    ) -> Result<(), EntityError> {
        self.signal(target, op, input, None)
    }

    /// Signals an entity at a later time (a scheduled signal).
    ///
    /// # Errors
    /// As [`signal_entity`](Self::signal_entity).
    pub fn signal_entity_at<I: Serialize + ?Sized>(
        &mut self,
        target: &EntityId,
        op: &str,
        input: &I,
        at: SystemTime,
    ) -> Result<(), EntityError> {
        self.signal(target, op, input, Some(Timestamp::from_system_time(at)))
    }

    fn signal<I: Serialize + ?Sized>(
        &mut self,
        target: &EntityId,
        op: &str,
        input: &I,
        at: Option<Timestamp>,
    ) -> Result<(), EntityError> {
        let input = Payload::to_payload(input, &format!("input of operation '{op}'"))
            .map_err(|e| EntityError::new(e.to_string()).with_type("InvalidInput"))?;
        self.actions.push(EntityAction::Signal {
            target: target.clone(),
            op: op.to_owned(),
            input,
            at,
        });
        Ok(())
    }

    /// Starts an orchestration once this batch commits; returns its instance ID (derived from
    /// this operation's message, so a re-run batch starts the same instance, once).
    ///
    /// # Errors
    /// An `InvalidInput` error if `input` cannot be serialized.
    pub fn start_orchestration<I: Serialize + ?Sized>(
        &mut self,
        name: &str,
        input: &I,
    ) -> Result<InstanceId, EntityError> {
        let input = Payload::to_payload(input, &format!("input of orchestration '{name}'"))
            .map_err(|e| EntityError::new(e.to_string()).with_type("InvalidInput"))?;
        let n = self.actions.len();
        let seed = crate::ids::name_uuid(&[
            self.id.instance_id().as_str().as_bytes(),
            self.origin.as_bytes(),
            n.to_string().as_bytes(),
        ]);
        let instance_id =
            InstanceId::new(seed.simple().to_string()).unwrap_or_else(|_| InstanceId::random());
        self.actions.push(EntityAction::StartOrchestration {
            instance_id: instance_id.clone(),
            name: name.to_owned(),
            input,
        });
        Ok(instance_id)
    }

    /// Records `action` as is, as if the operation had asked for it (for an
    /// [`OperationRunner`](crate::entity::OperationRunner) whose operations ran elsewhere and
    /// reported their actions).
    pub fn push_action(&mut self, action: EntityAction) {
        self.actions.push(action);
    }

    pub(crate) fn into_parts(self) -> (Option<Payload>, Vec<EntityAction>) {
        (self.state, self.actions)
    }

    /// The state and actions after the operation (for unit tests of entity functions).
    #[must_use]
    pub fn state_for_test(&self) -> Option<&Payload> {
        self.state.as_ref()
    }
}

/// What [`EntityContext::new`] needs.
pub(crate) struct OperationRequest {
    pub id: EntityId,
    pub operation: String,
    pub input: Payload,
    pub state: Option<Payload>,
    pub now: Timestamp,
    pub origin: String,
    pub caller: Option<Caller>,
}

/// The error an entity operation returns: the state change is rolled back and the caller of a
/// call gets it as [`TaskError::Failed`](crate::TaskError::Failed) (kind `entity operation`).
///
/// Any `std::error::Error` converts into it, so `?` works in operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityError {
    failure: FailureDetails,
}

impl EntityError {
    /// An error with a message (error type `EntityOperationFailed`).
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            failure: FailureDetails::new("EntityOperationFailed", message),
        }
    }
}

failure_wrapper!(EntityError, from_error);
