//! The instances the demo starts, and how each one's result is checked.

use std::time::Duration;

use serde_json::{json, Value};
use taskhub::{InstanceRow, OrchestrationStatus};

use super::workloads::{ApprovalEvent, ApprovalRequest, MonitorState, CITIES, FLAKY_SUCCEEDS_ON};

/// Checks a finished instance's row; `Err` says what was expected and what came.
pub type Check = Box<dyn Fn(&InstanceRow) -> Result<(), String> + Send + Sync>;

/// One demo instance.
pub struct Scenario {
    /// The instance ID.
    pub id: &'static str,
    /// The orchestration.
    pub orchestration: &'static str,
    /// Its input.
    pub input: Value,
    /// The event the demo raises on it after [`Raise::after`], if any.
    pub raise: Option<Raise>,
    /// The check of its outcome.
    pub check: Check,
}

/// An external event the demo raises on an instance.
pub struct Raise {
    /// Event name.
    pub name: &'static str,
    /// Event data.
    pub data: Value,
    /// How long after the start.
    pub after: Duration,
}

/// How long the unapproved approval waits before it times out.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(2);
/// Monitor generations.
pub const MONITOR_GENERATIONS: u32 = 5;
/// The numbers `SumOfSquares` squares in sub-orchestrations.
pub const CHILD_NUMBERS: [u64; 4] = [1, 2, 3, 4];

/// Every demo instance; the fan-out schedules `fan_out` activities.
pub fn all(fan_out: u32) -> Vec<Scenario> {
    let n = u64::from(fan_out);
    let approval_input = |timeout: Duration| {
        serde_json::to_value(ApprovalRequest {
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        })
        .unwrap_or(Value::Null)
    };
    let hello: Vec<String> = CITIES.iter().map(|c| format!("Hello {c}!")).collect();
    vec![
        Scenario {
            id: "demo-hello",
            orchestration: "HelloCities",
            input: Value::Null,
            raise: None,
            check: completed_with(json!(hello)),
        },
        Scenario {
            id: "demo-fan-out",
            orchestration: "FanOutFanIn",
            input: json!(n),
            raise: None,
            check: completed_with(json!(n * (n + 1) * (2 * n + 1) / 6)),
        },
        Scenario {
            id: "demo-approval-granted",
            orchestration: "Approval",
            input: approval_input(Duration::from_secs(30)),
            raise: Some(Raise {
                name: super::workloads::APPROVAL_EVENT,
                data: serde_json::to_value(ApprovalEvent {
                    approver: "alice".to_owned(),
                })
                .unwrap_or(Value::Null),
                after: Duration::from_millis(300),
            }),
            check: completed_with(json!("approved by alice")),
        },
        Scenario {
            id: "demo-approval-timeout",
            orchestration: "Approval",
            input: approval_input(APPROVAL_TIMEOUT),
            raise: None,
            check: all_of(
                completed_with(json!("timed out")),
                Box::new(|row: &InstanceRow| {
                    let took = row
                        .completed_at
                        .map(|c| c.saturating_since(row.created_at))
                        .unwrap_or_default();
                    if took + Duration::from_millis(50) < APPROVAL_TIMEOUT {
                        return Err(format!(
                            "timed out after {took:?}, before the {APPROVAL_TIMEOUT:?} timer"
                        ));
                    }
                    Ok(())
                }),
            ),
        },
        Scenario {
            id: "demo-monitor",
            orchestration: "Monitor",
            input: serde_json::to_value(MonitorState {
                generation: 0,
                generations: MONITOR_GENERATIONS,
                interval_ms: 200,
            })
            .unwrap_or(Value::Null),
            raise: None,
            check: completed_with(json!(format!(
                "{MONITOR_GENERATIONS} checks, last: check {}: healthy",
                MONITOR_GENERATIONS - 1
            ))),
        },
        Scenario {
            id: "demo-sub-orchestrations",
            orchestration: "SumOfSquares",
            input: json!(CHILD_NUMBERS),
            raise: None,
            check: completed_with(json!(CHILD_NUMBERS.iter().map(|x| x * x).sum::<u64>())),
        },
        Scenario {
            id: "demo-entity",
            orchestration: "EntityFanOut",
            input: json!(n),
            raise: None,
            check: completed_with(json!(n * (n + 1) / 2)),
        },
        Scenario {
            id: "demo-retry",
            orchestration: "FlakyPayment",
            input: json!("payment"),
            raise: None,
            check: completed_with(json!(format!("succeeded on attempt {FLAKY_SUCCEEDS_ON}"))),
        },
    ]
}

/// Completed, with exactly this output.
fn completed_with(expected: Value) -> Check {
    Box::new(move |row: &InstanceRow| {
        if row.status != OrchestrationStatus::Completed {
            let why = row
                .failure
                .as_ref()
                .map(|f| format!(": {f}"))
                .unwrap_or_default();
            return Err(format!("expected Completed, got {}{why}", row.status));
        }
        let output: Option<Value> = row
            .output
            .as_ref()
            .and_then(|p| serde_json::from_str(p.as_str()).ok());
        match output {
            Some(v) if v == expected => Ok(()),
            Some(v) => Err(format!("expected output {expected}, got {v}")),
            None => Err(format!("expected output {expected}, got none")),
        }
    })
}

fn all_of(a: Check, b: Check) -> Check {
    Box::new(move |row: &InstanceRow| a(row).and_then(|()| b(row)))
}
