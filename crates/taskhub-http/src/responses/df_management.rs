//! The management payload Durable Functions returns from a start (`CreateCheckStatusResponse`).

use serde::Serialize;
use utoipa::ToSchema;

use crate::df::payload::status_url;

/// The instance's ID and the URLs that manage it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManagementPayload {
    /// The instance ID.
    pub id: String,
    /// `GET`: the status.
    pub status_query_get_uri: String,
    /// `POST`: raise an event (`{eventName}` to fill in).
    pub send_event_post_uri: String,
    /// `POST`: terminate.
    pub terminate_post_uri: String,
    /// `POST`: rewind a Failed instance.
    pub rewind_post_uri: String,
    /// `DELETE`: purge.
    pub purge_history_delete_uri: String,
    /// `POST`: restart.
    pub restart_post_uri: String,
    /// `POST`: suspend.
    pub suspend_post_uri: String,
    /// `POST`: resume.
    pub resume_post_uri: String,
}

impl ManagementPayload {
    /// The payload for `instance_id`, its URLs under `origin`.
    pub fn new(origin: &str, instance_id: &str) -> Self {
        let url = status_url(origin, instance_id);
        Self {
            id: instance_id.to_owned(),
            status_query_get_uri: url.clone(),
            send_event_post_uri: format!("{url}/raiseEvent/{{eventName}}"),
            terminate_post_uri: format!("{url}/terminate?reason={{text}}"),
            rewind_post_uri: format!("{url}/rewind?reason={{text}}"),
            purge_history_delete_uri: url.clone(),
            restart_post_uri: format!("{url}/restart"),
            suspend_post_uri: format!("{url}/suspend?reason={{text}}"),
            resume_post_uri: format!("{url}/resume?reason={{text}}"),
        }
    }
}
