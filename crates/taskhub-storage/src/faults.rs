//! Seeded fault injection and call counters: one [`FaultPlan`] for every backend.
//!
//! A [`FaultPlan`] says which calls go wrong and how; a store's [`Faults`] applies it and
//! counts every call per [`Op`]. Calls are numbered from 1, from the moment the plan was
//! installed, over all operations ([`Trigger::nth`]) or over one ([`Trigger::nth_of`]).
//! The memory backend applies it inside
//! ([`MemoryStore::with_faults`](crate::memory::MemoryStore::with_faults));
//! `faulty::FaultyStore` (feature `testing`) wraps any store with it.
//! A torn checkpoint is stopped by the shared ordered-checkpoint driver
//! ([`ordered_checkpoint`](crate::ordered_checkpoint)) through a [`StepObserver`], so it tears
//! the very code a backend without transactions runs.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use taskhub_storage::faults::{FaultPlan, Op, TearAfter, Trigger};
//! use taskhub_storage::memory::MemoryStore;
//! use taskhub_storage::{StorageError, SystemClock};
//!
//! let plan = FaultPlan::none()
//!     .fail(Trigger::nth_of(Op::Dequeue, 2), StorageError::Unavailable("injected".into()))
//!     .delay(Trigger::nth(5), Duration::from_secs(1))
//!     .tear_checkpoint(1, TearAfter::OutboundSent)
//!     .random(42, 0.01, StorageError::Busy { retry_after: None });
//! let store = MemoryStore::with_faults(Arc::new(SystemClock::new()), plan);
//! assert_eq!(store.faults().total_calls(), 0);
//! ```

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::checkpoint::CheckpointRequest;
use crate::clock::Clock;
use crate::error::{StorageError, StorageResult};
use crate::ordered_checkpoint::{CheckpointStep, StepObserver};

/// The seam operation a fault aims at (the crate's [`Operation`](crate::Operation)).
pub use crate::operation::Operation as Op;

/// Which call a fault hits: the `n`-th (1-based) since the plan was installed, counted over
/// every operation or over one. `n` of 0 never fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    op: Option<Op>,
    nth: u64,
}

impl Trigger {
    /// The `n`-th call of any operation.
    #[must_use]
    pub const fn nth(n: u64) -> Self {
        Self { op: None, nth: n }
    }

    /// The `n`-th call of `op`.
    #[must_use]
    pub const fn nth_of(op: Op, n: u64) -> Self {
        Self {
            op: Some(op),
            nth: n,
        }
    }

    fn fires(self, op: Op, call: u64, op_call: u64) -> bool {
        match self.op {
            None => call == self.nth,
            Some(o) => o == op && op_call == self.nth,
        }
    }
}

/// The step of the ordered checkpoint after which a torn checkpoint stops
/// (see [`CheckpointStore`](crate::CheckpointStore)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TearAfter {
    /// Inside step 1, before its commit: what a backend writes ahead of the commit (on Azure,
    /// the event rows that do not fit in the sentinel's batch, under a token no committed row
    /// uses, and the blobs of large events and of a large outbox) is written and the fence is
    /// checked; the commit is not made, so none of it is visible. Not in [`ALL`](Self::ALL),
    /// which lists the tears between two steps (nor drawn by random tears); its
    /// [`step`](Self::step) is 1.
    AheadWritten,
    /// Step 1: the history and `pending_outbox` are committed; nothing was sent.
    HistoryCommitted,
    /// Step 2: the outbound messages are enqueued; the instance row is not written.
    OutboundSent,
    /// Step 3: the instance row is written; consumed messages are not deleted.
    InstanceWritten,
    /// Step 4: consumed messages are deleted; `pending_outbox` is not cleared.
    ConsumedDeleted,
}

impl TearAfter {
    /// Every tear point, in step order.
    pub const ALL: [Self; 4] = [
        Self::HistoryCommitted,
        Self::OutboundSent,
        Self::InstanceWritten,
        Self::ConsumedDeleted,
    ];

    /// The step number (1 to 4).
    #[must_use]
    pub const fn step(self) -> u8 {
        match self {
            Self::AheadWritten | Self::HistoryCommitted => 1,
            Self::OutboundSent => 2,
            Self::InstanceWritten => 3,
            Self::ConsumedDeleted => 4,
        }
    }

    /// The tear point after step `step` (1 to 4).
    #[must_use]
    pub fn from_step(step: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.step() == step)
    }

    /// The point of the ordered checkpoint this tear follows.
    #[must_use]
    pub const fn checkpoint_step(self) -> CheckpointStep {
        match self {
            Self::AheadWritten => CheckpointStep::FenceChecked,
            Self::HistoryCommitted => CheckpointStep::HistoryCommitted,
            Self::OutboundSent => CheckpointStep::OutboundSent,
            Self::InstanceWritten => CheckpointStep::InstanceWritten,
            Self::ConsumedDeleted => CheckpointStep::ConsumedDeleted,
        }
    }
}

