//! What an activity tells its test: how many runs started, a wake-up at each start, and
//! whether a run was stopped (its future dropped before it finished), for tests of how a
//! worker stops running work.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use taskhub::*;
use tokio::sync::Notify;

/// The probe an activity reports to.
#[derive(Default)]
pub struct ActivityProbe {
    /// Runs started so far.
    pub runs: AtomicU32,
    /// Woken as each run starts.
    pub started: Notify,
    /// Set when a run armed with a [`StopFlag`] was dropped before it finished.
    pub stopped: AtomicBool,
}

impl ActivityProbe {
    /// Runs started so far.
    pub fn runs(&self) -> u32 {
        self.runs.load(Ordering::SeqCst)
    }

    /// Whether an armed run was stopped.
    pub fn was_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
}

/// Sets the probe's `stopped` when dropped, unless disarmed first (the run finished).
pub struct StopFlag(Option<Arc<ActivityProbe>>);

impl StopFlag {
    /// Arms a flag for a run reporting to `probe`.
    pub fn arm(probe: &Arc<ActivityProbe>) -> Self {
        Self(Some(probe.clone()))
    }

    /// The run finished: dropping the flag no longer counts as a stop.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for StopFlag {
    fn drop(&mut self) {
        if let Some(probe) = &self.0 {
            probe.stopped.store(true, Ordering::SeqCst);
        }
    }
}

/// `Work` calls `Forever`, an activity that never finishes: each run is counted, armed with a
/// [`StopFlag`], and wakes `probe.started`.
pub fn forever_registry(probe: Arc<ActivityProbe>) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Forever", move |_c: ActivityContext, _: ()| {
        let probe = probe.clone();
        async move {
            probe.runs.fetch_add(1, Ordering::SeqCst);
            let _flag = StopFlag::arm(&probe);
            probe.started.notify_one();
            std::future::pending::<()>().await;
            Ok::<_, ActivityError>(())
        }
    });
    reg.orchestration("Work", |ctx: OrchestrationContext, _: ()| async move {
        ctx.call_activity::<_, ()>("Forever", ()).await?;
        Ok::<_, OrchestrationError>(())
    });
    reg
}

/// Starts a worker of [`forever_registry`] on `hub` and a `Work` instance, and waits (ten
/// seconds at most) until its activity runs: the worker and the activity's probe.
pub async fn worker_running_forever(hub: &TaskHub) -> (WorkerHandle, Arc<ActivityProbe>) {
    let probe = Arc::new(ActivityProbe::default());
    let worker = Worker::start(hub, forever_registry(probe.clone()))
        .await
        .unwrap();
    let started = probe.started.notified();
    hub.client().start("Work", ()).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), started)
        .await
        .expect("the activity starts");
    (worker, probe)
}
