//! The worker half of the gRPC service over the [`Dispatcher`]: `GetWorkItems`,
//! `Complete*Task`, `Abandon*WorkItem`. A completion or abandon under a token nobody holds
//! (completed already, withdrawn, timed out, or handed to another worker since) answers
//! `NOT_FOUND` — naming the stream the token was issued on when that stream has been closed
//! since; under the token of the other kind of item, `FAILED_PRECONDITION`.
//!
//! What "a token is bound to its stream" means here: completions are unary calls, not
//! messages on the `GetWorkItems` stream (an SDK may send them on another HTTP/2 connection,
//! and nothing in a unary call names a stream), so the caller's stream cannot be checked.
//! Instead each token names the stream it was issued on, and it is taken only while that
//! stream is open and still holds the item under that very token: once the stream closes
//! (disconnected, or closed for not reading) or the item is taken back (timed out, abandoned,
//! withdrawn), the item goes out again under a new token on another stream, and the old
//! token is refused — a late answer from the old stream never completes the item twice.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::chunks::{self, ChunkError};
use super::key::ItemKey;
use super::profile::profile;
use super::queue::StreamQueue;
use super::state::{Kind, PartError, Reply, TokenError};
use super::stream::{watch, WorkerStream};
use super::Dispatcher;
use crate::library::Library;
use crate::proto::{
    AbandonActivityTaskRequest, AbandonActivityTaskResponse, AbandonEntityTaskRequest,
    AbandonEntityTaskResponse, AbandonOrchestrationTaskRequest, AbandonOrchestrationTaskResponse,
    ActivityResponse, CompleteTaskResponse, EntityBatchResult, GetWorkItemsRequest, HistoryChunk,
    OrchestratorResponse,
};
use crate::service::{WorkItemStream, WorkerCalls};

fn token_of(token: &str) -> Result<&str, Status> {
    if token.is_empty() {
        Err(Status::invalid_argument(
            "completionToken: missing (send back the token of the work item)",
        ))
    } else {
        Ok(token)
    }
}

/// The connection a call came on (see `key.rs`).
fn connection_of<T>(request: &Request<T>) -> Option<u64> {
    request
        .extensions()
        .get::<taskhub_listen::ConnectionHandle>()
        .map(taskhub_listen::ConnectionHandle::id)
}

fn refused(e: &TokenError, token: &str, kind: Kind) -> Status {
    match e {
        TokenError::StreamClosed(stream) => Status::not_found(format!(
            "completionToken '{token}': it was issued on work-item stream {stream}, which has \
             been closed since (it disconnected, or left its work items unread for \
             grpc_stream_read_timeout); its {} work item went to another worker, whose \
             answer counts",
            kind.name()
        )),
        TokenError::Unknown => Status::not_found(format!(
            "completionToken '{token}': no {} work item is out under this token (it was \
             answered already, withdrawn because its partition moved, timed out, or given to \
             another worker)",
            kind.name()
        )),
        TokenError::WrongKind(actual) => Status::failed_precondition(format!(
            "completionToken '{token}' is the token of an {} work item, not of an {} one",
            actual.name(),
            kind.name()
        )),
    }
}

impl Dispatcher {
    fn deliver(&self, token: &str, kind: Kind, reply: Reply) -> Result<(), Status> {
        let now = self.inner.clock.monotonic();
        let tx = self
            .inner
            .lock()
            .complete(token, kind, now)
            .map_err(|e| refused(&e, token, kind))?;
        // The waiting call may have gone between the lookup and now: the answer is refused.
        tx.send(reply)
            .map_err(|_| refused(&TokenError::Unknown, token, kind))
    }

    /// The token of the completion `token` (as sent) for `key`: itself, or when empty (a
    /// worker whose protos have no token: see `key.rs`), the token of the item named `key`
    /// that a stream on `connection` holds. `Ok(None)`: a late answer without a token (its
    /// item timed out, was withdrawn or went to another stream): such a worker cannot tell one
    /// attempt from another, and an error would only break its loop (the Java SDK 1.5.0 leaves
    /// its stream on any error from a completion and reconnects after 5 s), so the answer is
    /// taken and dropped, and logged.
    fn token_or_match(
        &self,
        token: &str,
        connection: Option<u64>,
        kind: Kind,
        key: &ItemKey,
    ) -> Result<Option<String>, Status> {
        if !token.is_empty() {
            return Ok(Some(token.to_owned()));
        }
        let (Some(connection), false) = (connection, key.instance().is_empty()) else {
            return Err(Status::invalid_argument(
                "completionToken: missing (send back the token of the work item, or at least \
                 the instanceId and, for an activity, the taskId it names)",
            ));
        };
        let found = self.inner.lock().token_on_connection(connection, kind, key);
        if found.is_none() {
            tracing::warn!(
                connection,
                "an answer without a completion token for {} matches no {} work item out on this \
                 connection's streams (late: it timed out, was withdrawn or went to another \
                 worker); dropped",
                key.describe(),
                kind.name()
            );
        }
        Ok(found)
    }

