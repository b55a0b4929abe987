//! The dispatcher's bookkeeping, behind one lock: the connected workers with their declared
//! capacity, the work items waiting for a worker, and the items out under a completion token.
//! Synchronous and clock-free (times are passed in), so every rule here is a plain function
//! call: hand out only up to a worker's capacity and while its stream queue has room, a fresh
//! token per hand-out (naming the stream it went to), put an item back at the front of its
//! queue when its worker abandons it or goes away, close a stream that stopped reading.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use taskhub::admin::{UnmatchedName, UnmatchedWork, WorkKind};
use tokio::sync::oneshot;
use tonic::Status;

use super::chunks::{Assembly, ChunkError, ChunkLimits};
use super::filters::{Filters, OrchestrationVersions, WorkName};
use super::key::ItemKey;
use super::queue::{Bounds, StreamQueue};

use crate::proto::{
    work_item, ActivityResponse, EntityBatchResult, OrchestratorResponse, WorkItem,
};
use crate::wire::{EncodedEvents, OutgoingWorkItem};

/// The kinds of work item the dispatcher hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An orchestration turn (`OrchestratorRequest`).
    Orchestration,
    /// An activity (`ActivityRequest`).
    Activity,
    /// An entity batch (`EntityBatchRequest`).
    Entity,
}

/// How many kinds of work item there are.
const KINDS: usize = 3;

impl Kind {
    fn index(self) -> usize {
        match self {
            Self::Orchestration => 0,
            Self::Activity => 1,
            Self::Entity => 2,
        }
    }

    /// The runtime's name of the kind.
    pub(crate) fn work_kind(self) -> WorkKind {
        match self {
            Self::Orchestration => WorkKind::Orchestration,
            Self::Activity => WorkKind::Activity,
            Self::Entity => WorkKind::Entity,
        }
    }

    /// The kind's name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Orchestration => "orchestration",
            Self::Activity => "activity",
            Self::Entity => "entity",
        }
    }
}

/// A worker's answer to an item.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `CompleteOrchestratorTask`.
    Orchestrator(OrchestratorResponse),
    /// `CompleteActivityTask`.
    Activity(ActivityResponse),
    /// `CompleteEntityTask`.
    Entity(EntityBatchResult),
    /// Given back (abandoned, or its worker went away) too often: why.
    GivenUp(String),
}

/// A connected worker's stream queue (the dispatcher fills it, the stream reads it).
pub(crate) type WorkerTx = Arc<StreamQueue>;

/// What an item sends: its request, and for a turn the past events already encoded; and its
/// name and version, which workers' filters look at.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) request: work_item::Request,
    pub(crate) past: EncodedEvents,
    pub(crate) name: Option<WorkName>,
}

impl Outgoing {
    /// About how many bytes it holds (its encoded size): what counts toward the waiting
    /// budget.
    pub(crate) fn bytes(&self) -> usize {
        self.request
            .encoded_len()
            .saturating_add(self.past.encoded_bytes())
    }
}

impl From<work_item::Request> for Outgoing {
    fn from(request: work_item::Request) -> Self {
        Self {
            name: WorkName::of_request(&request),
            request,
            past: EncodedEvents::new(),
        }
    }
}

/// What the dispatcher knows of a stream beside its capacity (see `profile.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamInfo {
    /// The connection it runs on ([`taskhub_listen::ConnectionHandle::id`]): completions
    /// without a token are matched to the items of the streams on their connection.
    pub(crate) connection: Option<u64>,
    /// Whether it is sent health pings (a worker whose protos lack them logs each as an
    /// unknown work item).
    pub(crate) health_pings: bool,
    /// Whether it holds at most one orchestration or activity item at once, whatever its
    /// capacity (a worker that runs them one after the other on its stream's thread).
    pub(crate) one_at_a_time: bool,
    /// The work-item filters it sent (see `filters.rs`).
    pub(crate) filters: Filters,
    /// Whether it announced `WORKER_CAPABILITY_HISTORY_STREAMING`: a turn whose history is
    /// over the inline bound goes to it with `requiresHistoryStreaming` and no past events,
    /// which it then reads with `StreamInstanceHistory` (see `streaming.rs`).
    pub(crate) history_streaming: bool,
}

impl Default for StreamInfo {
    fn default() -> Self {
        Self {
            connection: None,
            health_pings: true,
            one_at_a_time: false,
            filters: Filters::default(),
            history_streaming: false,
        }
    }
}

/// A connected worker.
#[derive(Debug)]
struct Worker {
    tx: WorkerTx,
    info: StreamInfo,
    /// The most items of each kind it may hold.
    capacity: [usize; KINDS],
    /// The items of each kind it holds.
    held: [usize; KINDS],
}

