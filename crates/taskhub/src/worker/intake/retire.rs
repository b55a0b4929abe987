//! A removed partition (scale-out-design.md "Removing Partitions"): its owner processes no
//! turns there; it re-homes the partition's instances to the live layout, forwards every
//! message (timers included, as they become visible) to the instance's new partition, and
//! retires the queue once it has stayed empty — visible or not — for
//! `partition_retire_grace`, so senders that read an instance row before it moved have time
//! to learn the new home. A forwarded message keeps its ID, so a copy that a crash leaves in
//! both queues is applied once.

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::InstanceId;
use taskhub_storage::{
    Dequeued, Expect, InstanceQuery, InstanceRow, InstanceStore, NewQueueMessage, PartitionRow,
    QueueName, StorageError,
};
use tracing::{info, warn};

use super::control::Lease;

use crate::hub::TaskHub;
use crate::worker::lifecycle::decode;
use crate::worker::shared::{Returns, Shared};

/// Moves the work of retiring `lease.partition` until it is retired or the lease ends.
pub(crate) async fn run(shared: Arc<Shared>, mut lease: Lease) {
    let p = lease.partition;
    let queue = QueueName::Control(p);
    let settings = shared.hub.settings().clone();
    let clock = shared.hub.clock().clone();
    let store = shared.hub.store().clone();
    let pause = (settings.partition_retire_grace / 4).min(Duration::from_secs(1));
    let mut stop = shared.lifecycle.stop.clone();
    let mut empty_since: Option<Duration> = None;
    let mut scanned = false;
    info!(
        partition = p,
        "partition is being removed: moving its instances and messages"
    );
    while !shared.lifecycle.stopping() && !*lease.stop.borrow() {
        if !scanned {
            scanned = rehome_all(&shared, p).await;
        }
        match store
            .dequeue(
                queue,
                shared.hub.store().max_dequeue_batch().max(1),
                settings.control_queue_visibility_timeout,
            )
            .await
        {
            Ok(messages) if !messages.is_empty() => {
                empty_since = None;
                for m in messages {
                    forward(&shared, p, m).await;
                }
                continue;
            }
            Ok(_) => match store.stats(queue).await {
                Ok(stats) if stats.length == 0 => {
                    let now = clock.monotonic();
                    match empty_since {
                        None => {
                            empty_since = Some(now);
                            // Instances whose row a late turn wrote back to this partition.
                            rehome_all(&shared, p).await;
                        }
                        Some(since)
                            if now.saturating_sub(since) >= settings.partition_retire_grace =>
                        {
                            retire(&shared.hub, p).await;
                            return;
                        }
                        Some(_) => {}
                    }
                }
                Ok(_) => empty_since = None,
                Err(e) => warn!(%queue, error = %e, "could not read queue length"),
            },
            Err(e) => warn!(%queue, error = %e, "dequeue failed"),
        }
        tokio::select! {
            () = clock.sleep(pause) => {}
            _ = lease.stop.changed() => {}
            _ = stop.changed() => {}
        }
    }
}

/// Sends one message on to its instance's live partition.
async fn forward(shared: &Shared, p: u32, m: Dequeued) {
    let store = shared.hub.store();
    let queue = QueueName::Control(p);
    let Some(message) = decode::decoded(&shared.hub, &shared.lifecycle, queue, &m).await else {
        return;
    };
    let live = shared.live_partition_count();
    let to = match rehome(store.as_ref(), live, &message.target, p).await {
        Ok(to) => to,
        Err(e) => {
            warn!(instance = %message.target, error = %e, "could not re-home instance; retrying later");
            retry_later(shared.returns(), queue, &m).await;
            return;
        }
    };
    let target = QueueName::Control(to);
    let copy = NewQueueMessage {
        body: m.body.clone(),
        delay: Duration::ZERO,
    };
    match store.enqueue(target, vec![copy]).await {
        Ok(()) => {
            shared.hub.signals().enqueued(target);
            if let Err(e) = store.delete(queue, &m.receipt).await {
                warn!(error = %e, "forwarded message not deleted; its copy will be de-duplicated");
            }
        }
        Err(e) => {
            warn!(error = %e, "could not forward a message; retrying later");
            retry_later(shared.returns(), queue, &m).await;
        }
    }
}

/// Gives a message that could not be forwarded back for a second.
async fn retry_later(returns: Returns<'_>, queue: QueueName, m: &Dequeued) {
    crate::worker::lifecycle::schema_watch::give_back_failed(
        returns.hub,
        returns.lifecycle,
        queue,
        &m.receipt,
        Duration::from_secs(1),
    )
    .await;
}

/// The live partition of `instance` among the first `live` partitions, moving its row off
/// retiring partition `p` if needed.
async fn rehome(
    store: &dyn InstanceStore,
    live: u32,
    instance: &InstanceId,
    p: u32,
) -> Result<u32, StorageError> {
    for _ in 0..5 {
        let Some(row) = store.get_instance(instance).await? else {
            return Ok(instance.partition(live));
        };
        if row.partition != p && row.partition < live {
            return Ok(row.partition);
        }
        let to = instance.partition(live);
        let moved = InstanceRow {
            partition: to,
            etag: None,
            ..row.clone()
        };
        let expect = row.etag.clone().map_or(Expect::Any, Expect::ETag);
        match store.put_instance(&moved, expect).await {
            Ok(_) => return Ok(to),
            Err(StorageError::Conflict { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StorageError::Conflict {
        what: format!("instance row of '{instance}' kept changing while it was re-homed"),
    })
}

/// Re-homes every instance whose row names partition `p`. True if the scan completed.
async fn rehome_all(shared: &Shared, p: u32) -> bool {
    let store = shared.hub.store();
    let mut query = InstanceQuery {
        page_size: 1000,
        // Entities live on partitions too.
        include_entities: true,
        ..InstanceQuery::default()
    };
    let mut moved = 0u64;
    loop {
        let page = match store.list_instances(&query).await {
            Ok(page) => page,
            Err(e) => {
                warn!(partition = p, error = %e, "could not list instances to re-home");
                return false;
            }
        };
        for row in page.instances.iter().filter(|r| r.partition == p) {
            match rehome(
                store.as_ref(),
                shared.live_partition_count(),
                &row.instance_id,
                p,
            )
            .await
            {
                Ok(_) => moved += 1,
                Err(e) => {
                    warn!(instance = %row.instance_id, error = %e, "could not re-home instance");
                    return false;
                }
            }
        }
        match page.continuation {
            Some(next) => query.continuation = Some(next),
            None => break,
        }
    }
    if moved > 0 {
        info!(
            partition = p,
            moved, "instances re-homed to the live partitions"
        );
    }
    true
}

/// Marks the partition retired (retiring and offline): its owner releases it, nobody
/// claims it, and its queue is no longer used.
async fn retire(hub: &TaskHub, p: u32) {
    let result = hub
        .admin()
        .update(p, |row| PartitionRow {
            offline: true,
            ..row.clone()
        })
        .await;
    match result {
        Ok(_) => info!(
            partition = p,
            "partition retired: its queue stayed empty for the grace period"
        ),
        Err(e) => warn!(partition = p, error = %e, "could not retire partition; will retry"),
    }
}
