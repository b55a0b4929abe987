//! Bad input gets a clear error naming the problem and a non-zero exit code, never a panic.

mod common;

use common::*;

#[test]
fn bad_input_is_a_clear_error() {
    let dir = TempDir::new("errors");
    // Admin commands other than start need an existing task hub.
    let e = fails(&dir, &["instances", "list"], 1);
    assert!(e.contains("no task hub at"), "{e}");
    ok(
        &dir,
        &["instances", "start", "HelloCities", "--id", "pending-1"],
    );

    let cases: &[(&[&str], &str)] = &[
        (&["instances", "show", "a/b"], "invalid instance ID \"a/b\""),
        (
            &["instances", "start", "HelloCities", "--id", "a/b"],
            "invalid instance ID",
        ),
        (&["instances", "show", "nope"], "instance 'nope' not found"),
        (
            &["instances", "history", "nope"],
            "instance 'nope' not found",
        ),
        (
            &["instances", "terminate", "nope"],
            "instance 'nope' not found",
        ),
        (
            &["instances", "raise", "nope", "ev"],
            "instance 'nope' not found",
        ),
        (&["instances", "purge", "nope"], "instance 'nope' not found"),
        (
            &["instances", "purge", "pending-1"],
            "is Pending: cannot purge",
        ),
        (
            &["instances", "start", "HelloCities", "--id", "pending-1"],
            "already exists",
        ),
        (
            &["instances", "start", "HelloCities", "{bad"],
            "the input is not valid JSON",
        ),
        (
            &["instances", "raise", "pending-1", "ev", "[1,"],
            "the event data is not valid JSON",
        ),
        (
            &["instances", "list", "--status", "Done"],
            "unknown orchestration status \"Done\"",
        ),
        (
            &["instances", "list", "--created-from", "yesterday"],
            "--created-from: invalid time",
        ),
        (
            &["instances", "list", "--page-size", "0"],
            "--page-size must be 1 to 1000",
        ),
        (
            &["--partition-count", "17", "instances", "list"],
            "partition_count: must be 1 to 16",
        ),
        (
            &["--set", "lease_interval=soon", "instances", "list"],
            "invalid setting lease_interval",
        ),
        (
            &["--set", "bogus=1", "instances", "list"],
            "invalid setting bogus: unknown setting",
        ),
        (
            &["--set", "novalue", "instances", "list"],
            "--set expects KEY=VALUE",
        ),
        (
            &["--extended-sessions", "maybe", "instances", "list"],
            "extended_sessions_enabled",
        ),
        (
            &["--config", "missing.toml", "instances", "list"],
            "config file missing.toml not found",
        ),
        (
            &["dead-letters", "replay", "42"],
            "dead letter '42' not found",
        ),
    ];
    for (args, message) in cases {
        let e = fails(&dir, args, 1);
        assert!(
            e.starts_with("error: ") && e.contains(message),
            "{args:?}: {e}"
        );
    }

    // Usage errors are clap's: exit code 2.
    let e = fails(&dir, &["instances", "purge"], 2);
    assert!(e.contains("required"), "{e}");
    let e = fails(&dir, &["--durability", "weird", "instances", "list"], 2);
    assert!(e.contains("weird"), "{e}");
    fails(&dir, &["instances", "frobnicate"], 2);
}

#[test]
fn settings_resolve_file_then_environment_then_flags() {
    let dir = TempDir::new("settings");
    let toml = dir.0.join("taskhub.toml");
    // A fresh hub takes its partition count from the settings; the worker says how many.
    let partitions = |name: &str, env: Option<&str>, flags: &[&str]| {
        let db = dir.0.join(name);
        let mut cmd = taskhub(&dir.0);
        cmd.arg("--db").arg(&db).args(flags).arg("worker");
        if let Some(n) = env {
            cmd.env("TASKHUB_PARTITION_COUNT", n);
        }
        let worker = WorkerChild::spawn(cmd);
        let ready = worker.ready_line.clone();
        worker.stop();
        ready
    };
    assert!(partitions("a.db", None, &[]).contains("(4 partitions)"));
    std::fs::write(&toml, "partition_count = 3\n").unwrap();
    assert!(partitions("b.db", None, &[]).contains("(3 partitions)"));
    assert!(partitions("c.db", Some("2"), &[]).contains("(2 partitions)"));
    let flagged = partitions("d.db", Some("2"), &["--set", "partition_count=5"]);
    assert!(flagged.contains("(5 partitions)"), "{flagged}");
    let flagged = partitions(
        "e.db",
        Some("2"),
        &["--set", "partition_count=5", "--partition-count", "6"],
    );
    assert!(flagged.contains("(6 partitions)"), "{flagged}");

    // A bad value in the file or the environment names the setting and the source.
    ok(&dir, &["instances", "start", "HelloCities", "--id", "x"]);
    std::fs::write(&toml, "partition_count = 99\n").unwrap();
    let e = fails(&dir, &["instances", "list"], 1);
    assert!(
        e.contains("taskhub.toml") && e.contains("partition_count: must be 1 to 16"),
        "{e}"
    );
    // A flag fixes a bad value in the file: only the final value is validated.
    let fixed = partitions("f.db", None, &["--partition-count", "7"]);
    assert!(fixed.contains("(7 partitions)"), "{fixed}");
    let fixed = partitions("g.db", None, &["--set", "partition_count=9"]);
    assert!(fixed.contains("(9 partitions)"), "{fixed}");
    // A bad final value is still an error naming the setting and the flag it came from.
    std::fs::write(&toml, "partition_count = 2\n").unwrap();
    let e = fails(&dir, &["--partition-count", "0", "instances", "list"], 1);
    assert!(
        e.contains("invalid setting partition_count: must be 1 to 16 (from --partition-count)"),
        "{e}"
    );
    let out = on_file(&dir, &dir.db())
        .args(["instances", "list"])
        .env("TASKHUB_MAX_DEQUEUE_COUNT", "many")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(
        e.contains("max_dequeue_count") && e.contains("\"many\""),
        "{e}"
    );
}