    /// The token of the entity batch an answer without a token `r` completes: the one a
    /// stream on `connection` holds (among several, the one whose operations `r`'s
    /// `operationInfos` name); `Ok(None)` when none is held there (late: dropped, as above).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the call's connection is unknown, when `r` answers no
    /// operation, or when its streams hold several batches and nothing in `r` tells which it
    /// answers.
    fn entity_token_or_match(
        &self,
        connection: Option<u64>,
        r: &EntityBatchResult,
    ) -> Result<Option<String>, Status> {
        let Some(connection) = connection else {
            return Err(Status::invalid_argument(
                "completionToken: missing (send back the token of the entity work item)",
            ));
        };
        // A batch has at least one operation: an answer with neither a token nor a result
        // answers nothing (as an orchestration's answer with neither token nor instance).
        if r.results.is_empty() && r.operation_infos.is_empty() {
            return Err(Status::invalid_argument(
                "completionToken: missing, and the result answers no operation (no results, no                  operationInfos): send back the token of the entity work item",
            ));
        }
        let answered: Vec<String> = r
            .operation_infos
            .iter()
            .map(|i| i.request_id.clone())
            .collect();
        let found = self
            .inner
            .lock()
            .entity_token_on_connection(connection, &answered)
            .map_err(|held| {
                Status::invalid_argument(format!(
                    "completionToken: missing, and the work-item streams of this connection \
                     hold {held} entity batches: an EntityBatchResult names no entity, and \
                     this one lists no operationInfos (request IDs) that tell which batch it \
                     answers; send back the work item's completionToken (entityRequestV2 \
                     carries one), or hold one entity batch at a time \
                     (maxConcurrentEntityWorkItems: 1)"
                ))
            })?;
        if found.is_none() {
            tracing::warn!(
                connection,
                "an entity batch result without a completion token matches no entity batch out \
                 on this connection's streams (late: it timed out, was withdrawn or went to \
                 another worker); dropped"
            );
        }
        Ok(found)
    }

    /// Delivers `reply` (of `kind`, named `key`, sent under token `sent`: maybe none) to its
    /// item; a late answer without a token is dropped (see `token_or_match`).
    fn answer(
        &self,
        sent: &str,
        connection: Option<u64>,
        (kind, key): (Kind, &ItemKey),
        reply: Reply,
    ) -> Result<(), Status> {
        let Some(token) = self.token_or_match(sent, connection, kind, key)? else {
            return Ok(());
        };
        match self.deliver(&token, kind, reply) {
            // Its call went between the match and now: late, as above.
            Err(_) if sent.is_empty() => Ok(()),
            other => other,
        }
    }

    /// Adds a part of a chunked answer to the item out under `token`; the whole answer once
    /// the last part is in.
    fn add_part(
        &self,
        token: &str,
        part: OrchestratorResponse,
    ) -> Result<Option<OrchestratorResponse>, Status> {
        let limits = self.inner.settings.chunk_limits();
        self.inner
            .lock()
            .add_part(token, part, limits)
            .map_err(|e| match e {
                PartError::Token(e) => refused(&e, token, Kind::Orchestration),
                PartError::Chunk(e @ ChunkError::TooLarge { .. }) => {
                    Status::resource_exhausted(e.to_string())
                }
                PartError::Chunk(e) => Status::failed_precondition(e.to_string()),
            })
    }

    fn give_back(&self, token: &str, kind: Kind) -> Result<(), Status> {
        let token = token_of(token)?;
        let now = self.inner.clock.monotonic();
        self.inner
            .lock()
            .abandon(token, kind, now)
            .map_err(|e| refused(&e, token, kind))
    }
}