impl Worker {
    /// Whether it has room for one more item of `kind`: in its declared capacity (one item
    /// at a time in all for a worker that runs them one after the other) and in its stream
    /// queue.
    fn has_room(&self, kind: Kind, bounds: Bounds) -> bool {
        let slot = kind.index();
        // Orchestrations and activities are slots 0 and 1 (`Kind::index`).
        let busy_in_turn = matches!(kind, Kind::Orchestration | Kind::Activity)
            && self.info.one_at_a_time
            && self.held.iter().take(2).sum::<usize>() > 0;
        !busy_in_turn
            && self.held.get(slot).copied().unwrap_or(0)
                < self.capacity.get(slot).copied().unwrap_or(0)
            && self.tx.has_room(bounds)
    }
}

/// The past events of a turn that went out without them, with the execution they belong to.
#[derive(Debug)]
struct Streamed {
    execution: Option<String>,
    past: EncodedEvents,
}

/// Who holds an item that is out.
#[derive(Debug)]
struct Held {
    worker: u64,
    token: String,
    since: Duration,
}

/// Builds an item's request again (see [`Source::Once`]).
pub(crate) type Rebuild = Box<dyn Fn() -> Outgoing + Send>;

/// An item's request: built once by the executor call and moved into the first hand-out (a
/// turn's request carries its whole history: a copy per hand-out cost as much as building
/// it); a later hand-out (after a give-back) builds it again with `rebuild`.
struct Source {
    pending: Option<Outgoing>,
    rebuild: Rebuild,
}

impl Source {
    /// The request for a hand-out.
    fn take(&mut self) -> Outgoing {
        self.pending.take().unwrap_or_else(|| (self.rebuild)())
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

/// One work item, from the executor call that made it to its answer.
#[derive(Debug)]
struct Item {
    kind: Kind,
    source: Source,
    reply: Option<oneshot::Sender<Reply>>,
    /// When it was queued last (monotonic).
    queued_at: Duration,
    holder: Option<Held>,
    /// How often a worker gave it back (abandoned it, or went away with it).
    give_backs: u32,
    /// Its size (see [`Outgoing::bytes`]), counted in [`State::waiting_bytes`] while it waits.
    bytes: usize,
    /// What names it to a worker that answers without a token (see `key.rs`).
    key: Option<ItemKey>,
    /// The parts of a chunked answer received so far from its holder (see `chunks.rs`).
    chunks: Assembly,
    /// Its name and version, for workers' filters.
    name: Option<WorkName>,
    /// The past events of a turn that went out without them (`requiresHistoryStreaming`),
    /// for its worker's `StreamInstanceHistory`.
    streamed: Option<Streamed>,
}

/// Where an item stands, for its waiting executor call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Waiting for a worker; `idle_since` is when it has been waiting with no worker
    /// connected at all (`None`: some worker is connected).
    Queued {
        /// See above.
        idle_since: Option<Duration>,
        /// Whether a worker gave it back before (abandoned, or went away with it): such an
        /// item is not answered `Busy` (uncounted) for waiting, so that one that kills every
        /// worker it reaches is still counted toward the give-back limit.
        given_back: bool,
    },
    /// Out at a worker since this time.
    Held {
        /// See above.
        since: Duration,
    },
    /// No longer here (answered, withdrawn, expired).
    Gone,
}

/// Why a work item was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The dispatcher is closed (the endpoint is stopping).
    Closed,
    /// The items already waiting for a worker hold `waiting` bytes: with this one they would
    /// be over `limit` (see `DispatcherSettings::waiting_bytes`).
    Backlog {
        /// See above.
        waiting: usize,
        /// See above.
        limit: usize,
    },
    /// A turn of `bytes`, over the `limit` a worker receives inline, and none of the
    /// connected workers streams history.
    TooLarge {
        /// See above.
        bytes: usize,
        /// See above.
        limit: usize,
    },
}

/// Why a completion or an abandon was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenError {
    /// No item is out under the token.
    Unknown,
    /// The token was issued on this worker stream, which has been closed since (it
    /// disconnected, or stopped reading): its items went to other workers.
    StreamClosed(u64),
    /// The item under the token is of the other kind.
    WrongKind(Kind),
}

/// Why a part of a chunked answer was not taken.
#[derive(Debug)]
pub(crate) enum PartError {
    /// No item is out under its token.
    Token(TokenError),
    /// The part does not fit the parts so far.
    Chunk(ChunkError),
}

