//! Dead letters: list and replay.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Value};

use crate::error::{ApiResult, HttpError};
use crate::state::AppState;
use crate::{isotime, validate};

/// `GET /api/dead-letters?after=&top=`: oldest first.
pub(crate) async fn list(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    let limit = validate::page_size(q.get("top").map(String::as_str))?;
    let after = q.get("after").filter(|a| !a.is_empty());
    let letters = s
        .client
        .list_dead_letters(after.map(String::as_str), limit)
        .await?;
    Ok(Json(Value::Array(
        letters
            .iter()
            .map(|l| {
                json!({
                    "id": l.id,
                    "queue": l.queue.to_string(),
                    "reason": l.reason,
                    "dequeueCount": l.dequeue_count,
                    "deadLetteredTime": isotime::millis(l.dead_lettered_at),
                    "body": l.body,
                })
            })
            .collect(),
    )))
}

/// `POST /api/dead-letters/{id}/replay`: puts the letter back into its queue; 404 unknown.
pub(crate) async fn replay(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    if s.client.replay_dead_letter(&id).await? {
        Ok(Json(json!({ "replayed": id })))
    } else {
        Err(HttpError::NotFound(format!("dead letter '{id}'")))
    }
}