#[tonic::async_trait]
impl WorkerCalls for Dispatcher {
    async fn get_work_items(
        &self,
        request: Request<GetWorkItemsRequest>,
    ) -> Result<Response<WorkItemStream>, Status> {
        let connection = connection_of(&request);
        let p = profile(
            request.get_ref(),
            request.metadata(),
            connection,
            &self.inner.settings,
        )
        .map_err(Status::invalid_argument)?;
        let caps = p.capacity;
        let queue = Arc::new(StreamQueue::default());
        let now = self.inner.clock.monotonic();
        let worker = self
            .inner
            .lock()
            .connect_all(Arc::clone(&queue), caps, p.info.clone(), now)
            .ok_or_else(|| {
                Status::unavailable("the gRPC endpoint is shutting down: connect to another one")
            })?;
        tracing::info!(
            worker,
            orchestrations = caps[0],
            activities = caps[1],
            entities = caps[2],
            health_pings = p.info.health_pings,
            filtered = p.info.filters.any(),
            "SDK worker connected"
        );
        tokio::spawn(watch(Arc::clone(&self.inner), worker));
        let stream = WorkerStream {
            queue,
            inner: Arc::clone(&self.inner),
            worker,
            no_rewind_events: Library::of(request.metadata()) != Library::Other,
        };
        Ok(Response::new(Box::pin(stream)))
    }

    async fn complete_orchestrator_task(
        &self,
        request: Request<OrchestratorResponse>,
    ) -> Result<Response<CompleteTaskResponse>, Status> {
        let connection = connection_of(&request);
        let r = request.into_inner();
        let key = ItemKey::of_orchestrator_response(&r);
        let sent = r.completion_token.clone();
        let r = if chunks::is_part(&r) {
            let Some(token) = self.token_or_match(&sent, connection, Kind::Orchestration, &key)?
            else {
                return Ok(Response::new(CompleteTaskResponse {}));
            };
            match self.add_part(&token, r)? {
                Some(whole) => whole,
                None => return Ok(Response::new(CompleteTaskResponse {})),
            }
        } else {
            r
        };
        self.answer(
            &sent,
            connection,
            (Kind::Orchestration, &key),
            Reply::Orchestrator(r),
        )?;
        Ok(Response::new(CompleteTaskResponse {}))
    }

    async fn complete_activity_task(
        &self,
        request: Request<ActivityResponse>,
    ) -> Result<Response<CompleteTaskResponse>, Status> {
        let connection = connection_of(&request);
        let r = request.into_inner();
        let key = ItemKey::of_activity_response(&r);
        let sent = r.completion_token.clone();
        self.answer(
            &sent,
            connection,
            (Kind::Activity, &key),
            Reply::Activity(r),
        )?;
        Ok(Response::new(CompleteTaskResponse {}))
    }

    async fn complete_entity_task(
        &self,
        request: Request<EntityBatchResult>,
    ) -> Result<Response<CompleteTaskResponse>, Status> {
        let connection = connection_of(&request);
        let r = request.into_inner();
        if !r.completion_token.is_empty() {
            let token = r.completion_token.clone();
            self.deliver(&token, Kind::Entity, Reply::Entity(r))?;
            return Ok(Response::new(CompleteTaskResponse {}));
        }
        // Without a token (the .NET worker's older `entityRequest` path: see `key.rs`).
        let Some(token) = self.entity_token_or_match(connection, &r)? else {
            return Ok(Response::new(CompleteTaskResponse {}));
        };
        // Its call may have gone between the match and now: late, dropped.
        let _ = self.deliver(&token, Kind::Entity, Reply::Entity(r));
        Ok(Response::new(CompleteTaskResponse {}))
    }

    async fn abandon_orchestrator(
        &self,
        request: Request<AbandonOrchestrationTaskRequest>,
    ) -> Result<Response<AbandonOrchestrationTaskResponse>, Status> {
        self.give_back(&request.get_ref().completion_token, Kind::Orchestration)?;
        Ok(Response::new(AbandonOrchestrationTaskResponse {}))
    }

    async fn abandon_activity(
        &self,
        request: Request<AbandonActivityTaskRequest>,
    ) -> Result<Response<AbandonActivityTaskResponse>, Status> {
        self.give_back(&request.get_ref().completion_token, Kind::Activity)?;
        Ok(Response::new(AbandonActivityTaskResponse {}))
    }

    async fn abandon_entity(
        &self,
        request: Request<AbandonEntityTaskRequest>,
    ) -> Result<Response<AbandonEntityTaskResponse>, Status> {
        self.give_back(&request.get_ref().completion_token, Kind::Entity)?;
        Ok(Response::new(AbandonEntityTaskResponse {}))
    }

    fn streamed_history(
        &self,
        instance: &str,
        execution: Option<&str>,
    ) -> Result<Option<Vec<HistoryChunk>>, Status> {
        self.streamed_chunks(instance, execution)
    }
}