/// The dispatcher's state.
#[derive(Debug)]
pub(crate) struct State {
    /// A random prefix: tokens of an earlier process never match this one's.
    token_prefix: String,
    next_token: u64,
    next_item: u64,
    next_worker: u64,
    workers: BTreeMap<u64, Worker>,
    /// Items waiting for a worker, per kind, oldest first.
    queues: [VecDeque<u64>; KINDS],
    items: HashMap<u64, Item>,
    tokens: HashMap<String, u64>,
    /// Since when no worker has been connected (`None`: one is).
    no_worker_since: Option<Duration>,
    /// Where the next search for a worker with room starts (round robin).
    cursor: u64,
    /// After this many give-backs an item is answered [`Reply::GivenUp`].
    give_back_limit: u32,
    /// The bounds of each worker's stream queue.
    bounds: Bounds,
    /// The bytes of the items waiting in `queues` (not out at a worker).
    waiting_bytes: usize,
    /// The most bytes that may wait (one item of any size is taken when none waits).
    waiting_limit: usize,
    /// The largest turn a worker gets inline; a larger one goes only to workers that stream
    /// history, without its past events.
    inline_limit: usize,
    /// The versions of the orchestrations whose turns went out, for their activities' filters.
    versions: OrchestrationVersions,
    /// Items waiting or out now, per kind.
    open: [usize; KINDS],
    /// The most items waiting or out at once, per kind, since the start (for benchmarks).
    peak: [usize; KINDS],
    closed: bool,
}

impl State {
    /// An empty state at monotonic time `now`.
    pub(crate) fn new(now: Duration) -> Self {
        Self {
            token_prefix: uuid::Uuid::new_v4().simple().to_string(),
            next_token: 0,
            next_item: 0,
            next_worker: 0,
            workers: BTreeMap::new(),
            queues: [VecDeque::new(), VecDeque::new(), VecDeque::new()],
            items: HashMap::new(),
            tokens: HashMap::new(),
            no_worker_since: Some(now),
            cursor: 0,
            give_back_limit: 5,
            bounds: Bounds {
                items: usize::MAX,
                bytes: usize::MAX,
            },
            waiting_bytes: 0,
            waiting_limit: usize::MAX,
            inline_limit: usize::MAX,
            versions: OrchestrationVersions::default(),
            open: [0; KINDS],
            peak: [0; KINDS],
            closed: false,
        }
    }

    /// Gives up on an item after `limit` give-backs (at least 1; default 5).
    pub(crate) fn set_give_back_limit(&mut self, limit: u32) {
        self.give_back_limit = limit.max(1);
    }

    /// Bounds each worker's stream queue (default: unbounded).
    pub(crate) fn set_stream_bounds(&mut self, bounds: Bounds) {
        self.bounds = bounds;
    }

    /// Bounds the bytes of the items waiting for a worker (default: unbounded).
    pub(crate) fn set_waiting_limit(&mut self, bytes: usize) {
        self.waiting_limit = bytes;
    }

    /// Sends turns over `bytes` only to workers that stream history (default: unbounded).
    pub(crate) fn set_inline_limit(&mut self, bytes: usize) {
        self.inline_limit = bytes;
    }

    /// The past events of the turn of `instance` out on a stream without them
    /// (`requiresHistoryStreaming`): `None` if no such turn is out.
    /// `execution`: the execution asked for, if the caller named one (another one's turn is
    /// not it).
    pub(crate) fn streamed_past(
        &self,
        instance: &str,
        execution: Option<&str>,
    ) -> Option<EncodedEvents> {
        let key = ItemKey::Orchestration {
            instance: instance.to_owned(),
        };
        self.items
            .values()
            .filter(|i| i.holder.is_some() && i.key.as_ref() == Some(&key))
            .filter_map(|i| i.streamed.as_ref())
            .find(|s| execution.is_none() || s.execution.as_deref() == execution)
            .map(|s| s.past.clone())
    }

    /// The bytes of the items waiting for a worker now.
    #[cfg(test)]
    pub(crate) fn waiting_bytes(&self) -> usize {
        self.waiting_bytes
    }

    /// [`submit_once`](Self::submit_once) with a copy of `request` for every hand-out.
    #[cfg(test)]
    pub(crate) fn submit(
        &mut self,
        kind: Kind,
        request: work_item::Request,
        reply: oneshot::Sender<Reply>,
        now: Duration,
    ) -> Result<u64, Refused> {
        let copy = Outgoing::from(request);
        self.submit_once(
            kind,
            copy.clone(),
            Box::new(move || copy.clone()),
            reply,
            now,
        )
    }

