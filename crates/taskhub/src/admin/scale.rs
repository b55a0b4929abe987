//! A scale recommendation from queue lengths and message ages (scale-out-design.md "Scale
//! controller interaction"), in the shape an autoscaler reads: the target worker count is
//! `max(ceil(work items / max activities per worker), min(busy control queues,
//! ceil(control messages / max orchestrations per worker)))`, raised by one when work items
//! wait longer than the latency threshold in every sample, and zero when everything is idle.
//!
//! Work that waits for a remote worker whose filters take it ([`UnmatchedWork`], known only
//! in the process whose executor holds it: [`HubAdmin::scale_seeing`]) is no call for
//! capacity: while any waits the recommendation never scales in, its lag adds no worker, and
//! the reason names what it waits for.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;
use taskhub_storage::QueueName;

use super::{HubAdmin, UnmatchedSource, UnmatchedWork};
use crate::error::TaskhubError;

/// One reading of one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueSample {
    /// The queue (`control-00` … or `workitems`).
    pub queue: String,
    /// Messages, visible or not.
    pub length: u64,
    /// Age of the oldest message in milliseconds.
    pub oldest_age_ms: Option<u64>,
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleAction {
    /// Add workers.
    ScaleOut,
    /// Remove workers.
    ScaleIn,
    /// Keep the count.
    None,
}

/// The recommendation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScaleRecommendation {
    /// Workers that hold partitions now (workers holding none are not visible).
    pub current_workers: usize,
    /// The worker count to run.
    pub recommended_workers: usize,
    /// Add, remove or keep.
    pub action: ScaleAction,
    /// Why, in words.
    pub reason: String,
    /// The last sample of each queue.
    pub queues: Vec<QueueSample>,
    /// The work that waits for a remote (SDK) worker whose filters take it, as the sample
    /// that saw the most (an empty report when none waited); `None` when this process cannot
    /// know (no executor here: [`HubAdmin::scale`] from another process than the one serving
    /// the SDK workers).
    pub unmatched: Option<UnmatchedWork>,
}

/// Work items older than this in every sample mean activities are falling behind.
const HIGH_LATENCY: Duration = Duration::from_secs(1);

impl HubAdmin {
    /// Samples every queue `samples` times, `interval` apart, and recommends a worker count.
    ///
    /// # Errors
    /// A storage error.
    pub async fn scale(
        &self,
        samples: usize,
        interval: Duration,
    ) -> Result<ScaleRecommendation, TaskhubError> {
        self.scale_seeing(samples, interval, None).await
    }

    /// As [`scale`](Self::scale), also reading at each sample the work that waits in this
    /// process for a remote worker whose filters take it (`unmatched`): while any waits, the
    /// recommendation does not scale in, adds no worker for its lag (more workers of the same
    /// kind would not take it), and says what it waits for.
    ///
    /// # Errors
    /// A storage error.
    pub async fn scale_seeing(
        &self,
        samples: usize,
        interval: Duration,
        unmatched: Option<&UnmatchedSource>,
    ) -> Result<ScaleRecommendation, TaskhubError> {
        let mut waiting: Option<UnmatchedWork> = None;
        let store = self.hub.store();
        let settings = self.hub.settings();
        let mut rounds: Vec<Vec<QueueSample>> = Vec::new();
        let mut owners = BTreeSet::new();
        for i in 0..samples.max(1) {
            if i > 0 {
                self.hub.clock().sleep(interval).await;
            }
            let now = self.hub.clock().now();
            let rows = store.list_partitions().await?;
            owners = rows.iter().filter_map(|r| r.owner.clone()).collect();
            let mut queues: Vec<QueueName> = rows
                .iter()
                .filter(|r| !r.offline)
                .map(|r| QueueName::Control(r.partition))
                .collect();
            queues.push(QueueName::WorkItems);
            let mut round = Vec::new();
            for q in queues {
                let stats = store.stats(q).await?;
                round.push(QueueSample {
                    queue: q.to_string(),
                    length: stats.length,
                    oldest_age_ms: stats.oldest_enqueued_at.map(|t| {
                        u64::try_from(now.saturating_since(t).as_millis()).unwrap_or(u64::MAX)
                    }),
                });
            }
            rounds.push(round);
            if let Some(source) = unmatched {
                let now = source();
                if waiting.as_ref().is_none_or(|w| now.total() >= w.total()) {
                    waiting = Some(now);
                }
            }
        }
        let last = rounds.last().cloned().unwrap_or_default();
        let held = waiting.as_ref().filter(|w| w.total() > 0);
        // What waits for a worker with matching filters needs no capacity: its messages (at
        // least one per item) are left out of the counts.
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let (held_work, held_control) = held.map_or((0, 0), |w| {
            (
                count(w.activities),
                count(w.orchestrations.saturating_add(w.entities)),
            )
        });
        let work = last.iter().find(|q| q.queue == "workitems");
        let work_len = work.map_or(0, |q| q.length).saturating_sub(held_work);
        let control: Vec<&QueueSample> = last.iter().filter(|q| q.queue != "workitems").collect();
        let control_len: u64 = control
            .iter()
            .map(|q| q.length)
            .sum::<u64>()
            .saturating_sub(held_control);
        let busy_control = control.iter().filter(|q| q.length > 0).count();
        let per = |n: u64, limit: usize| {
            usize::try_from(n.div_ceil(u64::try_from(limit.max(1)).unwrap_or(1)))
                .unwrap_or(usize::MAX)
        };
        let for_activities = per(work_len, settings.max_concurrent_activities);
        let for_orchestrations =
            busy_control.min(per(control_len, settings.max_concurrent_orchestrations));
        let mut target = for_activities.max(for_orchestrations);
        let lagging = rounds.iter().all(|r| {
            r.iter().any(|q| {
                q.queue == "workitems"
                    && q.oldest_age_ms.is_some_and(|a| {
                        a > u64::try_from(HIGH_LATENCY.as_millis()).unwrap_or(u64::MAX)
                    })
            })
        });
        let current = owners.len();
        let mut reason = format!(
            "{work_len} work items need {for_activities} worker(s) at {} activities each; {control_len} control messages on {busy_control} busy partition(s) need {for_orchestrations}",
            settings.max_concurrent_activities
        );
        // Activities that wait for a matching worker make the work items lag: not for capacity.
        let lag_is_unmatched = held.is_some_and(|w| w.activities > 0);
        if lagging && !rounds.is_empty() && !lag_is_unmatched {
            target = target.max(current + 1);
            reason.push_str("; work items wait over 1 s in every sample: one more worker");
        }
        if work_len == 0 && control_len == 0 && held.is_none() {
            target = 0;
            reason = "every queue is empty".to_owned();
        }
        if let Some(w) = held {
            // Not for want of capacity: keep the workers (one is needed to hand the work to
            // the worker that will take it) and say what is missing.
            target = target.max(current);
            reason.push_str(&format!(
                "; {} (they wait for a worker with matching filters, not for capacity: no \
                 scaling in while they wait)",
                w.describe()
            ));
        }
        let action = match target.cmp(&current) {
            std::cmp::Ordering::Greater => ScaleAction::ScaleOut,
            std::cmp::Ordering::Less => ScaleAction::ScaleIn,
            std::cmp::Ordering::Equal => ScaleAction::None,
        };
        Ok(ScaleRecommendation {
            current_workers: current,
            recommended_workers: target,
            action,
            reason,
            queues: last,
            unmatched: waiting,
        })
    }
}
