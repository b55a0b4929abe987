//! The activity stage: running activities and reporting their results. The work-item poller
//! and runner (`activities`) and the work items a turn claimed for this worker (`claims`);
//! an activity not in the registry runs in the remote executor (`remote_activity`); a result
//! goes to its session in process when this worker holds the partition (`local`), otherwise
//! it is committed with the work item's delete (`result_commit`).

pub(crate) mod activities;
pub(crate) mod claims;
pub(crate) mod local;
mod remote_activity;
mod result_commit;
