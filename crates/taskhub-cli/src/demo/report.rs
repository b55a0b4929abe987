//! The demo's closing table and throughput line.

use std::time::Duration;

use taskhub::{InstanceRow, OrchestrationStatus};

use super::scenarios::Scenario;
use crate::table::{short, Table};

/// What became of one demo instance.
#[derive(Debug)]
pub struct Outcome {
    /// Its index among the scenarios.
    pub index: usize,
    /// Its final row, if it could be read.
    pub row: Option<InstanceRow>,
    /// From the start to the observed end (or the give-up).
    pub took: Duration,
    /// Why it did not pass its check, if it did not.
    pub problem: Option<String>,
}

/// The table: instance, orchestration, outcome, duration, check.
pub fn table(scenarios: &[Scenario], outcomes: &[Outcome]) -> String {
    let mut t = Table::new(&["INSTANCE", "ORCHESTRATION", "OUTCOME", "DURATION", "CHECK"]);
    for o in outcomes {
        let s = &scenarios[o.index];
        t.row(vec![
            s.id.to_owned(),
            s.orchestration.to_owned(),
            o.row
                .as_ref()
                .map_or_else(|| "unknown".to_owned(), describe),
            format!("{:.2} s", o.took.as_secs_f64()),
            if o.problem.is_some() { "FAILED" } else { "ok" }.to_owned(),
        ]);
    }
    t.render().trim_end().to_owned()
}

/// `Completed: <output>`, `Failed: <error>`, or the status.
pub fn describe(row: &InstanceRow) -> String {
    match row.status {
        OrchestrationStatus::Completed => {
            let out = row.output.as_ref().map_or("null", |p| p.as_str());
            format!("Completed: {}", short(out, 48))
        }
        OrchestrationStatus::Failed => {
            let why = row
                .failure
                .as_ref()
                .map_or_else(|| "no details".to_owned(), ToString::to_string);
            format!("Failed: {}", short(&why, 48))
        }
        OrchestrationStatus::Terminated => {
            let out = row.output.as_ref().map_or("", |p| p.as_str());
            format!("Terminated: {}", short(out, 48))
        }
        other => other.to_string(),
    }
}

/// `Finished in 3.21 s: 1,012 activities (315.3/s), 11 orchestrations (3.4/s), 1,100 turns.`
pub fn throughput(elapsed: Duration, activities: u64, orchestrations: u64, turns: u64) -> String {
    let secs = elapsed.as_secs_f64();
    format!(
        "Finished in {secs:.2} s: {} activities ({}/s), {} orchestrations incl. sub-orchestrations ({}/s), {} orchestration turns.",
        thousands(activities),
        rate(activities, elapsed),
        thousands(orchestrations),
        rate(orchestrations, elapsed),
        thousands(turns)
    )
}

/// The throughput line of a run on worker processes.
pub fn throughput_processes(
    elapsed: Duration,
    activities: u64,
    orchestrations: u64,
    workers: usize,
) -> String {
    format!(
        "Finished in {:.2} s on {workers} worker processes (one killed, one stopped, one added): {} activities ({}/s), {} orchestrations incl. sub-orchestrations ({}/s).",
        elapsed.as_secs_f64(),
        thousands(activities),
        rate(activities, elapsed),
        thousands(orchestrations),
        rate(orchestrations, elapsed),
    )
}

/// `Fan-out/fan-in alone: 1,000 activities in 0.05 s (20,000.0/s).`
pub fn fan_out(activities: u64, took: Duration) -> String {
    format!(
        "Fan-out/fan-in alone: {} activities in {:.2} s ({}/s); the run's length is set by the {} s approval timeout.",
        thousands(activities),
        took.as_secs_f64(),
        rate(activities, took),
        super::scenarios::APPROVAL_TIMEOUT.as_secs()
    )
}

/// `n` per second over `over`: `18,812` from 100 up, `5.3` below.
fn rate(n: u64, over: Duration) -> String {
    let per_sec = n as f64 / over.as_secs_f64().max(1e-9);
    if per_sec >= 100.0 {
        thousands(per_sec.round() as u64)
    } else {
        format!("{per_sec:.1}")
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(rate(18_812, Duration::from_secs(1)), "18,812");
        assert_eq!(rate(11, Duration::from_secs(2)), "5.5");
    }
}
