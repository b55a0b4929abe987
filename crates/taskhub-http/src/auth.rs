//! The guard in front of every route: the bearer token, a cross-site check, and (without a
//! token) loopback only: the `Host` must be a loopback name (against DNS rebinding) and, when
//! the server knows the peer's address ([`serve`](crate::serve) records it), the peer must be
//! on loopback too, so a tokenless router bound to a public address answers nobody else.

use std::net::SocketAddr;
use std::sync::Arc;
use taskhub_listen::ConnectionHandle;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::dashboard;
use crate::error::HttpError;
use crate::state::AppState;

/// Runs the checks, then the route.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    match check(&state, req.uri().path(), req.headers(), peer) {
        Ok(()) => next.run(req).await,
        Err(e) => {
            // The connection is closed after this answer (`taskhub_listen`): a peer without the
            // token cannot keep it open for more tries.
            if let Some(connection) = req.extensions().get::<ConnectionHandle>() {
                connection.close();
            }
            e.into_response()
        }
    }
}

fn check(
    state: &AppState,
    path: &str,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
) -> Result<(), HttpError> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
        if !authority.eq_ignore_ascii_case(host) {
            return Err(HttpError::Forbidden(format!(
                "cross-origin request from {origin:?} to host {host:?}"
            )));
        }
    }
    match state.token.as_deref() {
        None => loopback_only(host, peer),
        // The dashboard's static files hold no data: a browser must load them to ask for the
        // token. Every other route needs the token.
        Some(_) if dashboard::is_asset(path) => Ok(()),
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(bearer)
                .unwrap_or("");
            if constant_time_eq(given.trim().as_bytes(), token.as_bytes()) {
                Ok(())
            } else {
                Err(HttpError::Unauthorized)
            }
        }
    }
}

/// Without a token: a loopback `Host`, and a loopback peer when the peer is known.
fn loopback_only(host: &str, peer: Option<SocketAddr>) -> Result<(), HttpError> {
    if !is_loopback_host(host) {
        return Err(HttpError::Forbidden(format!(
            "host {host:?} is not a loopback name; without a token this server answers only localhost, 127.0.0.1 and [::1]"
        )));
    }
    match peer {
        Some(p) if !p.ip().is_loopback() => Err(HttpError::Forbidden(format!(
            "request from {}: without a token this server answers only clients on this machine (set http_token to serve others)",
            p.ip()
        ))),
        _ => Ok(()),
    }
}

/// The credentials of an `Authorization: Bearer …` header (the scheme is case-insensitive,
/// RFC 9110 §11.1).
fn bearer(header: &str) -> Option<&str> {
    let (scheme, value) = header.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(value)
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares in time independent of where the inputs differ (not of their lengths).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(subtle::ConstantTimeEq::ct_eq(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_token_comparison() {
        for h in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "127.1.2.3",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "",
            "evil.example",
            "evil.example:80",
            "10.0.0.1:80",
            "localhost.evil.example",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd") && !constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn without_a_token_only_loopback_peers_are_answered() {
        let lo: SocketAddr = "127.0.0.1:50000".parse().unwrap();
        let public: SocketAddr = "203.0.113.7:50000".parse().unwrap();
        assert!(loopback_only("localhost:8080", Some(lo)).is_ok());
        assert!(loopback_only("localhost:8080", None).is_ok());
        // A remote client that sends a loopback Host is still refused.
        let e = loopback_only("localhost", Some(public))
            .unwrap_err()
            .to_string();
        assert!(e.contains("203.0.113.7"), "{e}");
        assert!(loopback_only("example.com", Some(lo)).is_err());
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer("Bearer t0k"), Some("t0k"));
        assert_eq!(bearer("bearer t0k"), Some("t0k"));
        assert_eq!(bearer("BEARER t0k"), Some("t0k"));
        assert_eq!(bearer("Basic t0k"), None);
        assert_eq!(bearer("Bearer"), None);
    }
}
