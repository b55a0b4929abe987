//! A real server on 127.0.0.1 (port 0) over a real hub (memory or SQLite) with a worker, a
//! small HTTP/1.1 client, and the test orchestrations.
#![allow(
    clippy::disallowed_methods,
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "../../../taskhub-grpc/tests/common/hub_basics.rs"]
pub mod hub_basics;
pub mod schema;
pub mod serving;

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use taskhub::*;
use taskhub_http::HttpConfig;

pub use taskhub_test_support::{wait, Backend, TempDir};

/// Where `backend` puts a fresh hub: its test configuration (`taskhub_backends::testing`):
/// `dir/hub.db`, or a hub of its own on the Azure test account or the PostgreSQL test server.
fn backend_config(backend: Backend, dir: &TempDir) -> taskhub_backends::BackendConfig {
    taskhub_backends::testing::test_hub(backend.name())
        .config(&dir.0, &hub_basics::unique_hub_name("http"))
}

/// Where the Durable Functions routes are mounted.
pub const DF: &str = "/runtime/webhooks/durabletask";

/// The string `key` of every element of the JSON array `list`.
pub fn strs<'a>(list: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e.get(key).and_then(|v| v.as_str()).unwrap())
        .collect()
}

pub fn settings() -> Settings {
    Settings {
        max_queue_polling_interval: Duration::from_millis(200),
        shutdown_timeout: Duration::from_secs(5),
        ..Settings::default()
    }
}

pub async fn open_hub(backend: Backend, dir: &TempDir) -> TaskHub {
    let opened = taskhub_backends::create_store(backend.name(), &backend_config(backend, dir))
        .await
        .expect("open the test hub");
    TaskHub::open(opened.store, settings()).await.unwrap()
}