    /// Queues a work item whose `request` moves into its first hand-out; `rebuild` makes it
    /// again for a later one (after a give-back). Refused once closed, and when the items
    /// already waiting for a worker would hold more than the waiting limit with it: the
    /// caller's work goes back to its queue, instead of every turn and activity that finds no
    /// free worker holding its history and input here meanwhile.
    pub(crate) fn submit_once(
        &mut self,
        kind: Kind,
        request: Outgoing,
        rebuild: Rebuild,
        reply: oneshot::Sender<Reply>,
        now: Duration,
    ) -> Result<u64, Refused> {
        if self.closed {
            return Err(Refused::Closed);
        }
        let bytes = request.bytes();
        let key = ItemKey::of_request(&request.request);
        let name = self.versions.name_of(kind, &request);
        if self.waiting_bytes > 0 && self.waiting_bytes.saturating_add(bytes) > self.waiting_limit {
            return Err(Refused::Backlog {
                waiting: self.waiting_bytes,
                limit: self.waiting_limit,
            });
        }
        if kind == Kind::Orchestration && bytes > self.inline_limit {
            // Too large to go whole: only a worker that streams history (and whose filters
            // take it) can have it, and only if what is left without the past events fits.
            let rest = request.request.encoded_len();
            let no_streamer = !self.workers.is_empty()
                && !self
                    .workers
                    .values()
                    .any(|w| w.info.history_streaming && w.info.filters.take(kind, name.as_ref()));
            if rest > self.inline_limit || no_streamer {
                return Err(Refused::TooLarge {
                    bytes,
                    limit: self.inline_limit,
                });
            }
        }
        let id = self.next_item;
        self.next_item += 1;
        self.items.insert(
            id,
            Item {
                kind,
                source: Source {
                    pending: Some(request),
                    rebuild,
                },
                reply: Some(reply),
                queued_at: now,
                holder: None,
                give_backs: 0,
                bytes,
                key,
                chunks: Assembly::default(),
                name,
                streamed: None,
            },
        );
        self.enqueue(kind, id, false);
        if let (Some(open), Some(peak)) = (
            self.open.get_mut(kind.index()),
            self.peak.get_mut(kind.index()),
        ) {
            *open += 1;
            *peak = (*peak).max(*open);
        }
        self.dispatch(now, None);
        Ok(id)
    }

    /// A worker connects with room for `capacity` items of each kind (orchestration,
    /// activity) and none for entities; it gets the waiting items at once. `None` once closed.
    #[cfg(test)]
    pub(crate) fn connect(
        &mut self,
        tx: WorkerTx,
        capacity: [usize; 2],
        now: Duration,
    ) -> Option<u64> {
        let [orchestrations, activities] = capacity;
        self.connect_all(
            tx,
            [orchestrations, activities, 0],
            StreamInfo::default(),
            now,
        )
    }

    /// A worker connects with room for `capacity` items of each kind (orchestration,
    /// activity, entity); it gets the waiting items at once. `None` once closed.
    pub(crate) fn connect_all(
        &mut self,
        tx: WorkerTx,
        capacity: [usize; KINDS],
        info: StreamInfo,
        now: Duration,
    ) -> Option<u64> {
        if self.closed {
            return None;
        }
        let id = self.next_worker;
        self.next_worker += 1;
        self.workers.insert(
            id,
            Worker {
                tx,
                info,
                capacity,
                held: [0; KINDS],
            },
        );
        self.no_worker_since = None;
        self.dispatch(now, None);
        Some(id)
    }

    /// A worker's stream ended: the items it held go back to the front of their queues and
    /// to the other workers at once.
    pub(crate) fn disconnect(&mut self, worker: u64, now: Duration) {
        let Some(gone) = self.workers.remove(&worker) else {
            return;
        };
        gone.tx.close(None);
        self.requeue_held_by(worker, now);
        if self.workers.is_empty() {
            self.no_worker_since = Some(now);
        }
        self.dispatch(now, None);
    }

    /// The answer to the item out under `token`, if it is of `kind`: the item is done and
    /// its worker has room again. Returns where to send the answer.
    pub(crate) fn complete(
        &mut self,
        token: &str,
        kind: Kind,
        now: Duration,
    ) -> Result<oneshot::Sender<Reply>, TokenError> {
        let id = self.item_of(token, kind)?;
        let item = self.remove(id, None).ok_or(TokenError::Unknown)?;
        self.dispatch(now, None);
        item.reply.ok_or(TokenError::Unknown)
    }

    /// Adds `part` of a chunked answer to the orchestration item out under `token`:
    /// `Ok(Some(answer))` when it was the last (complete it with [`complete`](Self::complete)),
    /// `Ok(None)` while more are to come.
    pub(crate) fn add_part(
        &mut self,
        token: &str,
        part: OrchestratorResponse,
        limits: ChunkLimits,
    ) -> Result<Option<OrchestratorResponse>, PartError> {
        let id = self
            .item_of(token, Kind::Orchestration)
            .map_err(PartError::Token)?;
        let item = self
            .items
            .get_mut(&id)
            .ok_or(PartError::Token(TokenError::Unknown))?;
        item.chunks.add(part, limits).map_err(PartError::Chunk)
    }

