//! The guard in front of every route: the bearer token, a cross-site check, and (without a
//! token) a loopback-only `Host` check against DNS rebinding.

use std::sync::Arc;

use axum::extract::{Request, State};
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
    match check(&state, req.uri().path(), req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

fn check(state: &AppState, path: &str, headers: &HeaderMap) -> Result<(), HttpError> {
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
        None if !is_loopback_host(host) => Err(HttpError::Forbidden(format!(
            "host {host:?} is not a loopback name; without a token this server answers only localhost, 127.0.0.1 and [::1]"
        ))),
        None => Ok(()),
        // The dashboard's static files hold no data: a browser must load them to ask for the
        // token. Every other route needs the token.
        Some(_) if dashboard::is_asset(path) => Ok(()),
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .unwrap_or("");
            if constant_time_eq(given.trim().as_bytes(), token.as_bytes()) {
                Ok(())
            } else {
                Err(HttpError::Unauthorized)
            }
        }
    }
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
}
