//! The endpoint's own accept loop (`listen.rs`): a shutdown lets the calls in flight finish and
//! refuses new connections, and closes the connections of calls still running after
//! `SHUTDOWN_GRACE`; a call to a service or method the endpoint does not serve is
//! answered `UNIMPLEMENTED`, and an HTTP/1 request gets no gRPC answer.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::calls::{start, within, Client};
use common::{open_hub, registry, Backend, TempDir, STUCK};
use taskhub::Worker;
use taskhub_grpc::proto::{GetInstanceRequest, OrchestrationStatus as S};
use taskhub_grpc::GrpcConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::Code;

/// A worker and the endpoint over a memory hub, with the endpoint's task and its stop signal in
/// the test's hands (`common::Server` keeps them to itself).
struct Serving {
    addr: std::net::SocketAddr,
    hub: taskhub::TaskHub,
    worker: taskhub::WorkerHandle,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), taskhub_grpc::GrpcError>>,
    _dir: TempDir,
}

impl Serving {
    async fn start() -> Self {
        let dir = TempDir::new("grpc-serving");
        let hub = open_hub(Backend::Memory, &dir).await;
        let worker = Worker::start(&hub, registry()).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(taskhub_grpc::serve(
            listener,
            GrpcConfig::new(hub.clone()),
            async move {
                let _ = stopped.await;
            },
        ));
        Self {
            addr,
            hub,
            worker,
            stop,
            server,
            _dir: dir,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(format!("http://{}", self.addr))
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_shutdown_finishes_the_calls_in_flight_and_refuses_new_connections() {
    let serving = Serving::start().await;
    let mut c = serving.client().await;
    let id = start(&mut c, "Waiter", "in-flight", None).await;

    // A wait for completion is in flight when the shutdown comes.
    let mut waiting = c.clone();
    let wait_id = id.clone();
    let wait = tokio::spawn(async move {
        waiting
            .wait_for_instance_completion(within(
                GetInstanceRequest {
                    instance_id: wait_id,
                    get_inputs_and_outputs: true,
                },
                STUCK,
            ))
            .await
    });
    // Give the call time to reach the server (a call not yet received when the server says
    // GOAWAY would be refused, which is not what this test is about).
    tokio::time::sleep(Duration::from_millis(300)).await;
    serving.stop.send(()).unwrap();

    // New connections are refused once the listener is closed.
    let refused = async {
        loop {
            if tokio::net::TcpStream::connect(serving.addr).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(STUCK, refused)
        .await
        .expect("the listening socket closes after the shutdown");
    assert!(!serving.server.is_finished(), "a call is still in flight");

    // The instance completes; the call in flight gets its answer over its old connection.
    serving
        .hub
        .client()
        .raise_event(&taskhub::InstanceId::new(&id).unwrap(), "Go", &"done")
        .await
        .unwrap();
    let answer = tokio::time::timeout(STUCK, wait)
        .await
        .expect("the wait in flight ends")
        .unwrap()
        .expect("the call in flight is answered, not cut")
        .into_inner();
    let state = answer.orchestration_state.unwrap();
    assert_eq!(state.orchestration_status, S::Completed as i32);
    assert_eq!(state.output.as_deref(), Some("\"done\""));

    // With no call left, the server ends.
    tokio::time::timeout(STUCK, serving.server)
        .await
        .expect("the server ends once its calls are done")
        .unwrap()
        .unwrap();
    serving.worker.shutdown().await;
}

#[tokio::test]
async fn a_call_still_running_after_the_grace_has_its_connection_closed() {
    let serving = Serving::start().await;
    let mut c = serving.client().await;
    let id = start(&mut c, "Waiter", "never-answered", None).await;
    // A wait without a deadline on an instance nobody finishes.
    let wait = tokio::spawn(async move {
        c.wait_for_instance_completion(GetInstanceRequest {
            instance_id: id,
            get_inputs_and_outputs: false,
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopping = std::time::Instant::now();
    serving.stop.send(()).unwrap();
    tokio::time::timeout(taskhub_grpc::SHUTDOWN_GRACE + STUCK, serving.server)
        .await
        .expect("the server ends after the grace")
        .unwrap()
        .unwrap();
    let waited = stopping.elapsed();
    assert!(
        waited >= taskhub_grpc::SHUTDOWN_GRACE,
        "the call had its grace: {waited:?}"
    );
    let cut = tokio::time::timeout(STUCK, wait)
        .await
        .expect("the cut call ends")
        .unwrap();
    assert!(cut.is_err(), "the call's connection was closed: {cut:?}");
    serving.worker.shutdown().await;
}

#[tokio::test]
async fn unknown_services_and_methods_are_unimplemented_and_http1_is_not_served() {
    let server = common::Server::start(Backend::Memory).await;
    let channel = tonic::transport::Endpoint::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    for path in ["/Other.Service/Call", "/TaskHubSidecarService/NoSuchMethod"] {
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.unwrap();
        let e = grpc
            .unary::<(), (), _>(
                tonic::Request::new(()),
                PathAndQuery::from_static(path),
                tonic_prost::ProstCodec::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unimplemented, "{path}: {e:?}");
    }

    // An HTTP/1 request: the connection is closed without an HTTP/1 answer.
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(STUCK, tcp.read_to_end(&mut got))
        .await
        .expect("the server closes the connection");
    assert!(
        !got.starts_with(b"HTTP/1"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    server.stop().await;
}
