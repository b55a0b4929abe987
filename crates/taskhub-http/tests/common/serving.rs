//! A router served on 127.0.0.1 (a free port) until stopped.

use std::net::SocketAddr;

use tokio::task::{JoinError, JoinHandle};

/// A router being served.
pub struct Serving {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Serving {
    /// Serves `router` (`taskhub_http::serve`) on a free port of 127.0.0.1.
    pub async fn start(router: axum::Router) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            taskhub_http::serve(listener, router, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Self { addr, stop, task }
    }

    /// Stops serving; how the serving task ended (an error if it panicked).
    pub async fn stop(self) -> Result<(), JoinError> {
        let _ = self.stop.send(());
        self.task.await
    }
}