#[derive(Debug, Clone)]
enum Rule {
    Fail {
        trigger: Trigger,
        error: StorageError,
    },
    LoseResponse {
        trigger: Trigger,
        error: StorageError,
    },
    Delay {
        trigger: Trigger,
        by: Duration,
    },
    Tear {
        nth: u64,
        after: TearAfter,
    },
}

/// Which calls fail, stall or tear. Build with [`none`](Self::none) and the chained methods;
/// install with [`MemoryStore::with_faults`](crate::memory::MemoryStore::with_faults),
/// `FaultyStore::new` (feature `testing`) or [`Faults::set_plan`].
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    rules: Vec<Rule>,
    seed: u64,
    random_fail: Option<(f64, StorageError)>,
    random_tear: f64,
}

impl FaultPlan {
    /// No faults.
    #[must_use]
    pub fn none() -> Self {
        Self::default()
    }

    /// The triggered call fails with `error` before it does anything.
    #[must_use]
    pub fn fail(mut self, trigger: Trigger, error: StorageError) -> Self {
        self.rules.push(Rule::Fail { trigger, error });
        self
    }

    /// The triggered call does its work, then reports `error`: a lost response.
    #[must_use]
    pub fn lose_response(mut self, trigger: Trigger, error: StorageError) -> Self {
        self.rules.push(Rule::LoseResponse { trigger, error });
        self
    }

    /// The triggered call waits `by` on the store's clock before it runs.
    #[must_use]
    pub fn delay(mut self, trigger: Trigger, by: Duration) -> Self {
        self.rules.push(Rule::Delay { trigger, by });
        self
    }

    /// The `nth` checkpoint call (1-based) stops after step `after` with
    /// [`StorageError::Unavailable`], leaving the earlier steps applied.
    #[must_use]
    pub fn tear_checkpoint(mut self, nth: u64, after: TearAfter) -> Self {
        self.rules.push(Rule::Tear { nth, after });
        self
    }

    /// Seeds the generator and fails each call with `probability` (0 to 1) with `error`,
    /// before it does anything. The same seed and the same sequence of calls give the same
    /// faults.
    #[must_use]
    pub fn random(mut self, seed: u64, probability: f64, error: StorageError) -> Self {
        self.seed = seed;
        self.random_fail = Some((probability, error));
        self
    }

    /// Tears each checkpoint that was not failed otherwise with `probability`, after a step
    /// drawn uniformly from 1 to 4. Draws from the generator seeded by
    /// [`random`](Self::random) (seed 0 if that was not called).
    #[must_use]
    pub fn random_tears(mut self, probability: f64) -> Self {
        self.random_tear = probability;
        self
    }

    fn uses_generator(&self) -> bool {
        self.random_fail.is_some() || self.random_tear > 0.0
    }
}

/// What was done to one call.
#[derive(Debug, Clone, PartialEq)]
pub enum InjectedFault {
    /// Failed before doing anything.
    Failed(StorageError),
    /// Did its work, then reported this error.
    LostResponse(StorageError),
    /// Waited this long on the clock first.
    Delayed(Duration),
    /// A checkpoint stopped after this step.
    Torn(TearAfter),
}

/// One injected fault, for tests to check what happened (and that a seed reproduces it).
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    /// The call's number since the plan was installed (1-based, over all operations).
    pub call: u64,
    /// The operation.
    pub op: Op,
    /// The call's number among calls of `op` since the plan was installed.
    pub op_call: u64,
    /// What was done.
    pub fault: InjectedFault,
}

/// What `enter` decided for a call that goes ahead.
#[derive(Debug)]
pub(crate) struct Call {
    call: u64,
    op: Op,
    op_call: u64,
    lose: Option<StorageError>,
    tear: Option<TearAfter>,
}

impl Call {
    /// The call's result as the caller sees it (replaced by the error of a lost response).
    pub(crate) fn finish<T>(self, result: StorageResult<T>) -> StorageResult<T> {
        match self.lose {
            Some(error) => Err(error),
            None => result,
        }
    }
}

#[derive(Debug, Default)]
struct FaultState {
    /// Calls per operation over the store's life (or since `reset_counts`).
    counts: BTreeMap<Op, u64>,
    plan: FaultPlan,
    /// Calls since the plan was installed.
    plan_calls: u64,
    plan_op_calls: BTreeMap<Op, u64>,
    rng: u64,
    injected: Vec<Injected>,
}

impl FaultState {
    fn install(&mut self, plan: FaultPlan) {
        self.rng = plan.seed;
        self.plan = plan;
        self.plan_calls = 0;
        self.plan_op_calls.clear();
        self.injected.clear();
    }

