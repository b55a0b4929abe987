//! One HTTP request to Azure Storage (HTTPS, or plain HTTP for Azurite): Shared Key signing or
//! an Entra ID bearer token, retries with back-off on throttling and transient failures, and
//! the mapping of failures onto [`StorageError`].

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use taskhub_storage::backoff::{Backoff, Jitter};
use taskhub_storage::{StorageError, StorageResult};

use crate::connection::StorageAccount;
use crate::counters::{OpCounters, OpKind};
use crate::credential::Credential;
use crate::date::now_rfc1123;
use crate::signing::{self, ToSign};
use crate::tls::{self, Connector};
use crate::token::TokenSource;

/// The `x-ms-version` sent on every request (bearer tokens need 2017-11-09 or later).
pub(crate) const API_VERSION: &str = "2021-12-02";
/// How long creating an object whose name is still being deleted is retried (real Azure
/// Storage holds a deleted table's name for up to about a minute).
const BEING_DELETED_WAIT: Duration = Duration::from_secs(120);
/// The retry back-off of a request: 25 ms doubling to 2 s, each retry waiting a random time in
/// the upper half of its step, so that clients throttled at the same moment (every worker of a
/// hub, after one 503) spread their retries; the attempts and deadline are its [`Patience`]'s.
const REQUEST_RETRY: Backoff =
    Backoff::new(Duration::from_millis(25), Duration::from_secs(2)).jitter(Jitter::UPPER_HALF);
/// Creating an object whose name is still being deleted: 200 ms doubling to 5 s, jittered as
/// [`REQUEST_RETRY`], for up to [`BEING_DELETED_WAIT`].
const BEING_DELETED_RETRY: Backoff =
    Backoff::new(Duration::from_millis(200), Duration::from_secs(5))
        .jitter(Jitter::UPPER_HALF)
        .deadline(BEING_DELETED_WAIT);

/// How long a request may take, retries included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Patience {
    /// Attempts (the first plus retries).
    pub attempts: u32,
    /// One attempt's time limit (connecting, sending, the whole response).
    pub attempt_timeout: Duration,
    /// The time limit of all attempts together.
    pub deadline: Duration,
}

/// Every request but the first of [`AzureStore::open`](crate::AzureStore::open): throttling
/// and transient failures are retried for up to a minute and a half.
pub(crate) const NORMAL: Patience = Patience {
    attempts: 6,
    attempt_timeout: Duration::from_secs(30),
    deadline: Duration::from_secs(90),
};

/// How long one call of the lease manager on the partitions table (the lease table read,
/// a renewal, a claim) may take, retries included: 2 s, as the original provider bounds its
/// lease requests. One request that hangs then costs the lease loop 2 s, not the 90 s other
/// requests may take (longer than a lease): the call fails, the manager counts the failure
/// as a gap in its observation (DESIGN invariant 7), and renews at its next pass.
pub const LEASE_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Requests of the lease manager (see [`LEASE_REQUEST_TIMEOUT`]): transient failures answered
/// at once are retried within the bound; a request without an answer is not.
pub(crate) const LEASE: Patience = Patience {
    attempts: 3,
    attempt_timeout: LEASE_REQUEST_TIMEOUT,
    deadline: LEASE_REQUEST_TIMEOUT,
};

/// The first request of opening a hub: an endpoint that does not answer is reported within
/// seconds (a wrong address, a firewall dropping packets, a stopped emulator).
pub(crate) const PROBE: Patience = Patience {
    attempts: 2,
    attempt_timeout: Duration::from_secs(10),
    deadline: Duration::from_secs(15),
};

/// Which service a request goes to (they sign differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Blob,
    Queue,
    Table,
}

