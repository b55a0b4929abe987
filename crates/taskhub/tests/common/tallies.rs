//! The end of a run of the tally fixture (`taskhub_test_support::tally`): every caller
//! answered and every operation applied exactly once.

use taskhub::*;
use taskhub_test_support::tally::Tallies;
use taskhub_test_support::wait;

/// Waits until `tallies` applied every operation and each of `callers` completed with an
/// answer to each of its calls; then the totals must be exactly the expected ones (none
/// applied twice or lost).
pub async fn every_operation_applied_once(
    tallies: Tallies,
    client: &TaskHubClient,
    callers: &[InstanceId],
) {
    let (want_count, want_sum) = tallies.expected();
    tallies.wait_for_applied(client, want_count).await;
    for id in callers {
        let done = super::run::wait_done(client, id, wait::STUCK).await;
        assert_eq!(
            done.output::<u64>().unwrap(),
            Some(tallies.calls),
            "{id}: {:?}",
            done.row.failure
        );
    }
    // Every call answered means every call applied; every signal too: now compare exactly.
    assert_eq!(
        tallies.totals(client).await,
        (want_count, want_sum),
        "an operation was applied twice or lost"
    );
}
