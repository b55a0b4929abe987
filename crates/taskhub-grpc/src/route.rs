//! `GetWorkItems` served beside the generated service: its stream carries
//! [`OutgoingWorkItem`]s, whose turns' past events go out as the dispatcher keeps them
//! encoded (the generated service's stream is of plain `WorkItem`s, which would mean
//! decoding them only to encode them again). Every other call goes to the generated service.

use std::convert::Infallible;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::{Grpc, NamedService, ServerStreamingService};
use tonic::Status;

use crate::codec::StrictCodec;
use crate::proto::GetWorkItemsRequest;
use crate::server::MAX_MESSAGE_BYTES;
use crate::service::{Sidecar, WorkItemStream};
use crate::wire::OutgoingWorkItem;

/// The path of `GetWorkItems` (the .proto declares no package).
const GET_WORK_ITEMS: &str = "/TaskHubSidecarService/GetWorkItems";

/// The generated service `inner`, with `GetWorkItems` answered by `sidecar` directly.
#[derive(Clone, Debug)]
pub(crate) struct Routed<S> {
    inner: S,
    sidecar: Sidecar,
}

impl<S> Routed<S> {
    pub(crate) fn new(inner: S, sidecar: Sidecar) -> Self {
        Self { inner, sidecar }
    }
}

impl<S> Service<http::Request<Body>> for Routed<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if req.uri().path() != GET_WORK_ITEMS {
            return Box::pin(self.inner.call(req));
        }
        let service = WorkItems(self.sidecar.clone());
        Box::pin(async move {
            let mut grpc =
                Grpc::new(StrictCodec::<OutgoingWorkItem, GetWorkItemsRequest>::default())
                    .apply_max_message_size_config(
                        Some(MAX_MESSAGE_BYTES),
                        Some(MAX_MESSAGE_BYTES),
                    );
            Ok(grpc.server_streaming(service, req).await)
        })
    }
}

impl<S> NamedService for Routed<S> {
    const NAME: &'static str = "TaskHubSidecarService";
}

/// `GetWorkItems` as a server-streaming service.
struct WorkItems(Sidecar);

impl ServerStreamingService<GetWorkItemsRequest> for WorkItems {
    type Response = OutgoingWorkItem;
    type ResponseStream = WorkItemStream;
    type Future = BoxFuture<tonic::Response<WorkItemStream>, Status>;

    fn call(&mut self, request: tonic::Request<GetWorkItemsRequest>) -> Self::Future {
        let sidecar = self.0.clone();
        Box::pin(async move { sidecar.work_items(request).await })
    }
}
