//! Decoding a dequeued message, or ending it there: a malformed one is dead-lettered, and
//! one whose large payload cannot be read now goes back for a second (counted, unless the
//! hub's schema moved past this build).

use std::time::Duration;

use taskhub_core::Message;
use taskhub_storage::{Dequeued, QueueName};
use tracing::warn;

use super::{poison, schema_watch};
use crate::codec::{self, DecodeError};
use crate::hub::TaskHub;
use crate::worker::shared::lifecycle::Lifecycle;

/// The message `m` of `queue` decoded; `None` once it was dead-lettered or given back.
pub(crate) async fn decoded(
    hub: &TaskHub,
    lifecycle: &Lifecycle,
    queue: QueueName,
    m: &Dequeued,
) -> Option<Message> {
    match codec::decode(hub.store().as_ref(), &m.body).await {
        Ok(message) => Some(message),
        Err(DecodeError::Malformed(why)) => {
            let reason = format!("malformed message: {why}");
            poison::dead_letter(hub, lifecycle, queue, m, reason).await;
            None
        }
        Err(DecodeError::Storage(e)) => {
            warn!(%queue, error = %e, "could not read a large message payload; retrying later");
            let delay = Duration::from_secs(1);
            schema_watch::give_back_failed(hub, lifecycle, queue, &m.receipt, delay).await;
            None
        }
    }
}
