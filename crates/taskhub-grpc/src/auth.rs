//! The HTTP API's rules for the gRPC endpoint: loopback by default; off loopback a token is
//! required ([`check_bind`]), and every call must carry it as the metadata
//! `authorization: Bearer <token>` (compared in constant time), else `UNAUTHENTICATED`.
//! Without a token, a call from a peer that is not on this machine is refused as well.

use std::net::SocketAddr;
use std::sync::Arc;

use taskhub_listen::ConnectionHandle;
use tonic::{Request, Status};

use crate::error::GrpcError;

/// Checks the address against the token rule before anything is opened.
///
/// # Errors
/// [`GrpcError::TokenRequired`] for a non-loopback address without a (non-empty) token.
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<(), GrpcError> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        Ok(())
    } else {
        Err(GrpcError::TokenRequired { addr })
    }
}

/// The check run before every call (a tonic interceptor).
#[derive(Clone, Debug, Default)]
pub struct Auth {
    token: Option<Arc<str>>,
}

impl Auth {
    /// With `token` (`None` or empty: no token, loopback peers only).
    #[must_use]
    pub fn new(token: Option<&str>) -> Self {
        Self {
            token: token.filter(|t| !t.is_empty()).map(Arc::from),
        }
    }

    /// Lets the call through, or refuses it.
    ///
    /// # Errors
    /// `UNAUTHENTICATED` without the right token, `PERMISSION_DENIED` from a remote peer (or
    /// one whose address is unknown) when no token is set.
    ///
    /// A refused call's connection is closed once it has its answer (`taskhub_listen`'s
    /// [`ConnectionHandle`]): the token travels with each call, so this is the earliest the
    /// protocol allows, and a peer without it cannot keep a connection for more tries.
    pub fn check(&self, request: Request<()>) -> Result<Request<()>, Status> {
        let checked = self.check_parts(
            request
                .metadata()
                .get("authorization")
                .and_then(|v| v.to_str().ok()),
            request.remote_addr(),
        );
        if let Err(refused) = checked {
            if let Some(connection) = request.extensions().get::<ConnectionHandle>() {
                connection.close();
            }
            return Err(refused);
        }
        Ok(request)
    }

    fn check_parts(
        &self,
        authorization: Option<&str>,
        peer: Option<SocketAddr>,
    ) -> Result<(), Status> {
        match &self.token {
            None => match peer {
                Some(p) if p.ip().is_loopback() => Ok(()),
                Some(p) => Err(Status::permission_denied(format!(
                    "call from {}: without a token this endpoint answers only clients on this machine (set http_token to serve others)",
                    p.ip()
                ))),
                // The accept loop puts every connection's peer into its requests: a call
                // without one did not come through it, and is not known to be local.
                None => Err(Status::permission_denied(
                    "call from an unknown address: without a token this endpoint answers only clients on this machine (set http_token to serve others)",
                )),
            },
            Some(token) => {
                let given = authorization.and_then(bearer).unwrap_or("");
                if constant_time_eq(given.trim().as_bytes(), token.as_bytes()) {
                    Ok(())
                } else {
                    Err(Status::unauthenticated(
                        "missing or wrong token: send the metadata `authorization: Bearer <token>`",
                    ))
                }
            }
        }
    }
}

/// The credentials of `Bearer …` (the scheme is case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(rest)
}

/// Compares in time independent of where the inputs differ (not of their lengths).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(subtle::ConstantTimeEq::ct_eq(a, b))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use tonic::Code;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn off_loopback_a_token_is_required_to_bind() {
        assert!(check_bind(addr("127.0.0.1:4001"), None).is_ok());
        assert!(check_bind(addr("[::1]:4001"), None).is_ok());
        let e = check_bind(addr("0.0.0.0:4001"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("0.0.0.0:4001") && e.contains("http_token"),
            "{e}"
        );
        assert!(check_bind(addr("0.0.0.0:4001"), Some("")).is_err());
        assert!(check_bind(addr("10.1.2.3:4001"), Some("t0k")).is_ok());
    }

    #[test]
    fn with_a_token_every_call_must_carry_it() {
        let auth = Auth::new(Some("s3cret"));
        let remote = Some(addr("10.1.2.3:5000"));
        assert!(auth.check_parts(Some("Bearer s3cret"), remote).is_ok());
        assert!(auth.check_parts(Some("bearer s3cret"), remote).is_ok());
        for wrong in [
            None,
            Some("Bearer s3cre"),
            Some("Bearer s3cretx"),
            Some("s3cret"),
            Some("Basic s3cret"),
        ] {
            let e = auth.check_parts(wrong, remote).unwrap_err();
            assert_eq!(e.code(), Code::Unauthenticated, "{wrong:?}");
        }
        // A loopback caller needs it too, once a token is set.
        let e = auth
            .check_parts(None, Some(addr("127.0.0.1:5000")))
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
    }

    #[test]
    fn without_a_token_only_loopback_peers_are_answered() {
        let auth = Auth::new(None);
        assert!(auth.check_parts(None, Some(addr("127.0.0.1:5000"))).is_ok());
        assert!(auth.check_parts(None, Some(addr("[::1]:5000"))).is_ok());
        let e = auth
            .check_parts(None, Some(addr("192.168.1.9:5000")))
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied);
        let e = auth.check_parts(None, None).unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied);
        assert!(e.message().contains("unknown address"), "{}", e.message());
        assert!(
            Auth::new(Some("")).token.is_none(),
            "an empty token is no token"
        );
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd") && !constant_time_eq(b"abc", b"ab"));
    }
}
