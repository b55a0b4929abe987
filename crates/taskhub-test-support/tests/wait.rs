//! The waits return once their condition holds, with what the probe found.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use taskhub_test_support::wait;

#[tokio::test]
async fn until_and_until_some_return_once_the_condition_holds() {
    let n = AtomicU32::new(0);
    wait::until(
        "three polls",
        || n.fetch_add(1, Ordering::SeqCst) >= 3,
        || (),
    )
    .await;
    assert!(n.load(Ordering::SeqCst) >= 4);
    let m = AtomicU32::new(0);
    let got = wait::until_some("a value", || async {
        let k = m.fetch_add(1, Ordering::SeqCst);
        (k == 2).then_some(k)
    })
    .await;
    assert_eq!(got, 2);
}

#[test]
fn until_some_blocking_returns_the_value() {
    let mut k = 0;
    let got = wait::until_some_blocking("a value", Duration::from_secs(5), || {
        k += 1;
        (k == 3).then_some("three")
    });
    assert_eq!(got, "three");
}

#[test]
#[should_panic(expected = "stuck: never did not happen within")]
fn until_some_blocking_fails_after_its_deadline() {
    wait::until_some_blocking::<()>("never", Duration::from_millis(30), || None);
}
