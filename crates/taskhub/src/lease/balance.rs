//! Balancing, decided from one read of the partitions table: which free, expired or handed-over
//! partitions to claim, and which partitions of over-loaded workers to ask for (next owner).
//!
//! Each worker aims for `min(max_partitions, ceil(partitions / live workers))`. Live workers are
//! the ones this worker can see: owners of unexpired rows and requested next owners, plus
//! itself; prohibited workers do not count and take nothing. A worker asks for a partition of
//! the most loaded other worker only while that worker holds at least two more than it does,
//! so every request strictly evens out the loads and ownership converges to max − min ≤ 1.

use std::collections::{BTreeMap, BTreeSet};

use taskhub_storage::PartitionRow;

/// What one worker sees.
pub(crate) struct View<'a> {
    /// This worker's name.
    pub me: &'a str,
    /// Every partition row, as just read.
    pub rows: &'a [PartitionRow],
    /// Partitions this worker holds and keeps.
    pub keeping: &'a BTreeSet<u32>,
    /// Partitions this worker holds but is handing over or giving up.
    pub releasing: &'a BTreeSet<u32>,
    /// True when a row has gone unchanged for a full lease interval.
    pub expired: &'a dyn Fn(u32) -> bool,
    /// Workers that may hold no partition.
    pub prohibited: &'a [String],
    /// The most partitions this worker may hold.
    pub max_partitions: usize,
}

/// What to do about other workers' rows.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Partitions to claim now (epoch + 1).
    pub claims: Vec<u32>,
    /// Partitions to ask their owner for, by setting this worker as next owner.
    pub requests: Vec<u32>,
}

