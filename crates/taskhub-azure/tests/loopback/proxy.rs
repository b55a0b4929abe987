//! A loopback TCP proxy between a store and a real service (Azurite) that can stall chosen
//! requests: it reads each HTTP/1.1 request from the client whole (head and `content-length`
//! body), and either forwards it upstream, holds it for ever (the upstream never sees it, the
//! client never gets an answer), answers it itself with a canned response (what the real
//! service would say where the emulator is lenient), or forwards it and loses the answer (the
//! service applies it, the client's connection drops before the answer: it re-sends).
//! Responses are copied back byte for byte.
//!
//! Uses tokio only, so other crates' tests may include it by path.

#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    dead_code,
    reason = "not every test binary uses every helper"
)]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test support")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query as sent.
    pub target: String,
    pub body: String,
    /// The proxy held it (never forwarded).
    pub stalled: bool,
}

type Matcher = Box<dyn Fn(&Seen) -> bool + Send + Sync>;

struct Rule {
    matches: Matcher,
    /// How many more matching requests to hold.
    remaining: usize,
    /// What to do with a matching request.
    action: Action,
}

/// What the proxy does with a request a rule matches.
#[derive(Debug, Clone)]
enum Action {
    /// Hold it for ever.
    Stall,
    /// Answer with these raw response bytes instead of forwarding.
    Answer(String),
    /// Forward it, swallow the answer and close the client's connection.
    LoseAnswer,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    seen: Vec<Seen>,
}

/// A running proxy.
pub struct Proxy {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl Proxy {
    /// Starts a proxy on 127.0.0.1 in front of `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let state = shared.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        relay(client, server, state).await;
                    }
                });
            }
        });
        Self { port, state }
    }

    /// `endpoint` (`http://host:port/path`) with the host and port replaced by the proxy's.
    pub fn endpoint(&self, endpoint: &str) -> String {
        let (scheme, rest) = endpoint.split_once("://").unwrap();
        let path = rest.find('/').map_or("", |i| &rest[i..]);
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// Holds the next `count` requests that `matches` (later ones pass).
    pub fn stall(&self, count: usize, matches: impl Fn(&Seen) -> bool + Send + Sync + 'static) {
        self.state.lock().unwrap().rules.push(Rule {
            matches: Box::new(matches),
            remaining: count,
            action: Action::Stall,
        });
    }

    /// Answers the next `count` requests that `matches` with `response` (a whole raw HTTP/1.1
    /// response, head and body) instead of forwarding them.
    pub fn answer(
        &self,
        count: usize,
        matches: impl Fn(&Seen) -> bool + Send + Sync + 'static,
        response: String,
    ) {
        self.state.lock().unwrap().rules.push(Rule {
            matches: Box::new(matches),
            remaining: count,
            action: Action::Answer(response),
        });
    }

    /// Forwards the next `count` requests that `matches`, then drops the connection before
    /// their answer reaches the client: the service applied them, the client does not know.
    pub fn lose_answer(
        &self,
        count: usize,
        matches: impl Fn(&Seen) -> bool + Send + Sync + 'static,
    ) {
        self.state.lock().unwrap().rules.push(Rule {
            matches: Box::new(matches),
            remaining: count,
            action: Action::LoseAnswer,
        });
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Forgets the requests seen so far.
    pub fn clear_seen(&self) {
        self.state.lock().unwrap().seen.clear();
    }
}

/// `host:port` of an `http://host:port/...` endpoint.
pub fn authority(endpoint: &str) -> String {
    let rest = endpoint.split_once("://").unwrap().1;
    rest.split('/').next().unwrap().to_owned()
}

async fn relay(client: TcpStream, server: TcpStream, state: Arc<Mutex<State>>) {
    let (client_read, client_write) = client.into_split();
    let client_write = Arc::new(tokio::sync::Mutex::new(client_write));
    let (mut server_read, mut server_write) = server.into_split();
    let holding = Arc::new(AtomicBool::new(false));
    let hold = holding.clone();
    let swallowing = Arc::new(AtomicBool::new(false));
    let swallow = swallowing.clone();
    let to_client = client_write.clone();
    // Answers go back as they come. Once a request is held, the client sees nothing more, not
    // even the service closing the idle connection (Azurite does after 5 s): it must give up
    // by itself.
    let back = tokio::spawn(async move {
        let mut buf = vec![0; 64 * 1024];
        loop {
            match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) if swallow.load(Ordering::SeqCst) => {}
                Ok(n) => {
                    if to_client.lock().await.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
        if hold.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    });
    let mut reader = BufReader::new(client_read);
    loop {
        let Some((head, seen)) = read_request(&mut reader).await else {
            break;
        };
        let verdict = {
            let mut state = state.lock().unwrap();
            let hit = state
                .rules
                .iter_mut()
                .find(|r| r.remaining > 0 && (r.matches)(&seen));
            let verdict = hit.map(|r| {
                r.remaining -= 1;
                r.action.clone()
            });
            let stalled = matches!(verdict, Some(Action::Stall));
            state.seen.push(Seen { stalled, ..seen });
            verdict
        };
        match verdict {
            Some(Action::Stall) => {
                holding.store(true, Ordering::SeqCst);
                // Hold the connection: the client waits for an answer that never comes, until
                // it gives up and closes it.
                let mut sink = Vec::new();
                let _ = reader.read_to_end(&mut sink).await;
                break;
            }
            // The client sends its next request only after this answer (no pipelining), so
            // no upstream answer is on its way meanwhile.
            Some(Action::Answer(response)) => {
                if client_write
                    .lock()
                    .await
                    .write_all(response.as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Some(Action::LoseAnswer) => {
                swallowing.store(true, Ordering::SeqCst);
                let _ = server_write.write_all(&head).await;
                // Time for the service to apply it; its answer is swallowed meanwhile.
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                break;
            }
            None => {
                if server_write.write_all(&head).await.is_err() {
                    break;
                }
            }
        }
    }
    back.abort();
}

/// Reads one request: its raw bytes and what it says.
async fn read_request<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> Option<(Vec<u8>, Seen)> {
    let mut raw = Vec::new();
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    raw.extend_from_slice(line.as_bytes());
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let mut length = 0;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        raw.extend_from_slice(h.as_bytes());
        let t = h.trim_end();
        if t.is_empty() {
            break;
        }
        if let Some((k, v)) = t.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    raw.extend_from_slice(&body);
    Some((
        raw,
        Seen {
            method,
            target,
            body: String::from_utf8_lossy(&body).into_owned(),
            stalled: false,
        },
    ))
}