/// The gates `Gate` passes: a key is added by [`open_gate`].
static OPEN_GATES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Lets `Gate` with this key succeed from now on (an instance that failed on it stays Failed
/// until it is rewound or restarted).
pub fn open_gate(key: &str) {
    OPEN_GATES.lock().unwrap().push(key.to_owned());
}

/// `Hello` (three activities), `Echo`, `Fails`, `Counter` and `Waiter` (custom status
/// "waiting for Go", then waits for `Go`): [`hub_basics::register`]'s. `Parent`: a
/// sub-orchestration and a timer. `Boom` (activity): fails with an HTML-looking message.
/// `Gated`: `SayHello` with its input (a key), then `Gate`, which fails until [`open_gate`]
/// opens that key (for rewind). `GatedWait`: the same, then waits for `Go`.
pub fn registry() -> Registry {
    let mut reg = Registry::new();
    hub_basics::register(&mut reg, "waiting for Go")
        .orchestration(
            "Parent",
            |ctx: OrchestrationContext, _: serde_json::Value| async move {
                let child: Vec<String> = ctx.call_sub_orchestration("Hello", ()).await?;
                ctx.sleep(Duration::from_millis(50)).await;
                Ok::<_, OrchestrationError>(child.len())
            },
        )
        .orchestration(
            "Gated",
            |ctx: OrchestrationContext, key: String| async move {
                let hello: String = ctx.call_activity("SayHello", &key).await?;
                let passed: String = ctx.call_activity("Gate", &key).await?;
                Ok::<_, OrchestrationError>(format!("{hello} {passed}"))
            },
        )
        .orchestration(
            "GatedWait",
            |ctx: OrchestrationContext, key: String| async move {
                let hello: String = ctx.call_activity("SayHello", &key).await?;
                let passed: String = ctx.call_activity("Gate", &key).await?;
                let () = ctx.wait_for_event("Go").await?;
                Ok::<_, OrchestrationError>(format!("{hello} {passed}"))
            },
        )
        .activity("Boom", |_c: ActivityContext, _: ()| async move {
            Err::<(), _>(ActivityError::new("boom <b>bad</b>"))
        })
        .activity("Gate", |_c: ActivityContext, key: String| async move {
            if OPEN_GATES.lock().unwrap().contains(&key) {
                Ok(format!("passed {key}"))
            } else {
                Err(ActivityError::new(format!("gate {key} is closed")))
            }
        });
    entities(&mut reg);
    reg
}

/// `Locker` (orchestration): locks the counter `@Counter@{input}` (the entity of
/// [`hub_basics::counter`]) until it receives `Go`.
fn entities(reg: &mut Registry) {
    reg.orchestration(
        "Locker",
        |ctx: OrchestrationContext, key: String| async move {
            let counter = EntityId::new("Counter", key)
                .map_err(|e| OrchestrationError::new(e.to_string()))?;
            let _section = ctx.lock_entities(&[counter]).await?;
            let () = ctx.wait_for_event("Go").await?;
            Ok::<_, OrchestrationError>(())
        },
    );
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub hub: TaskHub,
    pub worker: Option<WorkerHandle>,
    serving: serving::Serving,
    _dir: TempDir,
}

impl Server {
    /// A server with a worker and no token.
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, true, |c| c).await
    }

    /// A server with a worker or not, the config changed by `tweak`.
    pub async fn start_with(
        backend: Backend,
        with_worker: bool,
        tweak: impl FnOnce(HttpConfig) -> HttpConfig,
    ) -> Self {
        let dir = TempDir::new("api");
        let hub = open_hub(backend, &dir).await;
        let worker = if with_worker {
            Some(Worker::start(&hub, registry()).await.unwrap())
        } else {
            None
        };
        let mut config = HttpConfig::new(hub.clone());
        if let Some(w) = &worker {
            let stats = w.stats_source();
            config = config.with_worker_stats(stats);
        }
        let serving = serving::Serving::start(taskhub_http::router(tweak(config))).await;
        Self {
            addr: serving.addr,
            hub,
            worker,
            serving,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Resp {
        call(self.addr, method, path, headers, body.as_bytes().to_vec()).await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.call("GET", path, &[], "").await
    }

    pub async fn post(&self, path: &str, body: &str) -> Resp {
        self.call("POST", path, &[("content-type", "application/json")], body)
            .await
    }

    /// `POST path` with a JSON body, asserting it was accepted (202); the answer.
    pub async fn post_accepted(&self, path: &str, body: &str) -> Resp {
        let r = self.post(path, body).await;
        assert_eq!(r.status, 202, "{}", r.body);
        r
    }

    pub async fn delete(&self, path: &str) -> Resp {
        self.call("DELETE", path, &[], "").await
    }

    /// Adds a dead letter holding `body` (a malformed work item, dequeued 5 times, dead-lettered
    /// at 2023-11-14T22:13:20Z) to the hub's store; its ID.
    pub async fn add_dead_letter(&self, body: &str) -> String {
        self.hub
            .store()
            .add_dead_letter(taskhub_storage::DeadLetter {
                id: String::new(),
                queue: taskhub_storage::QueueName::WorkItems,
                body: body.to_owned(),
                reason: "malformed".to_owned(),
                dequeue_count: 5,
                dead_lettered_at: Timestamp::from_millis(1_700_000_000_000),
            })
            .await
            .unwrap()
    }

    /// `GET path` (a path with its query) for the page after `page`, by its `continuationToken`.
    pub async fn next_page(&self, path: &str, page: &serde_json::Value) -> serde_json::Value {
        let token = page
            .get("continuationToken")
            .and_then(|v| v.as_str())
            .unwrap();
        self.get(&format!("{path}&continuationToken={token}"))
            .await
            .json()
    }

    /// Waits until the instance's status satisfies `ok` (read through the client).
    pub async fn wait_status(
        &self,
        id: &str,
        ok: impl Fn(OrchestrationStatus) -> bool,
    ) -> OrchestrationStatus {
        let id = InstanceId::new(id).unwrap();
        let client = self.hub.client();
        wait::until_some(&format!("instance {id}"), || {
            let client = client.clone();
            let id = id.clone();
            let ok = &ok;
            async move {
                let st = client
                    .get_status(&id, StatusOptions::default())
                    .await
                    .unwrap()?;
                ok(st.status()).then_some(st.status())
            }
        })
        .await
    }

    pub async fn stop(self) {
        let _ = self.serving.stop().await;
        if let Some(w) = self.worker {
            w.shutdown().await;
        }
    }
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status and the string `key` of the JSON body (for a refusal, `field` or
    /// `code`).
    pub fn assert_says(&self, status: u16, key: &str, value: &str) {
        assert_eq!(
            (self.status, self.json().get(key).and_then(|v| v.as_str())),
            (status, Some(value)),
            "{}",
            self.body
        );
    }
}

/// One HTTP/1.1 request on a fresh connection. `Host` defaults to the server's address.
pub async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Resp {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req = req.header("host", format!("127.0.0.1:{}", addr.port()));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = sender
        .send_request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}
