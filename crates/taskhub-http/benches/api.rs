//! The API's speed over a large SQLite hub: status reads per second (16 keep-alive
//! connections, random instances) and the latency of a page of 100 while walking the list
//! with continuation tokens (Durable Functions route and `/api/instances`).
//!
//!   cargo bench -p taskhub-http --bench api            # 100,000 instances (release)
//!   cargo bench -p taskhub-http --bench api -- --instances 20000
//!
//! Under `cargo test` (no `--bench` argument) it runs once on 1,000 instances as a smoke test.
//! Prints one JSON line per result (medians of 3 rounds) and targets: >= 5,000 status reads/s,
//! p99 of a page of 100 <= 50 ms on the project's 2-core machine.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    reason = "benchmark (it measures real time and indexes its own samples)"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use taskhub::{
    ExecutionId, InstanceId, InstanceRow, OrchestrationStatus, Payload, TaskHub, Timestamp,
};
use taskhub_storage::{Expect, SystemClock};

const CONNECTIONS: usize = 16;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let n: usize = args
        .iter()
        .position(|a| a == "--instances")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench { 100_000 } else { 1_000 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(n, bench));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

async fn run(n: usize, bench: bool) {
    let dir = std::env::temp_dir().join(format!("taskhub-http-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = taskhub_sqlite::SqliteOptions::new(dir.join("hub.db"))
        .with_clock(Arc::new(SystemClock::new()));
    let store = Arc::new(taskhub_sqlite::SqliteStore::open(opts).unwrap());
    let hub = TaskHub::open(store, taskhub::Settings::default())
        .await
        .unwrap();

    let t = Instant::now();
    fill(&hub, n).await;
    eprintln!("filled {n} instances in {:.1} s", t.elapsed().as_secs_f64());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = taskhub_http::router(taskhub_http::HttpConfig::new(hub.clone()));
    tokio::spawn(taskhub_http::serve(
        listener,
        router,
        std::future::pending(),
    ));

    let rounds = if bench { 3 } else { 1 };
    let secs = if bench { 3.0 } else { 0.3 };
    let mut rates = Vec::new();
    for _ in 0..rounds {
        rates.push(status_reads(addr, n, Duration::from_secs_f64(secs)).await);
    }
    let rate = median(rates);
    println!("{{\"scenario\":\"http_status_reads\",\"instances\":{n},\"connections\":{CONNECTIONS},\"reads_per_sec\":{rate:.0}}}");

    let pages = if bench { 300 } else { 5 };
    for (label, path) in [
        (
            "df_list_page",
            "/runtime/webhooks/durabletask/instances?top=100",
        ),
        (
            "df_list_page_filtered",
            "/runtime/webhooks/durabletask/instances?top=100&runtimeStatus=Completed",
        ),
        ("api_list_page", "/api/instances?top=100"),
    ] {
        let mut p50s = Vec::new();
        let mut p99s = Vec::new();
        for _ in 0..rounds {
            let mut lat = list_walk(addr, path, pages).await;
            p50s.push(percentile(&mut lat, 0.5));
            p99s.push(percentile(&mut lat, 0.99));
        }
        println!(
            "{{\"scenario\":\"http_{label}\",\"instances\":{n},\"pages\":{pages},\"page_size\":100,\"p50_ms\":{:.2},\"p99_ms\":{:.2}}}",
            median(p50s),
            median(p99s)
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn id_of(i: usize) -> InstanceId {
    InstanceId::new(format!("bench-{i:07}")).unwrap()
}

/// Writes `n` instance rows (a mix of statuses) with 64 concurrent writers.
async fn fill(hub: &TaskHub, n: usize) {
    let writers = 64;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = Arc::clone(hub.store());
        tasks.push(tokio::spawn(async move {
            for i in (w..n).step_by(writers) {
                let status = match i % 10 {
                    0 => OrchestrationStatus::Running,
                    1 => OrchestrationStatus::Failed,
                    _ => OrchestrationStatus::Completed,
                };
                let now = Timestamp::from_millis(1_700_000_000_000 + i as u64);
                let row = InstanceRow {
                    instance_id: id_of(i),
                    name: "Bench".to_owned(),
                    version: None,
                    execution_id: ExecutionId::random(),
                    status,
                    input: Payload::from_json(format!("{{\"n\":{i}}}")).unwrap(),
                    output: Some(Payload::from_json("\"done\"").unwrap()),
                    failure: None,
                    custom_status: None,
                    created_at: now,
                    updated_at: now,
                    completed_at: Some(now),
                    scheduled_start: None,
                    partition: (i % 4) as u32,
                    tags: Default::default(),
                    executions: Vec::new(),
                    etag: None,
                };
                store.put_instance(&row, Expect::Absent).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

async fn connect(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn get(
    sender: &mut Sender,
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> (u16, Option<String>, Bytes) {
    sender.ready().await.unwrap();
    let mut req = hyper::Request::get(path).header("host", addr.to_string());
    if let Some(t) = token {
        req = req.header("x-ms-continuation-token", t);
    }
    let res = sender
        .send_request(req.body(Empty::new()).unwrap())
        .await
        .unwrap();
    let status = res.status().as_u16();
    let next = res
        .headers()
        .get("x-ms-continuation-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, next, body)
}

/// Status reads per second over `CONNECTIONS` keep-alive connections for `length`.
async fn status_reads(addr: SocketAddr, n: usize, length: Duration) -> f64 {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(addr).await;
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ c as u64;
            let mut count = 0u64;
            while start.elapsed() < length {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % n as u64) as usize;
                let path = format!("/runtime/webhooks/durabletask/instances/{}", id_of(i));
                let (status, _, _) = get(&mut sender, addr, &path, None).await;
                assert!(status == 200 || status == 202, "{status}");
                count += 1;
            }
            count
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// Walks `pages` pages of the list (following continuation tokens, starting over at the end);
/// returns each page's latency in ms.
async fn list_walk(addr: SocketAddr, path: &str, pages: usize) -> Vec<f64> {
    let mut sender = connect(addr).await;
    let mut token: Option<String> = None;
    let mut lat = Vec::with_capacity(pages);
    for _ in 0..pages {
        let t = Instant::now();
        let (status, next, body) = get(
            &mut sender,
            addr,
            path_with(path, &token).as_str(),
            token.as_deref().filter(|_| !path.starts_with("/api")),
        )
        .await;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        token = if path.starts_with("/api") {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            v["continuationToken"].as_str().map(str::to_owned)
        } else {
            next
        };
    }
    lat
}

fn path_with(path: &str, token: &Option<String>) -> String {
    match token {
        Some(t) if path.starts_with("/api") => format!("{path}&continuationToken={t}"),
        _ => path.to_owned(),
    }
}
