//! A server run as a task on a free port of 127.0.0.1 until stopped: the gRPC tests' endpoint
//! (`serving.rs`) and the HTTP tests' router (taskhub-http's tests include this file).

use std::fmt::Debug;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use tokio::net::TcpListener;
use tokio::task::{JoinError, JoinHandle};

/// What a server waits for to stop: it completes when [`Serving::stop`] is called (or the
/// [`Serving`] is dropped).
pub type Stopped = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A server being served; dropped, it shuts down (its stop signal's sender goes away).
pub struct Serving {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Serving {
    /// Binds a free port of 127.0.0.1 and runs `serve(listener, stopped)` as a task, which must
    /// serve until `stopped` completes; an error it returns panics the task.
    pub async fn spawn<F, E>(serve: impl FnOnce(TcpListener, Stopped) -> F) -> Self
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Debug,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = serve(
            listener,
            Box::pin(async move {
                let _ = stopped.await;
            }),
        );
        let task = tokio::spawn(async move { served.await.unwrap() });
        Self { addr, stop, task }
    }

    /// Stops serving; how the serving task ended (an error if it panicked).
    pub async fn stop(self) -> Result<(), JoinError> {
        let _ = self.stop.send(());
        self.task.await
    }
}
