//! Dead letters: list and replay.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::Json;

use crate::error::{ApiResult, HttpError};
use crate::responses::{DeadLetterView, ErrorBody, Replayed};
use crate::state::AppState;
use crate::validate;

/// `GET /api/dead-letters?after=&top=`: oldest first.
#[utoipa::path(get, path = "/api/dead-letters", tag = "taskhub",
    summary = "Dead letters, oldest first",
    params(
        ("after" = Option<String>, Query, description = "The last ID of the previous page."),
        ("top" = Option<String>, Query, description = "Page size, 1 to 1000 (default 100).")
    ),
    responses((status = 200, description = "The letters", body = Vec<DeadLetterView>)))]
pub(crate) async fn list(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<DeadLetterView>>> {
    let limit = validate::page_size(q.get("top").map(String::as_str))?;
    let after = q.get("after").filter(|a| !a.is_empty());
    let letters = s
        .client
        .list_dead_letters(after.map(String::as_str), limit)
        .await?;
    Ok(Json(letters.iter().map(DeadLetterView::from).collect()))
}

/// `POST /api/dead-letters/{id}/replay`: puts the letter back into its queue; 404 unknown.
#[utoipa::path(post, path = "/api/dead-letters/{id}/replay", tag = "taskhub",
    summary = "Put a dead letter back into its queue",
    params(("id" = String, Path, description = "The letter's ID.")),
    responses(
        (status = 200, description = "Replayed", body = Replayed),
        (status = 404, description = "Unknown letter", body = ErrorBody)
    ))]
pub(crate) async fn replay(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Replayed>> {
    if s.client.replay_dead_letter(&id).await? {
        Ok(Json(Replayed { replayed: id }))
    } else {
        Err(HttpError::NotFound(format!("dead letter '{id}'")))
    }
}
