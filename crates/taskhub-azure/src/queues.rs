//! The queue service: control queues `<hub>-control-NN` and `<hub>-workitems`.

use std::time::Duration;

use async_trait::async_trait;
use taskhub_storage::{
    Dequeued, NewQueueMessage, QueueName, QueueStats, QueueStore, Receipt, StorageError,
    StorageResult, MAX_PARTITIONS,
};

use crate::date::parse_rfc1123;
use crate::envelope;
use crate::http::{encode, status_error, Req, Resp, Service};
use crate::store::AzureStore;
use crate::xml;

/// The longest initial invisibility Azure Storage queues accept (7 days).
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(7 * 24 * 3600);
/// The largest message Azure Storage queues accept (64 KiB of message text).
pub(crate) const MAX_MESSAGE: usize = 64 * 1024;
/// The most messages one Get Messages returns (`numofmessages` is 1 to 32).
pub(crate) const MAX_GET: usize = 32;

fn secs(d: Duration) -> String {
    // Azure counts whole seconds; round up so a message is never visible early.
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    s.to_string()
}

impl AzureStore {
    /// The queue's name in the account: `<hub>-control-NN` or `<hub>-workitems`.
    ///
    /// # Errors
    /// `InvalidArgument` for a control queue beyond the most partitions a hub may have.
    pub fn queue_name(&self, queue: QueueName) -> StorageResult<String> {
        match queue {
            QueueName::Control(p) if p < MAX_PARTITIONS => {
                Ok(format!("{}-control-{p:02}", self.names.lower))
            }
            QueueName::Control(p) => Err(StorageError::InvalidArgument(format!(
                "no control queue {p}: a hub has at most {MAX_PARTITIONS} partitions"
            ))),
            QueueName::WorkItems => Ok(format!("{}-workitems", self.names.lower)),
        }
    }

    async fn create_queue(&self, name: &str) -> StorageResult<()> {
        let req = Req::new(Service::Queue, "PUT", format!("/{name}"));
        self.http
            .create(&req, &format!("queue {name}"))
            .await
            .map(|_| ())
    }

    /// Sends one message, creating the queue on first use.
    pub(crate) async fn put_message(
        &self,
        queue: QueueName,
        message: &NewQueueMessage,
    ) -> StorageResult<()> {
        let text = envelope::text(&message.body, 0);
        self.put_text(queue, message, message.delay, text)
            .await
            .map(|_| ())
    }

    /// Sends one message hidden for `visibility` and returns the delivery that holds it: the
    /// Put's pop receipt deletes or updates it like a Get's (a claim, see
    /// [`taskhub_storage::OutboundMessage::claim`]). The text carries `-1` uncounted
    /// deliveries, so a later Get reports this one too.
    pub(crate) async fn put_claimed(
        &self,
        queue: QueueName,
        message: &NewQueueMessage,
        visibility: Duration,
    ) -> StorageResult<Dequeued> {
        let name = self.queue_name(queue)?;
        let text = envelope::text(&message.body, -1);
        let resp = self.put_text(queue, message, visibility, text).await?;
        let body = resp.text();
        let messages = xml::elements(&body, "QueueMessage");
        let m = messages
            .first()
            .copied()
            .ok_or_else(|| corrupt(&name, "no QueueMessage in a Put Message answer"))?;
        let field = |tag: &str| xml::first(m, tag).ok_or_else(|| corrupt(&name, tag));
        let id = field("MessageId")?;
        let pop = field("PopReceipt")?;
        let enqueued_at = parse_rfc1123(&field("InsertionTime")?)
            .ok_or_else(|| corrupt(&name, "InsertionTime"))?;
        Ok(Dequeued {
            receipt: envelope::receipt(&id, &pop, -1, &message.body),
            body: message.body.clone(),
            dequeue_count: 1,
            enqueued_at,
        })
    }

