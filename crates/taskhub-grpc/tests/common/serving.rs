//! The gRPC endpoint serving one configuration on 127.0.0.1 (a free port) until stopped, and
//! the clients that connect to it.

use std::net::SocketAddr;
use std::time::Duration;

use taskhub_grpc::proto::GetWorkItemsRequest;
use taskhub_grpc::GrpcConfig;
use tonic::transport::Endpoint;

use super::calls::Client;
use super::sdk::FakeWorker;
pub use super::served::Serving;

impl Serving {
    /// Serves `config` on a free port of 127.0.0.1.
    pub async fn start(config: GrpcConfig) -> Self {
        Self::spawn(|listener, stopped| taskhub_grpc::serve(listener, config, stopped)).await
    }

    /// Stops serving and waits (at most 5 s) for the server to end.
    pub async fn shut_down(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.stop()).await;
    }
}

/// The generated client, connected to the endpoint at `addr`.
pub async fn client(addr: SocketAddr) -> Client {
    Client::connect(format!("http://{addr}")).await.unwrap()
}

/// The generated client on a connection of its own whose gRPC library says `user_agent`.
pub async fn client_as(addr: SocketAddr, user_agent: &str) -> Client {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .user_agent(user_agent)
        .unwrap()
        .connect()
        .await
        .unwrap();
    Client::new(channel)
}

/// A fake SDK worker connected to the endpoint at `addr`, declaring room for `orchestrations`
/// and `activities` items.
pub async fn fake_worker(addr: SocketAddr, orchestrations: i32, activities: i32) -> FakeWorker {
    let request = GetWorkItemsRequest {
        max_concurrent_orchestration_work_items: orchestrations,
        max_concurrent_activity_work_items: activities,
        ..GetWorkItemsRequest::default()
    };
    work_items(client(addr).await, request).await
}

/// A fake SDK worker on a connection of its own whose gRPC library says `user_agent`,
/// asking for work items with `request`.
pub async fn worker_as(
    addr: SocketAddr,
    user_agent: &str,
    request: GetWorkItemsRequest,
) -> FakeWorker {
    work_items(client_as(addr, user_agent).await, request).await
}

/// `client` as a fake SDK worker: its `GetWorkItems` stream opened with `request`.
pub async fn work_items(mut client: Client, request: GetWorkItemsRequest) -> FakeWorker {
    let stream = client.get_work_items(request).await.unwrap().into_inner();
    FakeWorker { client, stream }
}
