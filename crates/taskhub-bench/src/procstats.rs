//! This process's memory and CPU from `/proc/self` (Linux; `None` elsewhere).

use std::time::Duration;

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on Linux).
const USER_HZ: u64 = 100;

/// Peak resident set size (`VmHWM`) in MiB since the start or the last [`reset_peak`].
pub fn peak_rss_mb() -> Option<f64> {
    status_kb("VmHWM:").map(|kb| kb as f64 / 1024.0)
}

/// Current resident set size (`VmRSS`) in MiB.
pub fn rss_mb() -> Option<f64> {
    status_kb("VmRSS:").map(|kb| kb as f64 / 1024.0)
}

/// Resets the peak RSS to the current RSS (writes 5 to `/proc/self/clear_refs`); false if
/// the kernel refused.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// User + system CPU time of this process so far (10 ms resolution).
pub fn cpu_time() -> Option<Duration> {
    stat_cpu("/proc/self/stat")
}

/// User + system CPU time of process `pid` so far (a child: the `grpc` scenario's stand-in).
pub fn cpu_time_of(pid: u32) -> Option<Duration> {
    stat_cpu(&format!("/proc/{pid}/stat"))
}

/// User + system CPU time of process `pid`, of its children it has reaped, and of its live
/// children (a server and its backends: the PostgreSQL postmaster's).
pub fn cpu_with_children(pid: u32) -> Option<Duration> {
    let own = stat_fields(&format!("/proc/{pid}/stat"))?;
    let ticks = |f: &[u64], from: usize| f.get(from..from + 2).map(|t| t.iter().sum::<u64>());
    let mut total = ticks(&own, 11)? + ticks(&own, 13)?;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(f) = stat_fields(&format!("/proc/{child}/stat")) {
            if f.get(1) == Some(&u64::from(pid)) {
                total += ticks(&f, 11).unwrap_or(0);
            }
        }
    }
    Some(Duration::from_millis(total * 1000 / USER_HZ))
}

/// The numeric fields of a `/proc/<pid>/stat` from field 3 on (field 3, the state, as 0).
fn stat_fields(path: &str) -> Option<Vec<u64>> {
    let stat = std::fs::read_to_string(path).ok()?;
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    Some(
        rest.split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect(),
    )
}

fn stat_cpu(path: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 1000 / USER_HZ))
}

fn status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_self_on_linux() {
        if cfg!(target_os = "linux") {
            let peak = peak_rss_mb().unwrap_or_default();
            let now = rss_mb().unwrap_or_default();
            assert!(peak > 0.0 && now > 0.0 && peak >= now - 1.0, "{peak} {now}");
            let spent = cpu_time();
            assert!(spent.is_some());
            let own = cpu_time_of(std::process::id()).unwrap();
            // Read after: it counts this process's time so far and its children's.
            let with_children = cpu_with_children(std::process::id()).unwrap();
            assert!(with_children >= own, "{with_children:?} {own:?}");
        }
    }
}