    /// Uniform in [0, 1), from splitmix64.
    fn draw(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1_u64 << 53) as f64
    }

    fn record(&mut self, call: u64, op: Op, op_call: u64, fault: InjectedFault) {
        self.injected.push(Injected {
            call,
            op,
            op_call,
            fault,
        });
    }

    /// Counts the call and decides its faults: (delay, failure, call).
    fn decide(&mut self, op: Op) -> (Duration, Option<StorageError>, Call) {
        *self.counts.entry(op).or_default() += 1;
        self.plan_calls += 1;
        let op_counter = self.plan_op_calls.entry(op).or_default();
        *op_counter += 1;
        let (call, op_call) = (self.plan_calls, *op_counter);
        let fires = |t: &Trigger| t.fires(op, call, op_call);

        let mut delay = Duration::ZERO;
        let mut fail = None;
        let mut lose = None;
        let mut tear = None;
        for rule in &self.plan.rules {
            match rule {
                Rule::Delay { trigger, by } if fires(trigger) => delay += *by,
                Rule::Fail { trigger, error } if fires(trigger) && fail.is_none() => {
                    fail = Some(error.clone());
                }
                Rule::LoseResponse { trigger, error } if fires(trigger) && lose.is_none() => {
                    lose = Some(error.clone());
                }
                Rule::Tear { nth, after } if op == Op::Checkpoint && op_call == *nth => {
                    tear = tear.or(Some(*after));
                }
                _ => {}
            }
        }
        if self.plan.uses_generator() {
            let fail_draw = self.draw();
            if let Some((p, error)) = &self.plan.random_fail {
                if fail.is_none() && fail_draw < *p {
                    fail = Some(error.clone());
                }
            }
            if op == Op::Checkpoint {
                let (tear_draw, step_draw) = (self.draw(), self.draw());
                if tear.is_none() && tear_draw < self.plan.random_tear {
                    let index = ((step_draw * 4.0) as usize).min(3);
                    tear = TearAfter::ALL.get(index).copied();
                }
            }
        }

        if !delay.is_zero() {
            self.record(call, op, op_call, InjectedFault::Delayed(delay));
        }
        if let Some(error) = &fail {
            self.record(call, op, op_call, InjectedFault::Failed(error.clone()));
        } else if let Some(error) = &lose {
            self.record(
                call,
                op,
                op_call,
                InjectedFault::LostResponse(error.clone()),
            );
        }
        let go_ahead = Call {
            call,
            op,
            op_call,
            lose,
            tear,
        };
        (delay, fail, go_ahead)
    }
}

/// The fault injector and call counters of a store (a [`MemoryStore`](crate::memory::MemoryStore)
/// or a `FaultyStore`).
#[derive(Debug, Default)]
pub struct Faults {
    state: Mutex<FaultState>,
}

impl Faults {
    pub(crate) fn new(plan: FaultPlan) -> Self {
        let faults = Self::default();
        faults.lock().install(plan);
        faults
    }

    fn lock(&self) -> MutexGuard<'_, FaultState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the plan. Call numbering for triggers, the generator and the log of injected
    /// faults start afresh; the call counters go on.
    pub fn set_plan(&self, plan: FaultPlan) {
        self.lock().install(plan);
    }

    /// Calls of `op` so far (failed ones included).
    #[must_use]
    pub fn calls(&self, op: Op) -> u64 {
        self.lock().counts.get(&op).copied().unwrap_or(0)
    }

    /// Calls of every operation so far.
    #[must_use]
    pub fn total_calls(&self) -> u64 {
        self.lock().counts.values().sum()
    }

    /// Calls per operation so far (operations never called are left out).
    #[must_use]
    pub fn counts(&self) -> BTreeMap<Op, u64> {
        self.lock().counts.clone()
    }

    /// Sets every call counter to zero (the plan's call numbering is unaffected).
    pub fn reset_counts(&self) {
        self.lock().counts.clear();
    }

    /// The faults injected since the plan was installed, in order.
    #[must_use]
    pub fn injected(&self) -> Vec<Injected> {
        self.lock().injected.clone()
    }

    /// Counts a call of `op`, waits out a planned delay on `clock`, and fails it if planned.
    pub(crate) async fn enter(&self, op: Op, clock: &dyn Clock) -> StorageResult<Call> {
        let (delay, fail, call) = self.lock().decide(op);
        if !delay.is_zero() {
            clock.sleep(delay).await;
        }
        match fail {
            Some(error) => Err(error),
            None => Ok(call),
        }
    }

    /// Records that `call` was torn after `after`, and returns the error the caller sees.
    fn tear(&self, call: &Call, after: TearAfter) -> StorageError {
        self.lock()
            .record(call.call, call.op, call.op_call, InjectedFault::Torn(after));
        StorageError::Unavailable(format!(
            "injected fault: checkpoint torn after step {}",
            after.step()
        ))
    }

    /// The observer that tears the checkpoint `call` where the plan says (or never).
    pub(crate) fn tearing<'a>(&'a self, call: &'a Call) -> Tearing<'a> {
        Tearing { faults: self, call }
    }
}

/// Stops a checkpoint after the step its plan tears it at, recording the tear.
pub(crate) struct Tearing<'a> {
    faults: &'a Faults,
    call: &'a Call,
}

impl StepObserver for Tearing<'_> {
    fn after(&self, step: CheckpointStep, _request: &CheckpointRequest) -> StorageResult<()> {
        match self.call.tear {
            Some(after) if after.checkpoint_step() == step => {
                Err(self.faults.tear(self.call, after))
            }
            _ => Ok(()),
        }
    }
}