    /// Put Message with `text`, hidden for `hidden`, creating the queue on first use.
    async fn put_text(
        &self,
        queue: QueueName,
        message: &NewQueueMessage,
        hidden: Duration,
        text: String,
    ) -> StorageResult<Resp> {
        let name = self.queue_name(queue)?;
        let body = message_xml(&text);
        let req = Req::new(Service::Queue, "POST", format!("/{name}/messages"))
            .query("visibilitytimeout", secs(hidden))
            .query("messagettl", "-1")
            .header("content-type", "application/xml")
            .body(body);
        let mut resp = self.http.send(&req).await?;
        if resp.status == 404 {
            self.create_queue(&name).await?;
            resp = self.http.send(&req).await?;
        }
        if resp.ok() {
            Ok(resp)
        } else if resp.status == 413 || resp.error_code() == "RequestBodyTooLarge" {
            Err(StorageError::TooLarge {
                what: format!("message for {name}"),
                size: message.body.len(),
                limit: MAX_MESSAGE,
            })
        } else {
            Err(status_error(&resp, &format!("queue {name}")))
        }
    }

    /// Update Message: a new visibility timeout and, with `text`, new message text. Returns
    /// the response (its `x-ms-popreceipt` is the new pop receipt).
    async fn update_message(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
        text: Option<String>,
    ) -> StorageResult<Resp> {
        let (name, req) = self.held_message_request(queue, receipt, "PUT")?;
        let mut req = req.query("visibilitytimeout", secs(visibility));
        if let Some(text) = text {
            req = req
                .header("content-type", "application/xml")
                .body(message_xml(&text));
        }
        held_answer(self.http.send(&req).await?, name)
    }

    /// The request `method` on the message `receipt` holds (`/{queue}/messages/{id}` with its
    /// pop receipt), and the queue's name.
    fn held_message_request(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        method: &'static str,
    ) -> StorageResult<(String, Req)> {
        let name = self.queue_name(queue)?;
        let d = envelope::delivery(receipt, &name)?;
        let path = format!("/{name}/messages/{}", encode(d.id));
        let req = Req::new(Service::Queue, method, path).query("popreceipt", d.pop);
        Ok((name, req))
    }

    /// The receipt that replaces `old` after an update answered with `resp`.
    pub(crate) fn updated_receipt(
        &self,
        queue: QueueName,
        old: &Receipt,
        resp: &Resp,
    ) -> StorageResult<Receipt> {
        let name = self.queue_name(queue)?;
        let d = envelope::delivery(old, &name)?;
        let pop = resp
            .header("x-ms-popreceipt")
            .ok_or_else(|| corrupt(&name, "no x-ms-popreceipt on an update"))?;
        Ok(envelope::receipt(d.id, pop, d.released, d.body))
    }

