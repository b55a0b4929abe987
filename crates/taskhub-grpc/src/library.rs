//! Which SDK a call comes from, as far as Taskhub must tell them apart: the `user-agent` of
//! its gRPC library. Two SDKs whose generated protos predate parts of the protocol are served
//! as they were built to be served:
//! * the Go SDK (`github.com/microsoft/durabletask-go` v0.6.0, gRPC-Go: `grpc-go/…`): no
//!   completion tokens, no health pings, no entities (`dispatch::profile`);
//! * the Java SDK (`com.microsoft:durabletask-client` 1.5.0, gRPC-Java: `grpc-java-…`): the
//!   same, one item at a time (`dispatch::profile`), and a start with no ID reuse policy
//!   (its protos have none) replaces a finished instance, as the sidecars it was built against
//!   do (its `restartInstance` relies on it; `service/reuse.rs`).
//!
//! Every other client (Python's `grpc-python`, JavaScript's `grpc-node-js`, .NET's
//! `grpc-dotnet`) is served by the current protocol alone.

use tonic::metadata::MetadataMap;

/// The gRPC library of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Library {
    /// gRPC-Go.
    Go,
    /// gRPC-Java.
    Java,
    /// Any other.
    Other,
}

impl Library {
    /// The library `metadata`'s `user-agent` names (an application's own prefix allowed).
    pub(crate) fn of(metadata: &MetadataMap) -> Self {
        let ua = metadata
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if ua.contains("grpc-go/") {
            Self::Go
        } else if ua.contains("grpc-java-") {
            Self::Java
        } else {
            Self::Other
        }
    }
}

/// Request metadata with `user-agent: user_agent` (as a library's client sends it), for tests.
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test code")]
pub(crate) fn user_agent(user_agent: &str) -> MetadataMap {
    let mut m = MetadataMap::new();
    m.insert("user-agent", user_agent.parse().unwrap());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(ua: &str) -> Library {
        Library::of(&user_agent(ua))
    }

    #[test]
    fn libraries_are_told_apart_by_their_user_agent() {
        assert_eq!(of("grpc-go/1.56.3"), Library::Go);
        assert_eq!(of("my-app/1.0 grpc-go/1.56.3"), Library::Go);
        assert_eq!(of("grpc-java-netty/1.59.0"), Library::Java);
        assert_eq!(
            of("grpc-python/1.66.0 grpc-c/43.0.0 (linux; chttp2)"),
            Library::Other
        );
        assert_eq!(of("grpc-node-js/1.12.6"), Library::Other);
        assert_eq!(of("grpc-dotnet/2.66.0"), Library::Other);
        assert_eq!(Library::of(&MetadataMap::new()), Library::Other);
    }
}
