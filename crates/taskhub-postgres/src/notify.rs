//! Wake-ups across processes with `LISTEN/NOTIFY`: a coalesced hint, polling stays the
//! fallback.
//!
//! * **Sending**: a committed write that made messages visible at once (an enqueue, a
//!   checkpoint's plain outbound messages, an abandon or release without delay) marks its
//!   queues; one task per store sends `pg_notify` for every marked queue in one statement,
//!   then looks again. While a notification is in flight, further marks collect and go out
//!   together: under load there is about one notification per round trip, not one per commit.
//! * **Receiving**: one dedicated connection per store (outside the pool, whose connections
//!   would drop notifications) runs `LISTEN` on the hub's channel and calls every registered
//!   [`QueueWake`] with the queue named in the payload. If it is lost it reconnects after a
//!   second; meanwhile the pollers' own polling finds the messages.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use deadpool_postgres::Pool;
use futures_util::StreamExt;
use taskhub_storage::{QueueName, QueueWake, MAX_PARTITIONS};
use tokio::sync::Notify;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The bit of a queue in the set of marked queues.
fn bit(queue: QueueName) -> u32 {
    match queue {
        QueueName::Control(p) if p < MAX_PARTITIONS => 1 << p,
        _ => 1 << MAX_PARTITIONS,
    }
}

/// The payload of a queue's notification, and back.
pub(crate) fn payload(queue: QueueName) -> String {
    match queue {
        QueueName::Control(p) => p.to_string(),
        QueueName::WorkItems => "w".to_owned(),
    }
}

fn queue_of(payload: &str) -> Option<QueueName> {
    if payload == "w" {
        return Some(QueueName::WorkItems);
    }
    payload
        .parse::<u32>()
        .ok()
        .filter(|p| *p < MAX_PARTITIONS)
        .map(QueueName::Control)
}

/// The sending side, shared by the store and its sender task.
#[derive(Debug, Default)]
pub(crate) struct Publisher {
    marked: AtomicU32,
    kick: Notify,
    /// Ends the listener: its connection closes with the store.
    stop: Notify,
    closed: AtomicBool,
}

impl Publisher {
    /// Marks `queue` for the next notification.
    pub(crate) fn mark(&self, queue: QueueName) {
        self.marked.fetch_or(bit(queue), Ordering::SeqCst);
        self.kick.notify_one();
    }

    /// Ends the sender task and the listener.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.kick.notify_one();
        self.stop.notify_one();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// The marked queues of a bit set.
fn queues_of(bits: u32) -> Vec<QueueName> {
    let mut out: Vec<QueueName> = (0..MAX_PARTITIONS)
        .filter(|p| bits & (1 << p) != 0)
        .map(QueueName::Control)
        .collect();
    if bits & (1 << MAX_PARTITIONS) != 0 {
        out.push(QueueName::WorkItems);
    }
    out
}

/// Sends the marked queues' notifications until the publisher is closed.
pub(crate) async fn send_loop(publisher: Arc<Publisher>, pool: Pool, channel: String) {
    loop {
        publisher.kick.notified().await;
        if publisher.is_closed() {
            return;
        }
        let bits = publisher.marked.swap(0, Ordering::SeqCst);
        if bits == 0 {
            continue;
        }
        let payloads: Vec<String> = queues_of(bits).into_iter().map(payload).collect();
        let sent = async {
            let client = pool.get().await.ok()?;
            client
                .execute(
                    "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS t(p)",
                    &[&channel, &payloads],
                )
                .await
                .ok()
        }
        .await;
        if sent.is_none() {
            // A hint: the pollers find the messages anyway.
            tracing::debug!(channel, "a queue notification could not be sent");
        }
    }
}

/// The receiving side: the wakes registered by the task hubs opened on the store.
#[derive(Default)]
pub(crate) struct Watchers {
    wakes: Mutex<Vec<QueueWake>>,
}

impl Watchers {
    pub(crate) fn add(&self, wake: QueueWake) {
        if let Ok(mut wakes) = self.wakes.lock() {
            wakes.push(wake);
        }
    }

    fn wake(&self, queue: QueueName) {
        let wakes = self.wakes.lock().map(|w| w.clone()).unwrap_or_default();
        for wake in wakes {
            wake(queue);
        }
    }
}

/// How long the listener waits before connecting again after losing its connection.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Where the listener listens, and for whom.
pub(crate) struct Listener {
    /// The store's wakes (gone with the store).
    pub(crate) watchers: Weak<Watchers>,
    /// The store's publisher, whose closing ends the listener and closes its connection.
    pub(crate) publisher: Arc<Publisher>,
    /// The connection's settings.
    pub(crate) config: tokio_postgres::Config,
    /// Its TLS connector.
    pub(crate) tls: MakeRustlsConnect,
    /// The hub's channel.
    pub(crate) channel: String,
}

/// Listens on the hub's channel until the store is closed (dropped).
pub(crate) async fn listen_loop(listener: Listener) {
    let Listener {
        watchers,
        publisher,
        config,
        tls,
        channel,
    } = listener;
    while !publisher.is_closed() && watchers.strong_count() > 0 {
        if let Ok((client, mut connection)) = config.connect(tls.clone()).await {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            let statement = format!("LISTEN \"{channel}\"");
            let listen = client.batch_execute(&statement);
            tokio::pin!(listen);
            let mut listening = false;
            loop {
                tokio::select! {
                    () = publisher.stop.notified() => return,
                    done = &mut listen, if !listening => {
                        if done.is_err() {
                            break;
                        }
                        listening = true;
                    }
                    message = messages.next() => match message {
                        Some(Ok(AsyncMessage::Notification(n))) => {
                            let Some(watchers) = watchers.upgrade() else { return };
                            if let Some(queue) = queue_of(n.payload()) {
                                watchers.wake(queue);
                            }
                        }
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => break,
                    },
                }
            }
        }
        if publisher.is_closed() || watchers.strong_count() == 0 {
            return;
        }
        tracing::debug!(channel, "the LISTEN connection was lost; reconnecting");
        #[expect(
            clippy::disallowed_methods,
            reason = "a reconnect back-off in real time; no lease or timer decision depends on it"
        )]
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_and_bits_round_trip() {
        for q in [
            QueueName::WorkItems,
            QueueName::Control(0),
            QueueName::Control(15),
        ] {
            assert_eq!(queue_of(&payload(q)), Some(q));
            assert_eq!(queues_of(bit(q)), vec![q]);
        }
        assert_eq!(queue_of("16"), None);
        assert_eq!(queue_of("x"), None);
    }
}
