//! What this worker remembers about messages it has seen, each bounded: the work items it runs
//! or ran lately ([`run_ledger`](super::run_ledger)), the torn checkpoints' pending outboxes it
//! watches before it re-sends them ([`outbox_watch`](super::outbox_watch)), and the client
//! starts that wait for their instance row ([`start_watch`](super::start_watch)).

use std::sync::Arc;

use taskhub_storage::Clock;

use super::outbox_watch::OutboxWatch;
use super::run_ledger::RunLedger;
use super::start_watch::StartWatch;
use super::start_watch::START_ROW_GRACE;
use crate::settings::Settings;

/// The worker's memory of messages it has seen.
pub(crate) struct Watches {
    /// Work items running here and those whose result was recorded lately.
    pub runs: Arc<RunLedger>,
    /// Pending outboxes this worker is watching before it re-sends them.
    pub outbox: OutboxWatch,
    /// Client starts this worker is seeing wait for their instance row.
    pub start: StartWatch,
}

impl Watches {
    /// Empty watches, timed on `clock`, with the grace periods of `settings`.
    pub(crate) fn new(clock: Arc<dyn Clock>, settings: &Settings) -> Self {
        let resend_grace = settings.torn_outbox_grace();
        Self {
            runs: Arc::new(RunLedger::new(clock, resend_grace)),
            outbox: OutboxWatch::new(resend_grace),
            start: StartWatch::new(START_ROW_GRACE),
        }
    }
}
