//! One connected worker's stream of work items. When tonic drops it (the worker
//! disconnected, was killed, or the call was cancelled), the worker is disconnected from the
//! dispatcher and the items it held go to the others at once.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::sync::mpsc;
use tonic::Status;

use super::Inner;
use crate::wire::OutgoingWorkItem;

/// The stream `GetWorkItems` answers with.
pub(super) struct WorkerStream {
    pub(super) rx: mpsc::UnboundedReceiver<Result<OutgoingWorkItem, Status>>,
    pub(super) inner: Arc<Inner>,
    pub(super) worker: u64,
}

impl Stream for WorkerStream {
    type Item = Result<OutgoingWorkItem, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for WorkerStream {
    fn drop(&mut self) {
        let now = self.inner.clock.monotonic();
        self.inner.lock().disconnect(self.worker, now);
        tracing::info!(worker = self.worker, "SDK worker disconnected");
    }
}

/// Sends a health ping down `worker`'s stream every interval until it is gone.
pub(super) async fn ping(inner: Arc<Inner>, worker: u64) {
    loop {
        inner.clock.sleep(inner.settings.health_ping_interval).await;
        if !inner.lock().ping(worker) {
            return;
        }
    }
}
