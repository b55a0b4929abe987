//! `taskhub demo --workers N`: the demo's worker is N `taskhub worker` processes on the same
//! SQLite file instead of one in-process worker. While the workloads run, one worker is killed
//! with SIGKILL, one is stopped gracefully, and a new one joins; every change of partition
//! ownership is printed as it happens.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use taskhub::TaskHub;

use crate::args::GlobalArgs;

/// Settings for the worker processes unless the user set them: short leases and visibility
/// timeouts, so that the killed worker's partitions and messages move on within seconds.
pub const PROFILE: [(&str, &str); 6] = [
    ("lease_interval", "3s"),
    ("lease_renew_interval", "1s"),
    ("lease_acquire_interval", "1s"),
    ("control_queue_visibility_timeout", "5s"),
    ("work_item_visibility_timeout", "5s"),
    ("partition_drain_timeout", "5s"),
];

/// One worker process.
struct Proc {
    child: Child,
    name: String,
}

/// The worker processes of the demo.
pub struct Cluster {
    procs: Vec<Proc>,
    args: Vec<String>,
    started: Instant,
    /// What happened, in order, for the closing summary.
    pub events: Vec<String>,
    last_owners: BTreeMap<u32, Option<String>>,
}

impl Cluster {
    /// Starts `n` worker processes on `db` with the user's settings flags and `profile`.
    pub fn start(
        n: usize,
        db: &Path,
        global: &GlobalArgs,
        profile: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let mut args = vec!["--db".to_owned(), db.display().to_string()];
        if let Some(config) = &global.config {
            args.extend(["--config".to_owned(), config.display().to_string()]);
        }
        for (key, value) in profile {
            args.extend(["--set".to_owned(), format!("{key}={value}")]);
        }
        for pair in &global.set {
            args.extend(["--set".to_owned(), pair.clone()]);
        }
        if let Some(n) = &global.partition_count {
            args.extend(["--partition-count".to_owned(), n.clone()]);
        }
        if let Some(d) = global.durability {
            args.extend(["--durability".to_owned(), d.as_setting().to_owned()]);
        }
        if let Some(b) = &global.extended_sessions {
            args.extend(["--extended-sessions".to_owned(), b.clone()]);
        }
        if let Some(b) = &global.backend {
            args.extend(["--backend".to_owned(), b.clone()]);
        }
        let mut cluster = Self {
            procs: Vec::new(),
            args,
            started: Instant::now(),
            events: Vec::new(),
            last_owners: BTreeMap::new(),
        };
        for _ in 0..n {
            cluster.add()?;
        }
        Ok(cluster)
    }

    fn note(&mut self, what: String) {
        let line = format!("[{:>5.1}s] {what}", self.started.elapsed().as_secs_f64());
        self.events.push(line);
    }

    /// Starts one more worker process and waits until it is ready.
    pub fn add(&mut self) -> anyhow::Result<()> {
        let exe = std::env::current_exe().context("cannot find the taskhub executable")?;
        let mut child = Command::new(exe)
            .args(&self.args)
            .arg("worker")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start a worker process")?;
        let stdout = child.stdout.take().context("no worker stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let name = match lines.next() {
            Some(Ok(line)) if line.contains(" ready ") => line
                .split_whitespace()
                .nth(2)
                .unwrap_or("worker")
                .to_owned(),
            other => {
                let _ = child.kill();
                bail!("a worker process did not start: {other:?}");
            }
        };
        std::thread::spawn(move || for _ in lines {});
        self.note(format!("worker {name} started (pid {})", child.id()));
        self.procs.push(Proc { child, name });
        Ok(())
    }

    /// Kills the newest worker with SIGKILL.
    pub fn kill_one(&mut self) -> anyhow::Result<()> {
        let Some(mut p) = self.procs.pop() else {
            return Ok(());
        };
        p.child.kill().context("cannot kill a worker")?;
        let _ = p.child.wait();
        self.note(format!(
            "worker {} killed with SIGKILL: its partitions move once its lease expires",
            p.name
        ));
        Ok(())
    }

    /// Stops the oldest worker gracefully (SIGTERM): it releases its partitions at once.
    pub fn stop_one(&mut self) -> anyhow::Result<()> {
        if self.procs.is_empty() {
            return Ok(());
        }
        let mut p = self.procs.remove(0);
        terminate(&mut p)?;
        self.note(format!(
            "worker {} stopped gracefully: its partitions were released",
            p.name
        ));
        Ok(())
    }

    /// Records a change of partition ownership, if there was one.
    pub async fn watch(&mut self, hub: &TaskHub) -> Option<String> {
        let rows = hub.store().list_partitions().await.ok()?;
        let owners: BTreeMap<u32, Option<String>> =
            rows.into_iter().map(|r| (r.partition, r.owner)).collect();
        if owners == self.last_owners {
            return None;
        }
        let text = owners
            .iter()
            .map(|(p, o)| format!("{p}:{}", o.as_deref().unwrap_or("-")))
            .collect::<Vec<_>>()
            .join("  ");
        self.last_owners = owners;
        self.note(format!("partitions  {text}"));
        self.events.last().cloned()
    }

    /// True once every live worker holds at least one partition and none is unowned.
    pub fn balanced(&self) -> bool {
        let held = |name: &str| {
            self.last_owners
                .values()
                .filter(|o| o.as_deref() == Some(name))
                .count()
        };
        self.last_owners.values().all(Option::is_some)
            && self.procs.iter().all(|p| held(&p.name) >= 1)
    }

    /// Stops every remaining worker gracefully.
    pub fn shutdown(&mut self) -> anyhow::Result<()> {
        while !self.procs.is_empty() {
            self.stop_one()?;
        }
        Ok(())
    }

    /// Worker processes running now.
    pub fn running(&self) -> usize {
        self.procs.len()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

fn terminate(p: &mut Proc) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .context("cannot run kill -TERM")?;
    if !status.success() {
        bail!("kill -TERM {} failed", p.child.id());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(exit) = p.child.try_wait()? {
            if !exit.success() {
                bail!("worker {} exited with {exit}", p.name);
            }
            return Ok(());
        }
        if Instant::now() > deadline {
            let _ = p.child.kill();
            bail!("worker {} did not stop within 30 s", p.name);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
