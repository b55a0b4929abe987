//! The HTTP API's connection limits (`taskhub_listen`, shared with the gRPC endpoint): a
//! connection without a request is closed after the deadline, an idle keep-alive connection
//! after the idle timeout, one over the cap at once, and one whose request had a wrong token
//! right after its 401.
#![allow(clippy::expect_used, clippy::indexing_slicing, reason = "test code")]

mod common;

use std::time::Duration;

use common::serving::Serving;
use common::{open_hub, Backend, TempDir};
use taskhub_http::{HttpConfig, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A deadline only a stuck test reaches.
const STUCK: Duration = Duration::from_secs(60);

/// The API over a memory hub, served until dropped.
struct Api {
    serving: Serving,
    _dir: TempDir,
}

async fn serve(limits: Limits, token: Option<&str>) -> Api {
    let dir = TempDir::new("http-connections");
    let hub = open_hub(Backend::Memory, &dir).await;
    let router = taskhub_http::router(HttpConfig::new(hub).with_token(token.map(str::to_owned)));
    let serving = Serving::spawn(|listener, stopped| {
        taskhub_http::serve_with_limits(listener, router, limits, stopped)
    })
    .await;
    Api { serving, _dir: dir }
}

/// Reads everything until the server closes the connection; panics if it stays open past
/// [`STUCK`]. Returns what was read.
async fn read_until_closed(tcp: &mut TcpStream) -> String {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(STUCK, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server closes the connection");
    String::from_utf8_lossy(&all).into_owned()
}

fn request(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n{extra}\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_a_request_is_closed_after_the_deadline() {
    let api = serve(
        Limits {
            first_request_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        None,
    )
    .await;
    let mut silent = TcpStream::connect(api.serving.addr).await.unwrap();
    let mut slow = TcpStream::connect(api.serving.addr).await.unwrap();
    slow.write_all(b"GET /api/hub HTTP/1.1\r\nHost: 12")
        .await
        .unwrap();
    read_until_closed(&mut silent).await;
    read_until_closed(&mut slow).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let api = serve(
        Limits {
            idle_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        None,
    )
    .await;
    let mut tcp = TcpStream::connect(api.serving.addr).await.unwrap();
    tcp.write_all(request("/api/hub", "").as_bytes())
        .await
        .unwrap();
    let answered = read_until_closed(&mut tcp).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_closes_the_connection_after_its_answer() {
    // Long timeouts: only the refusal can close the connection.
    let api = serve(
        Limits {
            idle_timeout: Duration::from_secs(600),
            first_request_timeout: Duration::from_secs(600),
            ..Limits::default()
        },
        Some("t0ken"),
    )
    .await;
    let mut tcp = TcpStream::connect(api.serving.addr).await.unwrap();
    tcp.write_all(request("/api/hub", "Authorization: Bearer wrong\r\n").as_bytes())
        .await
        .unwrap();
    let answered = read_until_closed(&mut tcp).await;
    assert!(answered.starts_with("HTTP/1.1 401"), "{answered}");

    // The right token keeps its connection for the next request.
    let mut tcp = TcpStream::connect(api.serving.addr).await.unwrap();
    let good = request("/api/hub", "Authorization: Bearer t0ken\r\n");
    tcp.write_all(good.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 65536];
    let n = tokio::time::timeout(STUCK, tcp.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    tcp.write_all(good.as_bytes()).await.unwrap();
    let n = tokio::time::timeout(STUCK, tcp.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "the same connection answers again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_over_the_cap_is_closed_at_once() {
    let api = serve(
        Limits {
            max_connections: 1,
            first_request_timeout: Duration::from_secs(600),
            ..Limits::default()
        },
        None,
    )
    .await;
    let _held = TcpStream::connect(api.serving.addr).await.unwrap();
    let mut over = TcpStream::connect(api.serving.addr).await.unwrap();
    // Written before the server closes it, or refused: either way no answer comes.
    let _ = over.write_all(request("/api/hub", "").as_bytes()).await;
    let answered = read_until_closed(&mut over).await;
    assert!(answered.is_empty(), "{answered}");
}
