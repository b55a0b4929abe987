//! The Durable Task gRPC protocol over a Taskhub hub: `TaskHubSidecarService` of
//! microsoft/durabletask-protobuf, which every Durable Task SDK (C#, Python, JavaScript, Java,
//! Go) talks to a backend. This first slice serves the calls of an SDK's *client* — start
//! (scheduled start, tags, version, ID reuse policy), get, wait for start and completion,
//! raise, terminate (recursive too), suspend, resume, query with paging, list IDs, purge (one,
//! batch, filter, recursive), restart, history, entities (signal, get, query, clean), create
//! and delete the hub (`DeleteTaskHub` and `CreateTaskHub{recreateIfExists}` empty it in place:
//! see `service::admin`) — and `Hello`. The worker calls (`GetWorkItems`, `Complete*`, `Abandon*`) answer `UNIMPLEMENTED`
//! until a [`WorkerCalls`] is plugged in ([`GrpcConfig::with_workers`]).
//!
//! * [`proto`]: the generated messages, client and server (`build.rs`, from the vendored
//!   `proto/orchestrator_service.proto`; the file declares no `package`, so method paths are
//!   `/TaskHubSidecarService/<Rpc>`);
//! * [`convert`]: Taskhub's types ↔ the protocol's, in one place;
//! * [`service`]: [`Sidecar`], one module per group of calls;
//! * [`auth`]: loopback by default, a bearer token off loopback; `hub_name`: a call whose
//!   `taskhub` metadata names another hub is refused;
//! * `codec`: prost's, with a request that does not decode answered `INVALID_ARGUMENT`;
//! * [`server`]: [`serve`] on a listener (`route`: `GetWorkItems` served with
//!   [`wire::OutgoingWorkItem`], every other call by the generated service);
//! * [`wire`]: a work item whose turn's past events go out already encoded;
//! * [`dispatch`]: [`Dispatcher`], the connected SDK workers as the runtime's
//!   `RemoteExecutor` and as the [`WorkerCalls`];
//! * `listen`: the accept loop (`taskhub-listen` under the limits of
//!   [`GrpcConfig::with_limits`], each connection HTTP/2 by hyper straight into the one
//!   service); `library`: which gRPC library a call comes from (`user-agent`), the one place
//!   that tells the older Go and Java SDKs apart; `error`: [`GrpcError`] and storage errors as
//!   status codes (`is_retryable()` → `UNAVAILABLE`, else `INTERNAL`); `fuzzing`: the fuzz
//!   targets' entry point (`fuzz/`, and `tests/fuzz_requests.rs` on stable).
//!
//! # Dependencies
//!
//! * **tonic 0.14.9** (default features: server, channel, router) with **tonic-prost 0.14.9**,
//!   **prost 0.14.6** and **prost-types 0.14.6**: the gRPC server and client the Rust
//!   ecosystem uses, kept by the tokio project; prost is its message layer.
//! * At build time, **tonic-prost-build 0.14.9** (code generation) fed by **protox 0.10.0**,
//!   a .proto compiler written in Rust: `build.rs` compiles the vendored file to a
//!   `FileDescriptorSet` and hands it to tonic-prost-build (`compile_fds`), so no `protoc` is
//!   needed on the machine — a fresh clone builds with cargo alone. Generated code is not
//!   committed (it goes to `OUT_DIR`).
//! * Tree: tonic's hyper 1, hyper-util, tower 0.5, axum 0.8 and http are already built for
//!   taskhub-http and taskhub-azure. New to the workspace: 25 crates — h2, tonic, tonic-prost,
//!   prost, prost-derive, prost-types, tokio-stream, hyper-timeout, and for the build script
//!   only protox, protox-parse, prost-reflect, logos (3), miette (2), prost-build, tonic-build,
//!   tonic-prost-build, prettyplease (2), petgraph, fixedbitset, multimap.
//! * Cost measured on the 2-core machine (debug, other crates warm): those 25 crates plus this
//!   one build in about 11 s of wall time (`cargo build -p taskhub-grpc` after
//!   `cargo clean -p` of each); this crate alone (build script and ~4,000 generated lines)
//!   in about 3 s.

pub mod auth;
mod codec;
pub mod convert;
pub mod dispatch;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod hub_name;
mod library;
mod listen;
pub mod proto;
mod route;
pub mod server;
pub mod service;
pub mod wire;

pub use auth::check_bind;
pub use dispatch::{Dispatcher, DispatcherSettings, INVALID_ACTION, INVALID_ENTITY_RESULT};
pub use error::GrpcError;
pub use hub_name::TASKHUB_METADATA;
pub use server::{serve, GrpcConfig, MAX_MESSAGE_BYTES};
pub use service::{RequestCaps, Sidecar, WorkItemStream, WorkerCalls};
pub use taskhub_listen::{Limits, SHUTDOWN_GRACE};
/// The tonic the generated code is built with (for callers that name its types).
pub use tonic;
