//! A router served on 127.0.0.1 (a free port) until stopped: the gRPC tests' [`Serving`]
//! (their common/served.rs, included here) running `taskhub_http::serve`.

#[path = "../../../taskhub-grpc/tests/common/served.rs"]
mod served;

pub use served::Serving;

impl Serving {
    /// Serves `router` (`taskhub_http::serve`) on a free port of 127.0.0.1.
    pub async fn start(router: axum::Router) -> Self {
        Self::spawn(|listener, stopped| taskhub_http::serve(listener, router, stopped)).await
    }
}
