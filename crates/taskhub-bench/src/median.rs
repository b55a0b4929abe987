//! `--repeat`: the record of medians over several runs of a scenario.

use serde_json::Value;

use crate::report::Record;

/// One record of medians per result of the scenario: `runs[k][i]` is result `i` of run `k`.
/// Numbers are the medians over the runs (for an even count, the mean of the middle two);
/// `met` holds if it held in the majority of runs.
pub fn of_runs(runs: &[Vec<Record>]) -> Vec<Record> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|i| {
            let same: Vec<&Record> = runs.iter().filter_map(|r| r.get(i)).collect();
            combine(&same)
        })
        .collect()
}

fn combine(runs: &[&Record]) -> Record {
    let mut out = runs[0].clone();
    let opt = |f: fn(&Record) -> Option<f64>| median(runs.iter().filter_map(|r| f(r)).collect());
    out.seconds = median(runs.iter().map(|r| r.seconds).collect()).unwrap_or(out.seconds);
    out.throughput = opt(|r| r.throughput);
    out.p50_ms = opt(|r| r.p50_ms);
    out.p99_ms = opt(|r| r.p99_ms);
    out.max_ms = opt(|r| r.max_ms);
    out.peak_rss_mb = opt(|r| r.peak_rss_mb);
    out.cpu_seconds = opt(|r| r.cpu_seconds);
    out.storage_ops_per_step = opt(|r| r.storage_ops_per_step);
    out.azure_ops_per_step = opt(|r| r.azure_ops_per_step);
    for (key, value) in &mut out.extra {
        if value.is_number() {
            let values = runs
                .iter()
                .filter_map(|r| r.extra.get(key).and_then(Value::as_f64))
                .collect();
            if let Some(m) = median(values) {
                *value = Value::from(m);
            }
        }
    }
    let met: Vec<bool> = runs.iter().filter_map(|r| r.met).collect();
    if !met.is_empty() {
        out.met = Some(met.iter().filter(|m| **m).count() * 2 > met.len());
    }
    out.storage_ops.clear();
    out.storage_call_ms.clear();
    out.run = Some(Value::from("median"));
    out.extra
        .insert("runs".to_owned(), Value::from(runs.len() as u64));
    out
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    let m = if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    };
    Some((m * 1000.0).round() / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_per_field_and_majority_met() {
        let rec = |t: f64, met: bool| Record {
            scenario: "s".into(),
            throughput: Some(t),
            met: Some(met),
            ..Record::default()
        };
        let runs = vec![
            vec![rec(3.0, true)],
            vec![rec(1.0, false)],
            vec![rec(2.0, true)],
        ];
        let m = of_runs(&runs);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].throughput, Some(2.0));
        assert_eq!(m[0].met, Some(true));
        assert_eq!(m[0].run, Some(Value::from("median")));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
    }
}
