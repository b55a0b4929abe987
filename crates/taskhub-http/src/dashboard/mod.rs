//! The web dashboard: static HTML, JS and CSS built into the binary (nothing is fetched from
//! the internet). The page holds no data: it asks for the token if the API wants one, keeps
//! it in `sessionStorage`, and reads everything through the API. Every value is put into the
//! page with `textContent` (never `innerHTML`), so data cannot inject markup.

use std::sync::Arc;

use axum::extract::OriginalUri;
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use crate::state::AppState;

const INDEX: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const STYLE: &str = include_str!("style.css");
const FAVICON: &str = include_str!("favicon.svg");

/// The dashboard's files: served without the token.
const ASSETS: [&str; 5] = ["/", "/index.html", "/app.js", "/style.css", "/favicon.svg"];

/// True for the paths of the static files.
pub(crate) fn is_asset(path: &str) -> bool {
    ASSETS.contains(&path)
}

fn file(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            ),
        ],
        body,
    )
}

/// The page; nested under a prefix (`/ops`, which axum routes here without a trailing slash),
/// it redirects to `/ops/index.html` so that its relative links (assets, API) resolve under
/// the prefix.
#[utoipa::path(get, path = "/", tag = "dashboard", security(()),
    summary = "The dashboard (served without the token: it holds no data)",
    responses((status = 200, description = "The page", content_type = "text/html", body = String)))]
pub(crate) async fn index(OriginalUri(original): OriginalUri) -> Response {
    let path = original.path();
    if path.ends_with('/') {
        return file("text/html; charset=utf-8", INDEX).into_response();
    }
    let query = original.query().map_or(String::new(), |q| format!("?{q}"));
    Redirect::permanent(&format!("{path}/index.html{query}")).into_response()
}

/// `GET /app.js`.
#[utoipa::path(get, path = "/app.js", tag = "dashboard", security(()),
    summary = "Dashboard script (served without the token: it holds no data)",
    responses((status = 200, description = "The script", content_type = "text/javascript", body = String)))]
pub(crate) async fn app_js() -> impl IntoResponse {
    file("text/javascript; charset=utf-8", APP_JS)
}

/// `GET /style.css`.
#[utoipa::path(get, path = "/style.css", tag = "dashboard", security(()),
    summary = "Dashboard style (served without the token: it holds no data)",
    responses((status = 200, description = "The style", content_type = "text/css", body = String)))]
pub(crate) async fn style() -> impl IntoResponse {
    file("text/css; charset=utf-8", STYLE)
}

/// `GET /favicon.svg`.
#[utoipa::path(get, path = "/favicon.svg", tag = "dashboard", security(()),
    summary = "Icon (served without the token: it holds no data)",
    responses((status = 200, description = "The icon", content_type = "image/svg+xml", body = String)))]
pub(crate) async fn favicon() -> impl IntoResponse {
    file("image/svg+xml", FAVICON)
}

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(index))
        .route(
            "/index.html",
            get(|| async { file("text/html; charset=utf-8", INDEX) }),
        )
        .route("/app.js", get(app_js))
        .route("/style.css", get(style))
        .route("/favicon.svg", get(favicon))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_never_writes_markup_from_data() {
        for forbidden in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!APP_JS.contains(forbidden), "app.js uses {forbidden}");
        }
        assert!(
            !INDEX.contains("http://") && !INDEX.contains("https://"),
            "index.html loads something from the internet"
        );
    }
}