    /// The worker gives the item under `token` back: it goes to the front of its queue and,
    /// if another worker has room, to that one at once (unless it was given back too often:
    /// then its call is answered [`Reply::GivenUp`]).
    pub(crate) fn abandon(
        &mut self,
        token: &str,
        kind: Kind,
        now: Duration,
    ) -> Result<(), TokenError> {
        let id = self.item_of(token, kind)?;
        let worker = self.release(id, Some(now));
        self.give_back(id, "abandoned by its SDK worker", now);
        self.dispatch(now, worker);
        Ok(())
    }

    /// Puts item `id` (held by nobody now) back at the front of its queue, or gives up on it
    /// after the limit.
    fn give_back(&mut self, id: u64, why: &str, now: Duration) {
        let limit = self.give_back_limit;
        let Some(item) = self.items.get_mut(&id) else {
            return;
        };
        item.give_backs += 1;
        item.queued_at = now;
        let (kind, n) = (item.kind, item.give_backs);
        if n >= limit {
            if let Some(mut item) = self.remove(id, None) {
                if let Some(tx) = item.reply.take() {
                    let _ = tx.send(Reply::GivenUp(format!(
                        "{why}, given back {n} times (the limit)"
                    )));
                }
            }
        } else {
            self.enqueue(kind, id, true);
        }
    }

    /// The executor call of `id` gave up on it (its future was dropped, or it timed out): it
    /// is not handed out any more, and a completion under its token is refused.
    pub(crate) fn withdraw(&mut self, id: u64, now: Duration) {
        if self.remove(id, Some(now)).is_some() {
            self.dispatch(now, None);
        }
    }

    /// Where item `id` stands.
    pub(crate) fn standing(&self, id: u64) -> Standing {
        match self.items.get(&id) {
            None => Standing::Gone,
            Some(Item {
                holder: Some(h), ..
            }) => Standing::Held { since: h.since },
            Some(item) => Standing::Queued {
                given_back: item.give_backs > 0,
                idle_since: match self.no_worker_since {
                    Some(s) => Some(s.max(item.queued_at)),
                    // Workers are connected, but none of them takes it: as if none were.
                    None if !self.someone_takes(item) => Some(item.queued_at),
                    None => None,
                },
            },
        }
    }

    /// A health ping to `worker` (unless items wait unread on its stream: they say as much);
    /// false if it is gone.
    pub(crate) fn ping(&self, worker: u64, now: Duration) -> bool {
        self.workers.get(&worker).is_some_and(|w| {
            if !w.info.health_pings || w.tx.unread().0 > 0 {
                return true;
            }
            w.tx.push(
                OutgoingWorkItem::from(WorkItem {
                    request: Some(work_item::Request::HealthPing(crate::proto::HealthPing {})),
                    completion_token: String::new(),
                }),
                None,
                now,
            )
            .is_ok()
        })
    }

    /// Closes `worker`'s stream if it has left items unread for `timeout` or longer: the
    /// items it holds go to the other workers at once. True if it was closed (or is gone).
    pub(crate) fn close_if_stalled(
        &mut self,
        worker: u64,
        timeout: Duration,
        now: Duration,
    ) -> bool {
        let Some(w) = self.workers.get(&worker) else {
            return true;
        };
        let (unread, since) = w.tx.unread();
        let Some(since) = since.filter(|s| now.saturating_sub(*s) >= timeout) else {
            return false;
        };
        tracing::warn!(
            worker,
            unread,
            seconds = timeout.as_secs(),
            "an SDK worker's stream read nothing for the stream read timeout; closing it"
        );
        if let Some(gone) = self.workers.remove(&worker) {
            gone.tx.close(Some(Status::unavailable(format!(
                "GetWorkItems: this stream left {unread} work items unread for {}s (the stream \
                 read timeout, grpc_stream_read_timeout; unread since {}s ago); it is closed \
                 and its work items went to other workers: reconnect and read the stream",
                timeout.as_secs(),
                now.saturating_sub(since).as_secs()
            ))));
        }
        self.requeue_held_by(worker, now);
        if self.workers.is_empty() {
            self.no_worker_since = Some(now);
        }
        self.dispatch(now, None);
        true
    }

    /// Whether a connected worker's filters take `item`.
    fn someone_takes(&self, item: &Item) -> bool {
        self.workers
            .values()
            .any(|w| w.info.filters.take(item.kind, item.name.as_ref()))
    }