/// A request, built by the service modules.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub service: Service,
    pub method: &'static str,
    /// Path after the endpoint, already percent-encoded, starting with `/`.
    pub path: String,
    /// Query parameters (not encoded).
    pub query: Vec<(&'static str, String)>,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

impl Req {
    pub(crate) fn new(service: Service, method: &'static str, path: String) -> Self {
        Self {
            service,
            method,
            path,
            query: Vec::new(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    pub(crate) fn query(mut self, k: &'static str, v: impl Into<String>) -> Self {
        self.query.push((k, v.into()));
        self
    }

    pub(crate) fn header(mut self, k: &'static str, v: impl Into<String>) -> Self {
        self.headers.push((k, v.into()));
        self
    }

    pub(crate) fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }
}

/// A response: status, lower-cased headers, body.
#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: Bytes,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The service's error code (`x-ms-error-code`), if any.
    pub(crate) fn error_code(&self) -> &str {
        self.header("x-ms-error-code").unwrap_or_default()
    }

    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// The shared HTTP client of one store.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<Connector, Full<Bytes>>,
    account: StorageAccount,
    /// The token cache when the credential is an Entra ID one.
    tokens: Option<std::sync::Arc<TokenSource>>,
    /// Requests sent, by kind (shared by every clone).
    pub(crate) counters: std::sync::Arc<OpCounters>,
    /// How long [`send`](Self::send) may take ([`NORMAL`] unless
    /// [`with_patience`](Self::with_patience) says otherwise).
    patience: Patience,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("account", &self.account)
            .finish()
    }
}

/// Everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - _ . ~`).
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, NOT_UNRESERVED).to_string()
}

impl Http {
    pub(crate) fn new(
        account: StorageAccount,
        clock: std::sync::Arc<dyn taskhub_storage::Clock>,
    ) -> StorageResult<Self> {
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(tls::connector(&account.tls)?);
        let tokens = match &account.credential {
            Credential::SharedKey(_) => None,
            other => Some(std::sync::Arc::new(TokenSource::new(other.clone(), clock))),
        };
        Ok(Self {
            client,
            account,
            tokens,
            counters: std::sync::Arc::default(),
            patience: NORMAL,
        })
    }

    /// The same client (connections, tokens and counters shared) whose
    /// [`send`](Self::send) takes at most `patience`.
    pub(crate) fn with_patience(&self, patience: Patience) -> Self {
        Self {
            patience,
            ..self.clone()
        }
    }

    fn endpoint(&self, service: Service) -> &str {
        match service {
            Service::Blob => &self.account.blob_endpoint,
            Service::Queue => &self.account.queue_endpoint,
            Service::Table => &self.account.table_endpoint,
        }
    }

    /// The full URL of a table entity or table path (for batch bodies).
    pub(crate) fn table_url(&self, path: &str) -> String {
        format!("{}{path}", self.account.table_endpoint)
    }

    /// Sends a request, retrying throttling (500/503), request timeouts (408, or no answer in
    /// time) and connection failures with
    /// exponential back-off and jitter ([`REQUEST_RETRY`]). Returns any response the service gave (callers judge the status).
    pub(crate) async fn send(&self, req: &Req) -> StorageResult<Resp> {
        self.send_with(req, self.patience).await
    }

