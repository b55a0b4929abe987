//! The activity stage: running activities and reporting their results. The work-item poller
//! (`activities`), each work item admitted, executed and reported (`run`, over `admit`,
//! `execute` and `report`), and the work items a turn claimed for this worker (`claims`);
//! an activity not in the registry runs in the remote executor (`remote_activity`); a result
//! goes to its session in process when this worker holds the partition (`local`), otherwise
//! it is committed with the work item's delete (`result_commit`).

pub(crate) mod activities;
mod admit;
pub(crate) mod claims;
mod execute;
pub(crate) mod local;
mod remote_activity;
mod report;
mod result_commit;
mod run;