    /// The items waiting because no connected worker's filters take them (every waiting item
    /// when no worker is connected), by kind, with the names they wait for (most items first,
    /// bounded). Walks the queues: for the surfaces that show it, not the hand-out path.
    pub(crate) fn unmatched(&self) -> UnmatchedWork {
        let mut out = UnmatchedWork {
            workers: self.workers.len(),
            ..UnmatchedWork::default()
        };
        let mut names: HashMap<(WorkKind, &str, Option<&str>), usize> = HashMap::new();
        for kind in [Kind::Orchestration, Kind::Activity, Kind::Entity] {
            let Some(queue) = self.queues.get(kind.index()) else {
                continue;
            };
            let waiting = queue
                .iter()
                .filter_map(|id| self.items.get(id))
                .filter(|item| item.holder.is_none() && !self.someone_takes(item));
            let mut n = 0usize;
            for item in waiting {
                n += 1;
                let (name, version) = item
                    .name
                    .as_ref()
                    .map_or(("", None), |w| (w.name.as_str(), w.version.as_deref()));
                *names.entry((kind.work_kind(), name, version)).or_default() += 1;
            }
            match kind {
                Kind::Orchestration => out.orchestrations = n,
                Kind::Activity => out.activities = n,
                Kind::Entity => out.entities = n,
            }
        }
        let mut listed: Vec<UnmatchedName> = names
            .into_iter()
            .map(|((kind, name, version), items)| UnmatchedName {
                kind,
                name: name.to_owned(),
                version: version.map(str::to_owned),
                items,
            })
            .collect();
        listed.sort_by(|a, b| {
            b.items
                .cmp(&a.items)
                .then(a.kind.cmp(&b.kind))
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.version.cmp(&b.version))
        });
        out.omitted = listed.len().saturating_sub(UnmatchedWork::MAX_NAMES);
        listed.truncate(UnmatchedWork::MAX_NAMES);
        out.names = listed;
        out
    }

    /// How many items wait unread on each worker's stream.
    pub(crate) fn unread(&self) -> Vec<(u64, usize)> {
        self.workers
            .iter()
            .map(|(id, w)| (*id, w.tx.unread().0))
            .collect()
    }

    /// A worker's stream read an item from a full queue: hand it more.
    pub(crate) fn made_room(&mut self, now: Duration) {
        self.dispatch(now, None);
    }

    /// Ends every worker's stream and every waiting executor call (their answer channels
    /// close); nothing is handed out any more.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        for w in self.workers.values() {
            w.tx.close(None);
        }
        self.workers.clear();
        self.items.clear();
        self.tokens.clear();
        self.queues = [VecDeque::new(), VecDeque::new(), VecDeque::new()];
        self.open = [0; KINDS];
    }

    /// The most orchestration and activity items waiting or out at once so far.
    pub(crate) fn peak(&self) -> [usize; 2] {
        [self.peak[0], self.peak[1]]
    }

    /// How many workers are connected.
    pub(crate) fn connected(&self) -> usize {
        self.workers.len()
    }

    /// How many items of each kind `worker` holds (tests).
    #[cfg(test)]
    pub(crate) fn held(&self, worker: u64) -> [usize; 2] {
        self.workers
            .get(&worker)
            .map_or([0, 0], |w| [w.held[0], w.held[1]])
    }

    /// How many entity items `worker` holds (tests).
    #[cfg(test)]
    pub(crate) fn held_entities(&self, worker: u64) -> usize {
        self.workers.get(&worker).map_or(0, |w| w.held[2])
    }

    /// Puts item `id` in its queue (at the front: a give-back), counting its bytes.
    fn enqueue(&mut self, kind: Kind, id: u64, front: bool) {
        let bytes = self.items.get(&id).map_or(0, |i| i.bytes);
        self.waiting_bytes = self.waiting_bytes.saturating_add(bytes);
        let queue = self.queue_mut(kind);
        if front {
            queue.push_front(id);
        } else {
            queue.push_back(id);
        }
    }

    /// Takes the item at `at` in `kind`'s queue out of it (it goes out to a worker).
    fn dequeue_at(&mut self, kind: Kind, at: usize) {
        if let Some(id) = self.queue_mut(kind).remove(at) {
            let bytes = self.items.get(&id).map_or(0, |i| i.bytes);
            self.waiting_bytes = self.waiting_bytes.saturating_sub(bytes);
        }
    }

    fn queue_mut(&mut self, kind: Kind) -> &mut VecDeque<u64> {
        match kind {
            Kind::Orchestration => &mut self.queues[0],
            Kind::Activity => &mut self.queues[1],
            Kind::Entity => &mut self.queues[2],
        }
    }

    /// The item out under `token`: only while the stream the token was issued on holds it.
    fn item_of(&self, token: &str, kind: Kind) -> Result<u64, TokenError> {
        let Some(&id) = self.tokens.get(token) else {
            return Err(match self.stream_of(token) {
                Some(w) if !self.workers.contains_key(&w) => TokenError::StreamClosed(w),
                _ => TokenError::Unknown,
            });
        };
        match self.items.get(&id) {
            Some(item) if item.holder.as_ref().is_some_and(|h| h.token == token) => {
                if item.kind == kind {
                    Ok(id)
                } else {
                    Err(TokenError::WrongKind(item.kind))
                }
            }
            _ => Err(TokenError::Unknown),
        }
    }

    /// The token of the `kind` item named `key` that a stream on `connection` holds (the
    /// one handed out first if several are); for a worker that answers without a token.
    pub(crate) fn token_on_connection(
        &self,
        connection: u64,
        kind: Kind,
        key: &ItemKey,
    ) -> Option<String> {
        self.items
            .values()
            .filter(|item| item.kind == kind && item.key.as_ref() == Some(key))
            .filter_map(|item| item.holder.as_ref())
            .filter(|h| {
                self.workers
                    .get(&h.worker)
                    .is_some_and(|w| w.info.connection == Some(connection))
            })
            .min_by_key(|h| h.since)
            .map(|h| h.token.clone())
    }

    /// The token of the entity batch that a stream on `connection` holds, for an answer
    /// without a token whose `operationInfos` list `answered` (see `key.rs`): `Ok(None)` if
    /// the connection's streams hold none that fits (late), `Err(n)` if `n` (two or more) fit
    /// and nothing tells them apart.
    pub(crate) fn entity_token_on_connection(
        &self,
        connection: u64,
        answered: &[String],
    ) -> Result<Option<String>, usize> {
        let mut fits = self
            .items
            .values()
            .filter(|item| item.kind == Kind::Entity)
            .filter(|item| {
                item.key
                    .as_ref()
                    .is_some_and(|k| k.answers_entity(answered))
            })
            .filter_map(|item| item.holder.as_ref())
            .filter(|h| {
                self.workers
                    .get(&h.worker)
                    .is_some_and(|w| w.info.connection == Some(connection))
            });
        let Some(first) = fits.next() else {
            return Ok(None);
        };
        match fits.count() {
            0 => Ok(Some(first.token.clone())),
            more => Err(more + 1),
        }
    }

    /// The stream a token of this dispatcher was issued on (`PREFIX-STREAM-N`).
    fn stream_of(&self, token: &str) -> Option<u64> {
        let rest = token
            .strip_prefix(self.token_prefix.as_str())?
            .strip_prefix('-')?;
        let (stream, n) = rest.split_once('-')?;
        n.parse::<u64>().ok()?;
        stream.parse().ok()
    }

    /// Takes item `id` from its holder (who gets room back); returns the holder.
    /// `unread_at`: the time, if the item may still be unread on its stream (it was not
    /// answered): it is taken out of the stream's queue.
    fn release(&mut self, id: u64, unread_at: Option<Duration>) -> Option<u64> {
        let item = self.items.get_mut(&id)?;
        let held = item.holder.take()?;
        // Parts of an answer from this holder count for nothing now, and its streamed past
        // is of no more use (a next hand-out builds the request again).
        item.chunks = Assembly::default();
        item.streamed = None;
        self.tokens.remove(&held.token);
        let slot = item.kind.index();
        if let Some(w) = self.workers.get_mut(&held.worker) {
            if let Some(n) = w.held.get_mut(slot) {
                *n = n.saturating_sub(1);
            }
            // Taken back unread (timed out, withdrawn, abandoned): it leaves the stream, so
            // a later hand-out never queues it twice there.
            if let Some(now) = unread_at {
                w.tx.remove(id, now);
            }
        }
        Some(held.worker)
    }

    /// Removes item `id` wherever it is (`unread_at`: see [`release`](Self::release)).
    fn remove(&mut self, id: u64, unread_at: Option<Duration>) -> Option<Item> {
        // An item out at a worker is in no queue: only a waiting one needs the (linear) search.
        let waiting = self.items.get(&id).is_some_and(|i| i.holder.is_none());
        self.release(id, unread_at);
        let item = self.items.remove(&id)?;
        if let Some(open) = self.open.get_mut(item.kind.index()) {
            *open = open.saturating_sub(1);
        }
        if waiting {
            self.queue_mut(item.kind).retain(|i| *i != id);
            self.waiting_bytes = self.waiting_bytes.saturating_sub(item.bytes);
        }
        Some(item)
    }

    fn requeue_held_by(&mut self, worker: u64, now: Duration) {
        let mut held: Vec<(u64, Kind)> = self
            .items
            .iter()
            .filter(|(_, item)| item.holder.as_ref().is_some_and(|h| h.worker == worker))
            .map(|(id, item)| (*id, item.kind))
            .collect();
        // Oldest last, so that pushing each to the front keeps the oldest first.
        held.sort_unstable_by_key(|h| std::cmp::Reverse(h.0));
        for (id, _) in held {
            if let Some(item) = self.items.get_mut(&id) {
                if let Some(h) = item.holder.take() {
                    self.tokens.remove(&h.token);
                }
                // As `release`: its holder's parts and streamed past count for nothing now.
                item.chunks = Assembly::default();
                item.streamed = None;
            }
            self.give_back(id, "its SDK worker went away while it held it", now);
        }
    }

    /// Hands out waiting items to workers with room, round robin, `avoid` last. An item no
    /// worker with room takes (their filters) stays, and the ones behind it are looked at.
    fn dispatch(&mut self, now: Duration, avoid: Option<u64>) {
        for kind in [Kind::Orchestration, Kind::Activity, Kind::Entity] {
            let mut at = 0;
            while let Some(&id) = self.queue_mut(kind).get(at) {
                let Some(item) = self.items.get(&id) else {
                    // Not an item any more (never left behind by `remove`): drop its place.
                    self.dequeue_at(kind, at);
                    continue;
                };
                let Some(worker) = self.worker_with_room(kind, avoid, item) else {
                    if !self.anyone_has_room(kind) {
                        // Nobody has room: nothing behind it goes out either.
                        break;
                    }
                    // Whoever has room does not take it (filters): look behind it.
                    at += 1;
                    continue;
                };
                self.cursor = worker + 1;
                self.dequeue_at(kind, at);
                if !self.hand_out(id, worker, now) {
                    // Its stream is gone: put the item back and drop the worker.
                    self.enqueue(kind, id, true);
                    self.disconnect_quietly(worker, now);
                    at = 0;
                }
            }
        }
    }

    /// Whether some worker has room for an item of `kind` (whatever its filters take).
    fn anyone_has_room(&self, kind: Kind) -> bool {
        let bounds = self.bounds;
        self.workers.values().any(|w| w.has_room(kind, bounds))
    }

    /// The worker that gets `item` of `kind` next (round robin from the cursor, `avoid`
    /// last): room, filters that take it, and history streaming if it is too large to go
    /// whole. The caller moves the cursor past the one it hands the item to.
    fn worker_with_room(&self, kind: Kind, avoid: Option<u64>, item: &Item) -> Option<u64> {
        let bounds = self.bounds;
        let inline_limit = self.inline_limit;
        let takes = |w: &Worker| {
            w.has_room(kind, bounds)
                && w.info.filters.take(kind, item.name.as_ref())
                && (item.bytes <= inline_limit || w.info.history_streaming)
        };
        let order = self
            .workers
            .range(self.cursor..)
            .chain(self.workers.range(..self.cursor));
        let mut fallback = None;
        let mut found = None;
        for (id, w) in order {
            if !takes(w) {
                continue;
            }
            if Some(*id) == avoid {
                fallback = Some(*id);
                continue;
            }
            found = Some(*id);
            break;
        }
        found.or(fallback)
    }

    fn hand_out(&mut self, id: u64, worker: u64, now: Duration) -> bool {
        // The token names the stream it is issued on (see `item_of`).
        let token = format!("{}-{worker}-{}", self.token_prefix, self.next_token);
        self.next_token += 1;
        let Some(item) = self.items.get_mut(&id) else {
            return true;
        };
        let Some(w) = self.workers.get_mut(&worker) else {
            return false;
        };
        let Outgoing {
            mut request,
            mut past,
            name,
        } = item.source.take();
        if w.info.history_streaming && item.bytes > self.inline_limit {
            if let work_item::Request::OrchestratorRequest(r) = &mut request {
                // Too large to go inline: the worker reads the past with
                // `StreamInstanceHistory` (`streaming.rs`).
                r.requires_history_streaming = true;
                item.streamed = Some(Streamed {
                    execution: r.execution_id.clone(),
                    past: std::mem::take(&mut past),
                });
            }
        }
        let sent = w.tx.push(
            OutgoingWorkItem {
                item: WorkItem {
                    request: Some(request),
                    completion_token: token.clone(),
                },
                past,
            },
            Some(id),
            now,
        );
        if let Err(unsent) = sent {
            if let OutgoingWorkItem {
                item:
                    WorkItem {
                        request: Some(mut request),
                        ..
                    },
                mut past,
            } = *unsent
            {
                // Not sent: the next hand-out sends it, as it was built.
                if let Some(streamed) = item.streamed.take() {
                    past = streamed.past;
                    if let work_item::Request::OrchestratorRequest(r) = &mut request {
                        r.requires_history_streaming = false;
                    }
                }
                item.source.pending = Some(Outgoing {
                    request,
                    past,
                    name,
                });
            }
            return false;
        }
        if let Some(n) = w.held.get_mut(item.kind.index()) {
            *n += 1;
        }
        item.holder = Some(Held {
            worker,
            token: token.clone(),
            since: now,
        });
        self.tokens.insert(token, id);
        true
    }

    /// Like [`disconnect`](Self::disconnect) without dispatching (the caller is).
    fn disconnect_quietly(&mut self, worker: u64, now: Duration) {
        if let Some(gone) = self.workers.remove(&worker) {
            gone.tx.close(None);
            self.requeue_held_by(worker, now);
            if self.workers.is_empty() {
                self.no_worker_since = Some(now);
            }
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