    /// [`send`](Self::send) with another [`Patience`].
    #[expect(
        clippy::disallowed_methods,
        reason = "a request on the wire times out and backs off in real time, whatever \
                  clock the runtime has (Azure owns time; a ManualClock would stall I/O)"
    )]
    pub(crate) async fn send_with(&self, req: &Req, patience: Patience) -> StorageResult<Resp> {
        let started = std::time::Instant::now();
        let mut waits = REQUEST_RETRY
            .attempts(patience.attempts)
            .deadline(patience.deadline)
            .waits();
        let kind = OpKind::of(req);
        loop {
            let limit = patience
                .attempt_timeout
                .min(patience.deadline.saturating_sub(started.elapsed()));
            self.counters.add(kind);
            let failure = match tokio::time::timeout(limit, self.send_once(req)).await {
                Ok(Ok(resp)) if matches!(resp.status, 408 | 500 | 503) => None,
                Ok(Ok(resp)) => return Ok(resp),
                // A request that could not be built, or a credential refused: retrying the
                // same request changes nothing.
                Ok(Err(e)) if !e.is_retryable() => return Err(e),
                Ok(Err(e)) => Some(e),
                Err(_) => Some(StorageError::Unavailable(format!(
                    "{} {}: no answer within {limit:?}",
                    req.method,
                    self.endpoint(req.service)
                ))),
            };
            let wait = waits.next_retry(started.elapsed());
            let last = failure.unwrap_or(StorageError::Busy { retry_after: wait });
            match wait {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Err(last),
            }
        }
    }

    /// Creates a table, queue or container: `Ok(true)` if created, `Ok(false)` if it exists
    /// (409 …AlreadyExists). A name that is still being deleted (409 TableBeingDeleted,
    /// QueueBeingDeleted, ContainerBeingDeleted: a hub deleted and re-created at once) is
    /// retried with back-off for up to [`BEING_DELETED_WAIT`], then `BeingDeleted`.
    #[expect(
        clippy::disallowed_methods,
        reason = "the service deletes a name in real time: wait for it in real time, \
                  whatever clock the runtime has"
    )]
    pub(crate) async fn create(&self, req: &Req, what: &str) -> StorageResult<bool> {
        let started = std::time::Instant::now();
        let mut waits = BEING_DELETED_RETRY.waits();
        loop {
            let resp = self.send(req).await?;
            if resp.ok() {
                return Ok(true);
            }
            match status_error(&resp, what) {
                e @ StorageError::BeingDeleted { .. } => {
                    let Some(delay) = waits.next_retry(started.elapsed()) else {
                        return Err(e);
                    };
                    tracing::info!(
                        what,
                        ?delay,
                        "still being deleted; creating it again after a pause"
                    );
                    tokio::time::sleep(delay).await;
                }
                StorageError::Conflict { .. } => return Ok(false),
                other => return Err(other),
            }
        }
    }

    async fn send_once(&self, req: &Req) -> StorageResult<Resp> {
        let endpoint = self.endpoint(req.service);
        let mut url = format!("{endpoint}{}", req.path);
        if !req.query.is_empty() {
            let q: Vec<String> = req
                .query
                .iter()
                .map(|(k, v)| format!("{k}={}", encode(v)))
                .collect();
            url.push('?');
            url.push_str(&q.join("&"));
        }
        let date = now_rfc1123();
        let mut headers: Vec<(String, String)> = req
            .headers
            .iter()
            .map(|(k, v)| ((*k).to_ascii_lowercase(), v.clone()))
            .collect();
        headers.push(("x-ms-date".to_owned(), date));
        headers.push(("x-ms-version".to_owned(), API_VERSION.to_owned()));
        let auth = match (&self.tokens, &self.account.credential) {
            (Some(tokens), _) => format!("Bearer {}", tokens.token(&self.client).await?),
            (None, Credential::SharedKey(key)) => signing::authorization(
                &ToSign {
                    account: &self.account.name,
                    endpoint,
                    service: req.service,
                    method: req.method,
                    path: &req.path,
                    query: &req.query,
                    headers: &headers,
                    content_length: req.body.len(),
                },
                key,
            ),
            (None, _) => {
                return Err(StorageError::InvalidArgument(
                    "a token credential without a token source".to_owned(),
                ))
            }
        };
        let mut builder = hyper::Request::builder().method(req.method).uri(&url);
        for (k, v) in &headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        builder = builder
            .header("authorization", auth)
            .header("content-length", req.body.len().to_string());
        let request = builder
            .body(Full::new(req.body.clone()))
            .map_err(|e| StorageError::InvalidArgument(format!("bad request {url}: {e}")))?;
        let response = self.client.request(request).await.map_err(|e| {
            StorageError::Unavailable(format!("{} {}: {}", req.method, endpoint, chain(&e)))
        })?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| StorageError::Unavailable(format!("reading a response: {e}")))?
            .to_bytes();
        Ok(Resp {
            status,
            headers,
            body,
        })
    }
}

/// An error with its causes (a TLS or connection failure is in the sources of hyper's
/// "client error (Connect)").
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The error for an unexpected status: 404 → `NotFound`, 409 `…BeingDeleted` →
/// `BeingDeleted` (retryable), other 409/412 → `Conflict`, 413 →
/// `TooLarge`, 400 → `InvalidArgument`, 403 → `Backend` (authentication), else `Backend`.
pub(crate) fn status_error(resp: &Resp, what: &str) -> StorageError {
    let code = resp.error_code();
    match resp.status {
        404 => StorageError::NotFound {
            what: what.to_owned(),
        },
        409 if code.ends_with("BeingDeleted") => StorageError::BeingDeleted {
            what: what.to_owned(),
        },
        409 | 412 => StorageError::Conflict {
            what: what.to_owned(),
        },
        413 => StorageError::TooLarge {
            what: what.to_owned(),
            size: 0,
            limit: 0,
        },
        400 => StorageError::InvalidArgument(format!("{what}: {code} {}", snippet(resp))),
        403 => StorageError::Backend(format!(
            "{what}: access denied ({code}); check the account key in azure_storage_connection_string, or the Entra ID identity's data role on the account (e.g. Storage Queue/Table/Blob Data Contributor)"
        )),
        408 | 500 | 503 => StorageError::Busy { retry_after: None },
        s => StorageError::Backend(format!("{what}: HTTP {s} {code} {}", snippet(resp))),
    }
}

fn snippet(resp: &Resp) -> String {
    resp.text().chars().take(300).collect()
}
