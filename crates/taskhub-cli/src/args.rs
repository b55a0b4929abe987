//! The command line: global options and subcommands (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Durable orchestrations on a task hub in SQLite, Azure Storage or PostgreSQL: run the demo, a
/// worker (with the HTTP API or the Durable Task gRPC endpoint), or admin commands.
#[derive(Debug, Parser)]
#[command(
    name = "taskhub",
    version,
    about,
    propagate_version = true,
    after_help = "Exit codes: 0 success; 1 an error (one `error: ...` line on stderr); 2 a usage \
                  error; 3 `instances purge --time-budget` stopped with instances left; 4 \
                  `instances start --wait`: the instance ended Failed or Terminated."
)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes: where the task hub is and how to set the runtime up.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The SQLite task hub file [default: ./taskhub-demo.db for `demo`, ./taskhub.db otherwise].
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Settings file; a missing default file is ignored, a missing explicit one is an error
    /// [default: ./taskhub.toml].
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Sets any setting (repeatable), e.g. `--set max_concurrent_activities=50`, or a
    /// backend option as `--set sqlite.busy_timeout=10s`.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Partitions (control queues) for new instances, 1 to 16 (setting `partition_count`).
    #[arg(long, global = true, value_name = "N")]
    pub partition_count: Option<String>,
    /// SQLite durability (option `sqlite.durability`; overrides `[sqlite] durability` and
    /// `TASKHUB_DURABILITY`).
    #[arg(long, global = true, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// Keep orchestrations in memory between turns (setting `extended_sessions_enabled`).
    #[arg(long, global = true, value_name = "true|false")]
    pub extended_sessions: Option<String>,
    /// Where the task hub lives (setting `backend`): the name of a backend of
    /// `taskhub_backends` (`backend_help.rs` lists every one in `--help`).
    #[arg(long, global = true, value_name = "NAME")]
    pub backend: Option<String>,
}

/// `--durability`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DurabilityArg {
    /// WAL, synced at checkpoints.
    Normal,
    /// Every commit synced.
    Full,
}

