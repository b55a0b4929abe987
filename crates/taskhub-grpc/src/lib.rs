//! The Durable Task gRPC protocol over a Taskhub hub: `TaskHubSidecarService` of
//! microsoft/durabletask-protobuf, which every Durable Task SDK (C#, Python, JavaScript, Java,
//! Go) talks to a backend. This first slice serves the calls of an SDK's *client* — start
//! (scheduled start, tags, version, ID reuse policy), get, wait for start and completion,
//! raise, terminate (recursive too), suspend, resume, query with paging, list IDs, purge (one,
//! batch, filter, recursive), restart, history, entities (signal, get, query, clean) — and
//! `Hello`. The worker calls (`GetWorkItems`, `Complete*`, `Abandon*`) answer `UNIMPLEMENTED`
//! until a [`WorkerCalls`] is plugged in ([`GrpcConfig::with_workers`]).
//!
//! * [`proto`]: the generated messages, client and server (`build.rs`, from the vendored
//!   `proto/orchestrator_service.proto`; the file declares no `package`, so method paths are
//!   `/TaskHubSidecarService/<Rpc>`);
//! * [`convert`]: Taskhub's types ↔ the protocol's, in one place;
//! * [`service`]: [`Sidecar`], one module per group of calls;
//! * [`auth`]: loopback by default, a bearer token off loopback;
//! * [`server`]: [`serve`] on a listener.
//!
//! # Dependencies
//!
//! tonic 0.14 (server and channel; default features) with tonic-prost and prost 0.14 for the
//! messages; at build time tonic-prost-build (code generation) and **protox** 0.10, a .proto
//! compiler written in Rust: `build.rs` compiles the vendored file to a `FileDescriptorSet`
//! and hands it to tonic-prost-build, so no `protoc` is needed on the machine (a fresh clone
//! builds with cargo alone; generated code is not committed). tonic brings hyper, h2, tower
//! and axum, which the workspace already builds for taskhub-http and taskhub-azure (hyper 1,
//! tower 0.5, axum 0.8 are shared); new to the tree are h2, tonic, prost, prost-types,
//! tonic-prost and, for the build script only, protox (with protox-parse, prost-reflect,
//! logos, miette), prost-build, tonic-build, petgraph, multimap and regex. From warm
//! dependencies of the rest of the workspace, `cargo build -p taskhub-grpc` took about 45 s
//! of wall time on the 2-core machine (the build script and tonic dominate; the generated
//! module is ~4,000 lines).

pub mod auth;
pub mod convert;
mod error;
pub mod proto;
pub mod server;
pub mod service;

pub use auth::check_bind;
pub use error::GrpcError;
pub use server::{serve, GrpcConfig, MAX_MESSAGE_BYTES};
pub use service::{Sidecar, WorkItemStream, WorkerCalls};
/// The tonic the generated code is built with (for callers that name its types).
pub use tonic;
