//! Opening an existing hub with another `partition_count` keeps the hub's count, warns naming
//! both values, and `taskhub partitions` shows both (text and `--json`).

mod common;

use common::*;

#[test]
fn a_configured_count_other_than_the_hubs_is_warned_about_and_shown() {
    let dir = TempDir::new("count-mismatch");
    ok(&dir, &["instances", "start", "HelloCities", "--id", "x"]);

    // Same count: no warning, one count shown.
    let same = run(&dir, &["partitions"]);
    let stderr = String::from_utf8(same.stderr).unwrap();
    assert!(!stderr.contains("partition_count"), "{stderr}");
    let text = String::from_utf8(same.stdout).unwrap();
    assert!(text.starts_with("partition count: 4\n"), "{text}");

    let out = run(&dir, &["--partition-count", "8", "partitions"]);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("partition_count is set to 8 but the existing task hub has 4 partitions"),
        "{stderr}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("partition count: 4"), "{text}");
    assert!(text.contains("configured: 8"), "{text}");

    let shown = json(&dir, &["--partition-count", "8", "partitions", "--json"]);
    assert_eq!(shown["partition_count"]["configured"], 8);
    assert_eq!(shown["partition_count"]["hub"], 4);
    assert_eq!(shown["partitions"].as_array().unwrap().len(), 4);
}