    /// Checks that `receipt` is current and keeps its message hidden for `visibility`;
    /// returns the new receipt and the message ID.
    pub(crate) async fn hold(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<(Receipt, String)> {
        let resp = self
            .update_message(queue, receipt, visibility, None)
            .await?;
        let new = self.updated_receipt(queue, receipt, &resp)?;
        let name = self.queue_name(queue)?;
        let id = envelope::delivery(&new, &name)?.id.to_owned();
        Ok((new, id))
    }
}

/// The answer to a call on a held message of the queue `name`: `ReceiptExpired` if the
/// receipt no longer holds it (400, 404).
fn held_answer(resp: Resp, name: String) -> StorageResult<Resp> {
    if resp.ok() {
        Ok(resp)
    } else if matches!(resp.status, 400 | 404) {
        Err(StorageError::ReceiptExpired { queue: name })
    } else {
        Err(status_error(&resp, &format!("queue {name}")))
    }
}

fn message_xml(text: &str) -> String {
    format!(
        "<QueueMessage><MessageText>{}</MessageText></QueueMessage>",
        xml::escape(text)
    )
}

fn corrupt(name: &str, detail: &str) -> StorageError {
    StorageError::Corrupt {
        what: format!("queue {name}"),
        detail: detail.to_owned(),
    }
}

#[async_trait]
impl QueueStore for AzureStore {
    async fn enqueue(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()> {
        self.queue_name(queue)?;
        taskhub_storage::check_messages(self, queue, &messages)?;
        for m in &messages {
            self.put_message(queue, m).await?;
        }
        Ok(())
    }

    async fn dequeue(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>> {
        let name = self.queue_name(queue)?;
        taskhub_storage::check_dequeue(self, queue, max)?;
        let req = Req::new(Service::Queue, "GET", format!("/{name}/messages"))
            .query("numofmessages", max.to_string())
            .query(
                "visibilitytimeout",
                secs(visibility.max(Duration::from_secs(1))),
            );
        let resp = self.http.send(&req).await?;
        if resp.status == 404 {
            return Ok(Vec::new());
        }
        if !resp.ok() {
            return Err(status_error(&resp, &format!("queue {name}")));
        }
        let text = resp.text();
        let mut out = Vec::new();
        for m in xml::elements(&text, "QueueMessage") {
            let field = |tag: &str| xml::first(m, tag).ok_or_else(|| corrupt(&name, tag));
            let id = field("MessageId")?;
            let pop = field("PopReceipt")?;
            let delivered: u32 = field("DequeueCount")?
                .parse()
                .map_err(|_| corrupt(&name, "DequeueCount"))?;
            let enqueued_at = parse_rfc1123(&field("InsertionTime")?)
                .ok_or_else(|| corrupt(&name, "InsertionTime"))?;
            let text = xml::first(m, "MessageText").unwrap_or_default();
            let (released, body) = envelope::parse(&text);
            out.push(Dequeued {
                receipt: envelope::receipt(&id, &pop, released, body),
                body: body.to_owned(),
                // Released deliveries do not count; a claim does (see `envelope`).
                dequeue_count: u32::try_from((i64::from(delivered) - released).max(1))
                    .unwrap_or(u32::MAX),
                enqueued_at,
            });
        }
        Ok(out)
    }

    async fn delete(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        let (name, req) = self.held_message_request(queue, receipt, "DELETE")?;
        held_answer(self.http.send(&req).await?, name).map(|_| ())
    }

    async fn abandon(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        self.update_message(queue, receipt, delay, None)
            .await
            .map(|_| ())
    }

    async fn release(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        let name = self.queue_name(queue)?;
        let d = envelope::delivery(receipt, &name)?;
        let text = envelope::text(d.body, d.released.saturating_add(1));
        self.update_message(queue, receipt, delay, Some(text))
            .await
            .map(|_| ())
    }

    async fn extend(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<Receipt> {
        let resp = self
            .update_message(queue, receipt, visibility, None)
            .await?;
        self.updated_receipt(queue, receipt, &resp)
    }

    async fn stats(&self, queue: QueueName) -> StorageResult<QueueStats> {
        let name = self.queue_name(queue)?;
        let req = Req::new(Service::Queue, "GET", format!("/{name}")).query("comp", "metadata");
        let resp = self.http.send(&req).await?;
        if resp.status == 404 {
            return Ok(QueueStats::default());
        }
        if !resp.ok() {
            return Err(status_error(&resp, &format!("queue {name}")));
        }
        let length = resp
            .header("x-ms-approximate-messages-count")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let oldest_enqueued_at = if length == 0 {
            None
        } else {
            let peek = Req::new(Service::Queue, "GET", format!("/{name}/messages"))
                .query("peekonly", "true")
                .query("numofmessages", "1");
            let resp = self.http.send(&peek).await?;
            xml::first(&resp.text(), "InsertionTime").and_then(|t| parse_rfc1123(&t))
        };
        Ok(QueueStats {
            length,
            oldest_enqueued_at,
        })
    }

    fn max_message_bytes(&self) -> usize {
        MAX_MESSAGE
    }

    fn max_dequeue_batch(&self) -> usize {
        MAX_GET
    }

    fn max_delay(&self) -> Duration {
        MAX_DELAY
    }

    fn delay_granularity(&self) -> Duration {
        // visibilitytimeout is in whole seconds.
        Duration::from_secs(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_round_up_to_whole_seconds() {
        assert_eq!(secs(Duration::ZERO), "0");
        assert_eq!(secs(Duration::from_millis(1)), "1");
        assert_eq!(secs(Duration::from_secs(3)), "3");
        assert_eq!(secs(Duration::from_millis(3_001)), "4");
    }
}