impl DurabilityArg {
    /// The setting's text form.
    pub fn as_setting(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Full => "full",
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run sample workloads on a fresh task hub (deletes the --db file first) and print a table.
    Demo(DemoArgs),
    /// Run a worker with the demo's orchestrations and activities until SIGINT or SIGTERM.
    Worker {
        /// Also serve the HTTP management API and dashboard on this address, e.g.
        /// `127.0.0.1:8080` (any other than loopback needs the `http_token` setting).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Also serve the Durable Task gRPC endpoint on this address, e.g. `127.0.0.1:4001`
        /// (the SDKs' default port): the client calls of the Durable Task SDKs (Python,
        /// JavaScript, .NET, Java, Go), and SDK workers, which run every orchestration and
        /// activity the demo registry does not name. Off loopback it needs the `http_token`
        /// setting, sent as the metadata `authorization: Bearer <token>`.
        #[arg(long, value_name = "ADDR")]
        grpc: Option<String>,
    },
    /// Serve the HTTP management API and the dashboard (no worker) until SIGINT or SIGTERM.
    /// Listening on an address other than loopback needs a token (setting `http_token` or
    /// `TASKHUB_HTTP_TOKEN`); every API request must then send `Authorization: Bearer <token>`.
    Serve {
        /// The address to listen on (port 0: any free port, printed at start).
        #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
        addr: String,
        /// Also serve the Durable Task gRPC endpoint (the SDKs' client calls) on this address,
        /// e.g. `127.0.0.1:4001`; the same token rule as the HTTP API.
        #[arg(long, value_name = "ADDR")]
        grpc: Option<String>,
        /// Serve the gRPC endpoint only, not the HTTP API (needs `--grpc`).
        #[arg(long, requires = "grpc")]
        no_http: bool,
    },
    /// List, inspect, start and control orchestration instances.
    #[command(subcommand)]
    Instances(Box<InstancesCmd>),
    /// List, inspect, signal and delete durable entities (`@name@key`).
    #[command(subcommand)]
    Entities(EntitiesCmd),
    /// List and replay dead-lettered (poison) messages.
    #[command(subcommand)]
    DeadLetters(DeadLettersCmd),
    /// Partition leases: owner, next owner, epoch, draining, queue length, oldest message age
    /// (no subcommand), and manual control.
    Partitions {
        /// What to do [default: show the table].
        #[command(subcommand)]
        cmd: Option<PartitionsCmd>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also show the work that the SDK workers of the process serving its HTTP API at
        /// this address (`taskhub worker --grpc ... --http ADDR`) leave waiting because none of
        /// their work-item filters take it (held in that process's memory, not in storage).
        #[arg(long, value_name = "ADDR")]
        api: Option<String>,
    },
    /// The hub's processes (workers, `serve`, endpoints) with their schema versions and
    /// heartbeats; bar workers from holding partitions, or lift the bar.
    #[command(subcommand)]
    Workers(WorkersCmd),
    /// The task hub itself.
    #[command(subcommand)]
    Hub(HubCmd),
    /// Recommend a worker count from queue lengths and ages (JSON for an autoscaler).
    Scale {
        /// Samples to take.
        #[arg(long, default_value_t = 5, value_name = "N")]
        samples: usize,
        /// Time between samples, e.g. `1s` or `500ms`.
        #[arg(long, default_value = "1s", value_name = "DURATION")]
        interval: String,
        /// Ask the process serving its HTTP API at this address (`GET /api/scale`) instead:
        /// it also sees the work its SDK workers' filters leave waiting (never scaled in for).
        #[arg(long, value_name = "ADDR")]
        api: Option<String>,
    },
}

/// `taskhub entities ...`.
#[derive(Debug, Subcommand)]
pub enum EntitiesCmd {
    /// List entities with state, by ID (`--all`: also those without state).
    List {
        /// Only entities of this name.
        #[arg(long)]
        name: Option<String>,
        /// Also entities without state (a lock or waiting requests, or deleted).
        #[arg(long)]
        all: bool,
        /// Rows per page (1 to 1000).
        #[arg(long, default_value_t = 100, value_name = "N")]
        page_size: usize,
        /// Continue from this token (printed after a full page).
        #[arg(long, value_name = "TOKEN")]
        continuation: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one entity: state, last change, lock holder, waiting requests (JSON).
    Show {
        /// The entity ID, `@name@key`.
        id: String,
    },
    /// Signal an entity: run operation OP with INPUT, one-way.
    Signal {
        /// The entity ID, `@name@key`.
        id: String,
        /// The operation.
        op: String,
        /// The input: JSON, `@FILE` (read from a file) or `-` (standard input) [default: null].
        input: Option<String>,
    },
    /// Delete an entity's state (it runs as a request on the entity, in order); `--clean`
    /// then also removes the rows of empty entities and releases locks of ended
    /// orchestrations.
    Delete {
        /// The entity ID, `@name@key`.
        id: Option<String>,
        /// Clean up: remove empty entities unchanged for `--min-idle`, release orphaned locks.
        #[arg(long)]
        clean: bool,
        /// With `--clean`: how long an empty entity must be unchanged, e.g. `5m` or `0s`.
        #[arg(long, default_value = "5m", value_name = "DURATION")]
        min_idle: String,
    },
}

/// `taskhub hub ...`.
#[derive(Debug, Subcommand)]
pub enum HubCmd {
    /// Delete the whole task hub: on SQLite its file (with -wal and -shm), on Azure its queues,
    /// tables and blob container. Asks for `yes` on standard input unless `--yes`; refuses
    /// while a worker holds a partition unless `--force`.
    Delete {
        /// Do not ask for a confirmation.
        #[arg(long)]
        yes: bool,
        /// Delete even while a worker holds a partition (a crashed worker's lease stays until
        /// another worker claims it).
        #[arg(long)]
        force: bool,
    },
}

/// `taskhub partitions ...`.
#[derive(Debug, Subcommand)]
pub enum PartitionsCmd {
    /// Exit non-zero if a partition has no owner or its lease was last written longer ago than
    /// the threshold (by this machine's clock).
    DetectStale {
        /// The threshold, e.g. `60s`.
        #[arg(long, default_value = "60s", value_name = "DURATION")]
        threshold: String,
    },
    /// New epoch, no owner: the owner's checkpoints are fenced and any worker re-claims it.
    Bump {
        /// The partition.
        partition: u32,
    },
    /// Take a partition offline: its owner drains and releases it, nobody claims it.
    Offline {
        /// The partition.
        partition: u32,
    },
    /// Bring an offline partition back.
    Online {
        /// The partition.
        partition: u32,
    },
    /// Change the partition count of a live hub (1 to 16): new instances use the new layout;
    /// removed partitions hand their instances and messages to live ones, then retire.
    Resize {
        /// The new count.
        count: u32,
    },
}

/// `taskhub workers ...`.
#[derive(Debug, Subcommand)]
pub enum WorkersCmd {
    /// Bar a worker: it hands its partitions over and takes no more.
    Prohibit {
        /// The worker name (as shown by `taskhub partitions`).
        name: String,
    },
    /// Lift the bar on a worker.
    Allow {
        /// The worker name.
        name: String,
    },
    /// List barred workers.
    List,
    /// List the processes of the hub from its process registry: kind, host, pid, the schema
    /// version and build they run, and their last heartbeat (live within 60 s). A migration
    /// refuses while a live one runs an older schema. Records of processes that died without
    /// a clean stop stay listed as stale for a day, then the next process to start forgets
    /// them; `--forget` and `--forget-stale` remove them at once.
    Processes {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Remove the record with this ID (repeatable); a live process announces itself
        /// again at its next heartbeat.
        #[arg(long, value_name = "ID")]
        forget: Vec<String>,
        /// Remove every stale record (no heartbeat within the liveness window).
        #[arg(long, conflicts_with = "forget")]
        forget_stale: bool,
    },
}

/// `taskhub demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Run the workloads on this many `taskhub worker` processes sharing the file (1 = one
    /// in-process worker). With 2 or more, one is killed with SIGKILL, one is stopped, and
    /// one joins during the run, and partition ownership is shown as it changes.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub workers: usize,
    /// Activities in the fan-out/fan-in workload (tests use a smaller number).
    #[arg(long, hide = true, default_value_t = 1000)]
    pub fan_out: u32,
    /// Give up waiting for the demo instances after this many seconds.
    #[arg(long, hide = true, default_value_t = 120)]
    pub timeout_secs: u64,
    /// On Azure Storage, delete the configured hub even if it has instances (the demo always
    /// starts on a fresh hub; without this it refuses to wipe a hub with instances on a real
    /// account; an emulator on this machine is wiped without asking).
    #[arg(long)]
    pub fresh: bool,
}

/// Filters shared by `instances list` and `instances purge`.
#[derive(Debug, Args, Default, Clone)]
pub struct InstanceFilter {
    /// Only instances with this status (repeatable): Pending, Running, Suspended, Completed,
    /// Failed, Terminated, ContinuedAsNew.
    #[arg(long = "status", value_name = "STATUS")]
    pub statuses: Vec<String>,
    /// Only instances of this orchestration name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Only instance IDs starting with this prefix.
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Only instances created at or after this time (RFC 3339 or Unix milliseconds).
    #[arg(long, value_name = "TIME")]
    pub created_from: Option<String>,
    /// Only instances created before this time (RFC 3339 or Unix milliseconds).
    #[arg(long, value_name = "TIME")]
    pub created_to: Option<String>,
    /// Only instances that finished at or after this time.
    #[arg(long, value_name = "TIME")]
    pub completed_from: Option<String>,
    /// Only instances that finished before this time.
    #[arg(long, value_name = "TIME")]
    pub completed_to: Option<String>,
    /// Only instances last updated at or after this time.
    #[arg(long, value_name = "TIME")]
    pub updated_from: Option<String>,
    /// Only instances last updated before this time.
    #[arg(long, value_name = "TIME")]
    pub updated_to: Option<String>,
    /// Only instances carrying this tag with this value (repeatable: every one must match).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
}

impl InstanceFilter {
    /// True if no filter is given.
    pub fn is_empty(&self) -> bool {
        self.statuses.is_empty()
            && self.name.is_none()
            && self.prefix.is_none()
            && self.created_from.is_none()
            && self.created_to.is_none()
            && self.completed_from.is_none()
            && self.completed_to.is_none()
            && self.updated_from.is_none()
            && self.updated_to.is_none()
            && self.tags.is_empty()
    }
}

/// `taskhub instances list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Filters.
    #[command(flatten)]
    pub filter: InstanceFilter,
    /// The order: `id` (by instance ID), `newest` or `oldest` (by creation time).
    #[arg(long, default_value = "id", value_name = "ORDER")]
    pub order: String,
    /// Rows per page, 1 to 1000.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub page_size: usize,
    /// Continue from a token printed by a previous page.
    #[arg(long, value_name = "TOKEN", conflicts_with = "all")]
    pub continuation: Option<String>,
    /// Follow continuation tokens and list every matching instance.
    #[arg(long)]
    pub all: bool,
    /// Also list durable entities (instance IDs `@name@key`); by default only orchestrations
    /// are listed (`taskhub entities list` lists entities with their state).
    #[arg(long)]
    pub include_entities: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `taskhub instances ...`.
#[derive(Debug, Subcommand)]
pub enum InstancesCmd {
    /// List instances (a table, by instance ID unless `--order` says otherwise).
    List(ListArgs),
    /// Show one instance: status, input, output, failure, custom status, timestamps.
    Show {
        /// The instance ID.
        id: String,
        /// Show this execution instead: the current one, or an earlier one that ended by
        /// continue-as-new (its status, input, output and times).
        #[arg(long, value_name = "EXECUTION_ID")]
        execution: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the current execution's history, one event per line.
    History {
        /// The instance ID.
        id: String,
        /// Print JSON (the stored events) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Start an orchestration (a worker must be running to execute it).
    ///
    /// With `--wait`, the exit code says how the instance ended: 0 Completed, 4 Failed or
    /// Terminated (its status is printed either way), 1 an error (also a wait that timed out).
    // `--version` is the orchestration's version here, not the program's.
    #[command(disable_version_flag = true)]
    Start {
        /// The orchestration name.
        name: String,
        /// The input: JSON, `@FILE` (read from a file) or `-` (read from standard input)
        /// [default: null].
        input: Option<String>,
        /// The input as an option, same syntax: `--input @order.json`, `--input -`.
        #[arg(long = "input", value_name = "JSON|@FILE|-", conflicts_with = "input")]
        input_option: Option<String>,
        /// The instance ID [default: a random one].
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// The orchestration version of the instance [default: the `default_version` setting,
        /// else none]. A worker registers code per version (or once for every version); with
        /// `version_match`, only workers of a matching `worker_version` run it.
        #[arg(long, value_name = "VERSION")]
        version: Option<String>,
        /// Wait up to this many seconds for the instance to finish and print its outcome; exit
        /// code 4 if it ended Failed or Terminated.
        #[arg(long, value_name = "SECS")]
        wait: Option<u64>,
        /// A tag of the instance (repeatable): shown in its status, filtered on by
        /// `list --tag`.
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
    },
    /// Raise an external event on an instance.
    Raise {
        /// The instance ID.
        id: String,
        /// The event name.
        event: String,
        /// The event data: JSON, `@FILE` (read from a file) or `-` (read from standard input)
        /// [default: null].
        data: Option<String>,
        /// The event data as an option, same syntax: `--data @event.json`, `--data -`.
        #[arg(
            long = "data",
            visible_alias = "input",
            value_name = "JSON|@FILE|-",
            conflicts_with = "data"
        )]
        data_option: Option<String>,
        /// An idempotency key: raising again with the same ID delivers the event once.
        #[arg(long)]
        event_id: Option<String>,
    },
    /// Terminate an active instance.
    Terminate {
        /// The instance ID.
        id: String,
        /// Why (recorded in the history and the output).
        #[arg(long, default_value = "terminated with the taskhub CLI")]
        reason: String,
    },
    /// Suspend a Pending or Running instance.
    Suspend {
        /// The instance ID.
        id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Resume a suspended instance.
    Resume {
        /// The instance ID.
        id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Rewind a Failed instance: its failed activities and the failure are dropped from its
    /// history, what succeeded is kept, and it runs again from where it failed (Running at
    /// once; a worker replays it). See docs/REWIND.md.
    Rewind {
        /// The instance ID.
        id: String,
        /// Why (recorded in the history's ExecutionRewound event).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Delete finished instances (history, payloads and row): one by ID, or all matching filters.
    #[command(group = clap::ArgGroup::new("target").required(true).multiple(true)
        .args(["id", "statuses", "name", "prefix", "created_from", "created_to",
            "completed_from", "completed_to", "updated_from", "updated_to", "tags"]))]
    Purge {
        /// The instance ID.
        #[arg(conflicts_with_all = ["statuses", "name", "prefix", "created_from", "created_to",
            "completed_from", "completed_to", "updated_from", "updated_to", "tags"])]
        id: Option<String>,
        /// Filters (only finished instances are ever purged).
        #[command(flatten)]
        filter: InstanceFilter,
        /// Stop after this long (e.g. `30s`, `5m`) and say how many were purged and whether
        /// any are left (then exit code 3: run it again to go on). Default: until done.
        #[arg(long, value_name = "DURATION", conflicts_with = "id")]
        time_budget: Option<String>,
    },
}

/// `taskhub dead-letters ...`.
#[derive(Debug, Subcommand)]
pub enum DeadLettersCmd {
    /// List dead letters, oldest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 100, value_name = "N")]
        limit: usize,
        /// Start after this dead-letter ID.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Put a dead letter back into the queue it came from.
    Replay {
        /// The dead-letter ID (from `dead-letters list`).
        id: String,
    },
}
