//! The messages, client and server generated from the vendored
//! `proto/orchestrator_service.proto` (microsoft/durabletask-protobuf). The file declares no
//! `package`, so the service is `TaskHubSidecarService` and every method path is
//! `/TaskHubSidecarService/<Rpc>`, as the SDKs call them.

#![allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    clippy::unwrap_used,
    reason = "generated code"
)]

tonic::include_proto!("_");
