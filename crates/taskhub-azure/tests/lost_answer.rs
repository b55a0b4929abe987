//! A conditional commit whose answer is lost: the batch lands at the service, the connection
//! drops before the answer, the HTTP layer sends it again and the service answers 409 (the
//! sentinel exists) or 412 (its ETag moved on, by this very batch). The checkpoint reads the
//! sentinel back, finds its own commit there and reports success, not a conflict (which would
//! abandon the turn, count toward the poison threshold and re-send the outbox: a duplicate
//! activity). A real conflict is still one. Azurite behind a loopback proxy that drops the
//! answer of chosen requests: `scripts/with-azurite.sh cargo test -p taskhub-azure --test lost_answer`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use taskhub_azure::{AzureOptions, AzureStore, StorageAccount};
use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, ETag, HistoryStore, HistoryWrite, ManualClock,
    NewQueueMessage, OutboundMessage, QueueName, StorageError,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

/// A proxy in front of the Table endpoint that forwards every request and, while `lose` is
/// above zero, drops the answer of a commit batch (a `$batch` that writes the sentinel) after
/// the service has applied it.
struct Proxy {
    port: u16,
    lose: Arc<AtomicU32>,
    commits: Arc<AtomicU32>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let lose = Arc::new(AtomicU32::new(0));
        let commits = Arc::new(AtomicU32::new(0));
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let (l, c) = (lose.clone(), commits.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (client, upstream, l, c) =
                    (client.clone(), upstream.clone(), l.clone(), c.clone());
                tokio::spawn(serve(tcp, client, upstream, l, c));
            }
        });
        Self {
            port,
            lose,
            commits,
        }
    }
}

async fn serve(
    tcp: TcpStream,
    client: Client<HttpConnector, Full<Bytes>>,
    upstream: String,
    lose: Arc<AtomicU32>,
    commits: Arc<AtomicU32>,
) {
    let mut reader = BufReader::new(tcp);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let target = parts.next().unwrap_or_default().to_owned();
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).await.unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let commit = method == "POST"
            && target.ends_with("/$batch")
            && String::from_utf8_lossy(&body).contains("sentinel");
        let mut forward = hyper::Request::builder()
            .method(method.as_str())
            .uri(format!("{upstream}{target}"));
        for (k, v) in &headers {
            if !matches!(k.as_str(), "host" | "content-length" | "connection") {
                forward = forward.header(k.as_str(), v.as_str());
            }
        }
        let resp = client
            .request(forward.body(Full::new(Bytes::from(body))).unwrap())
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let resp_headers: Vec<(String, String)> = resp
            .headers()
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "content-length" | "transfer-encoding" | "connection"
                )
            })
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let text = resp.into_body().collect().await.unwrap().to_bytes();
        if commit {
            commits.fetch_add(1, Ordering::SeqCst);
            if lose
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                // Applied by the service; the answer never reaches the client.
                return;
            }
        }
        let mut out = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", text.len());
        for (k, v) in resp_headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        let stream = reader.get_mut();
        if stream.write_all(out.as_bytes()).await.is_err()
            || stream.write_all(&text).await.is_err()
            || stream.flush().await.is_err()
        {
            return;
        }
    }
}

/// The test account with its Table endpoint behind a new [`Proxy`].
async fn proxied() -> (StorageAccount, Proxy) {
    let text = common::connection_string();
    let table = text
        .split(';')
        .find_map(|p| p.strip_prefix("TableEndpoint="))
        .expect("an explicit TableEndpoint")
        .to_owned();
    let (origin, path) = match table
        .find("://")
        .and_then(|i| table[i + 3..].find('/').map(|j| i + 3 + j))
    {
        Some(at) => (table[..at].to_owned(), table[at..].to_owned()),
        None => (table.clone(), String::new()),
    };
    let proxy = Proxy::start(origin).await;
    let rewritten: Vec<String> = text
        .split(';')
        .map(|p| {
            if p.starts_with("TableEndpoint=") {
                format!("TableEndpoint=http://127.0.0.1:{}{path}", proxy.port)
            } else {
                p.to_owned()
            }
        })
        .collect();
    let account = StorageAccount::from_connection_string(&rewritten.join(";")).unwrap();
    (account, proxy)
}

fn event(i: u64) -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(START.as_millis() + i),
        EventKind::EventRaised {
            name: format!("e{i}"),
            input: Payload::from_json(i.to_string()).unwrap(),
        },
    )
}

fn write(
    id: &InstanceId,
    expected: Option<ETag>,
    events: std::ops::Range<u64>,
) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: id.clone(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            new_execution: expected.is_none(),
            expected,
            events: events.map(event).collect(),
        }),
        instance: None,
        outbound: vec![OutboundMessage {
            claim: None,
            queue: QueueName::WorkItems,
            message: NewQueueMessage {
                body: "work".to_owned(),
                delay: Duration::ZERO,
            },
        }],
        consumed: Vec::new(),
    }
}

/// The first commit of an instance (an insert of the sentinel, 409 on the re-send) and a
/// later one (a replace conditional on the ETag, 412 on the re-send), each with its answer
/// lost once: both report success with the sentinel's real ETag (the next commit and each
/// step 5, conditional on it, succeed), and the history holds each event once. A commit
/// from a stale ETag is still a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_was_lost_is_not_a_conflict() {
    let (account, proxy) = proxied().await;
    let s = AzureStore::create(AzureOptions {
        account,
        hub: common::unique_hub(),
        clock: Arc::new(ManualClock::new(START)),
    })
    .await
    .unwrap();
    let id = InstanceId::new("lost").unwrap();

    proxy.lose.store(1, Ordering::SeqCst);
    let first = s
        .checkpoint(write(&id, None, 0..3))
        .await
        .expect("the inserted sentinel is this checkpoint's own: not a conflict");
    assert_eq!(
        proxy.commits.load(Ordering::SeqCst),
        2,
        "the commit was sent twice"
    );
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(first.history_etag, Some(loaded.etag.clone()));

    proxy.lose.store(1, Ordering::SeqCst);
    let second = s
        .checkpoint(write(&id, first.history_etag.clone(), 3..5))
        .await
        .expect("the replaced sentinel is this checkpoint's own: not a conflict");
    assert_eq!(proxy.commits.load(Ordering::SeqCst), 4);
    let third = s
        .checkpoint(write(&id, second.history_etag.clone(), 5..6))
        .await
        .expect("the ETag reported after the read-back is the sentinel's");
    assert_eq!(
        s.outbox_clear_failures(),
        0,
        "every step 5 ran on the right ETag"
    );
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(loaded.events, (0..6).map(event).collect::<Vec<_>>());
    assert_eq!(third.history_etag, Some(loaded.etag));

    let stale = s.checkpoint(write(&id, first.history_etag, 6..7)).await;
    assert!(
        matches!(stale, Err(StorageError::Conflict { .. })),
        "a stale ETag is a conflict: {stale:?}"
    );
    s.delete_hub().await.unwrap();
}