impl View<'_> {
    fn held(&self, p: u32) -> bool {
        self.keeping.contains(&p) || self.releasing.contains(&p)
    }

    fn banned(&self, worker: &str) -> bool {
        self.prohibited.iter().any(|w| w == worker)
    }

    /// The workers this one can see alive, itself included.
    fn live(&self) -> BTreeSet<&str> {
        let mut live = BTreeSet::from([self.me]);
        for r in self
            .rows
            .iter()
            .filter(|r| !r.offline && !(self.expired)(r.partition))
        {
            for w in [r.owner.as_deref(), r.next_owner.as_deref()]
                .into_iter()
                .flatten()
            {
                if !self.banned(w) {
                    live.insert(w);
                }
            }
        }
        live
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Claim {
    /// Nobody holds it.
    Free,
    /// Its owner stopped renewing it a full lease interval ago.
    Expired,
}

/// May this worker claim `r` (not held by it) now, and why?
fn claimable(v: &View<'_>, r: &PartitionRow) -> Option<Claim> {
    let expired = (v.expired)(r.partition);
    match (r.owner.as_deref(), r.next_owner.as_deref()) {
        (None, Some(n)) if n == v.me => None, // handed over: claimed unconditionally
        (None, None) => Some(Claim::Free),
        // Handed over to a worker that never came for it.
        (None, Some(_)) => expired.then_some(Claim::Expired),
        // A row under this worker's own name that it does not hold: a former incarnation.
        (Some(o), _) if o == v.me => Some(Claim::Expired),
        (Some(_), _) => expired.then_some(Claim::Expired),
    }
}

/// Decides claims and handover requests.
pub(crate) fn plan(v: &View<'_>) -> Plan {
    let mut out = Plan::default();
    if v.banned(v.me) {
        return out;
    }
    let usable: Vec<&PartitionRow> = v.rows.iter().filter(|r| !r.offline).collect();
    let live = v.live().len();
    let fair = usable.len().div_ceil(live.max(1));
    let target = fair.min(v.max_partitions);
    let mut mine = v.keeping.len();
    let mut load: BTreeMap<&str, usize> = BTreeMap::new();
    for r in usable.iter().filter(|r| !v.held(r.partition)) {
        let expired = (v.expired)(r.partition);
        match (r.owner.as_deref(), r.next_owner.as_deref()) {
            // Handed over to me: take it whatever the target says.
            (None, Some(n)) if n == v.me => {
                out.claims.push(r.partition);
                mine += 1;
            }
            // Promised to me by a live owner: it counts as mine already.
            (Some(o), Some(n)) if n == v.me && o != v.me && !expired => mine += 1,
            // Handed over to another worker, not yet claimed: it counts as that worker's.
            (None, Some(n)) if n != v.me && !expired => *load.entry(n).or_default() += 1,
            (Some(o), next) if o != v.me && !expired => {
                let counted = next.filter(|n| *n != o).unwrap_or(o);
                *load.entry(counted).or_default() += 1;
            }
            _ => {}
        }
    }
    // A dead owner's rows are taken by whoever sees them expire first (availability first);
    // balancing evens the load out afterwards.
    for r in usable.iter().filter(|r| !v.held(r.partition)) {
        if mine < v.max_partitions && claimable(v, r) == Some(Claim::Expired) {
            out.claims.push(r.partition);
            mine += 1;
        }
    }
    // Free rows are taken up to the fair share, and beyond it only what no under-loaded live
    // worker can absorb.
    let free: Vec<u32> = usable
        .iter()
        .filter(|r| !v.held(r.partition) && claimable(v, r) == Some(Claim::Free))
        .map(|r| r.partition)
        .collect();
    let others_short: usize = load
        .iter()
        .filter(|(w, _)| !v.banned(w))
        .map(|(_, n)| fair.saturating_sub(*n))
        .sum();
    let mine_short = target.saturating_sub(mine);
    let spare = free.len().saturating_sub(mine_short + others_short);
    let take = (mine_short + spare).min(v.max_partitions.saturating_sub(mine));
    for p in free.into_iter().take(take) {
        out.claims.push(p);
        mine += 1;
    }
    while mine < target {
        let Some((&victim, &most)) = load.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        else {
            break;
        };
        if most < mine + 2 {
            break;
        }
        let pick = usable.iter().rev().find(|r| {
            r.owner.as_deref() == Some(victim)
                && r.next_owner.is_none()
                && !v.held(r.partition)
                && !(v.expired)(r.partition)
                && !out.requests.contains(&r.partition)
        });
        let Some(pick) = pick else {
            load.remove(victim);
            continue;
        };
        out.requests.push(pick.partition);
        if let Some(n) = load.get_mut(victim) {
            *n -= 1;
        }
        mine += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;

    fn rows(owners: &[Option<&str>]) -> Vec<PartitionRow> {
        owners
            .iter()
            .enumerate()
            .map(|(i, o)| PartitionRow {
                partition: u32::try_from(i).unwrap(),
                owner: o.map(str::to_owned),
                next_owner: None,
                epoch: 1,
                draining: false,
                retiring: false,
                offline: false,
                updated_at: Timestamp::EPOCH,
                turns: 0,
                doorbell: 0,
                etag: None,
            })
            .collect()
    }

    fn plan_for(me: &str, rows: &[PartitionRow], expired: &dyn Fn(u32) -> bool) -> Plan {
        plan_within(me, rows, expired, &[], 16)
    }

    /// [`plan_for`] with a prohibited list and a per-worker maximum.
    fn plan_within(
        me: &str,
        rows: &[PartitionRow],
        expired: &dyn Fn(u32) -> bool,
        prohibited: &[String],
        max_partitions: usize,
    ) -> Plan {
        let keeping: BTreeSet<u32> = rows
            .iter()
            .filter(|r| r.owner.as_deref() == Some(me))
            .map(|r| r.partition)
            .collect();
        plan(&View {
            me,
            rows,
            keeping: &keeping,
            releasing: &BTreeSet::new(),
            expired,
            prohibited,
            max_partitions,
        })
    }

    #[test]
    fn a_lone_worker_claims_every_free_partition() {
        let r = rows(&[None, None, None, None]);
        assert_eq!(plan_for("a", &r, &|_| false).claims, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_new_worker_asks_for_half_of_a_busy_workers_partitions() {
        let r = rows(&[Some("a"), Some("a"), Some("a"), Some("a")]);
        let p = plan_for("b", &r, &|_| false);
        assert!(p.claims.is_empty());
        assert_eq!(p.requests, vec![3, 2]);
    }

    #[test]
    fn a_third_worker_evens_out_two_two_zero() {
        let r = rows(&[Some("a"), Some("a"), Some("b"), Some("b")]);
        let p = plan_for("c", &r, &|_| false);
        assert_eq!(p.requests.len(), 1);
    }

    #[test]
    fn balanced_ownership_is_left_alone() {
        let r = rows(&[Some("a"), Some("a"), Some("b"), Some("c")]);
        for me in ["a", "b", "c"] {
            assert_eq!(plan_for(me, &r, &|_| false), Plan::default(), "{me}");
        }
    }

    #[test]
    fn expired_rows_are_claimed_by_the_first_to_see_them() {
        let r = rows(&[Some("dead"), Some("dead"), Some("b"), Some("c")]);
        let p = plan_for("a", &r, &|p| p < 2);
        assert_eq!(p.claims, vec![0, 1]);
        assert!(p.requests.is_empty());
    }

    #[test]
    fn free_rows_are_claimed_up_to_the_fair_share() {
        // b has none: a takes two of four free rows and leaves two for b.
        let mut r = rows(&[None, None, None, None, Some("b")]);
        r.pop();
        r.push(PartitionRow {
            partition: 4,
            owner: None,
            next_owner: Some("b".into()),
            ..r[0].clone()
        });
        let p = plan_for("a", &r, &|_| false);
        assert_eq!(p.claims, vec![0, 1, 2]);
    }

    #[test]
    fn an_expired_row_nobody_else_can_absorb_is_taken_beyond_the_fair_share() {
        // a and b hold their fair share (2 of 5 each); the dead worker's row must not wait.
        let r = rows(&[Some("a"), Some("a"), Some("b"), Some("b"), Some("dead")]);
        let p = plan_for("a", &r, &|p| p == 4);
        assert_eq!(p.claims, vec![4]);
    }

    #[test]
    fn an_unexpired_row_of_another_worker_is_never_claimed() {
        let r = rows(&[Some("b"), None]);
        let p = plan_for("a", &r, &|_| false);
        assert_eq!(p.claims, vec![1]);
    }

    #[test]
    fn the_per_worker_maximum_and_the_prohibited_list_hold() {
        let r = rows(&[None, None, None, None]);
        let capped = plan_within("a", &r, &|_| false, &[], 1);
        assert_eq!(capped.claims, vec![0]);
        let banned = plan_within("a", &r, &|_| false, &["a".to_owned()], 16);
        assert_eq!(banned, Plan::default());
    }

    #[test]
    fn a_handed_over_row_is_claimed_and_an_offline_row_is_not() {
        let mut r = rows(&[None, None]);
        r[0].next_owner = Some("a".into());
        r[1].offline = true;
        let p = plan_for("a", &r, &|_| false);
        assert_eq!(p.claims, vec![0]);
    }

    #[test]
    fn a_free_row_promised_to_someone_else_waits_for_the_lease_interval() {
        let mut r = rows(&[None]);
        r[0].next_owner = Some("b".into());
        assert!(plan_for("a", &r, &|_| false).claims.is_empty());
        assert_eq!(plan_for("a", &r, &|_| true).claims, vec![0]);
    }
}
