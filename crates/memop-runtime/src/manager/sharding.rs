//! Sharding (`--sharding`): every replica is active, and reconciles the objects of its share.
//! The design, and why it is safe, is memop's `docs/sharding.md`; in short:
//!
//! - every object falls in one of `BUCKETS` buckets by the FNV-1a hash of its UID
//!   (`bucket_of`);
//! - every replica holds a Lease of its own, labelled with its ring: the members are the Leases
//!   of the ring that have a holder and changed within their duration, by the observer's
//!   monotonic clock (as leader election judges expiry);
//! - a bucket belongs to the member that scores highest for it, unless that member holds its
//!   share already (⌊`BUCKETS`/N⌋ or one more): rendezvous hashing with bounded loads,
//!   `assignment`;
//! - a replica *claims* its buckets in its Lease's annotation, and acts on one only once a list
//!   made after its claim was written shows no other live member claiming it; it gives one up by
//!   draining it (no new reconcile, the ones in flight finish) and then writing its claims
//!   without it, which is what the new owner waits for;
//! - a replica that has not renewed its Lease for the renew deadline stops acting at once, as a
//!   leader does: the others judge its Lease expired only a lease duration after they saw it
//!   renewed. It keeps its caches and its claims, and goes on trying to renew; once it has
//!   (the API server is back), each bucket it claims becomes active again only as a new claim
//!   does, once a list made after that renewal shows no other live member claiming it. So an
//!   API server outage stops every replica, and none exits: they resume together as it
//!   comes back, with their caches.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, Preconditions};
use kube::{Api, Client};
use serde_json::json;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::Flags;
use super::leader::{
    Attempt, Elector, LEASE_DURATION, RELEASE_TIMEOUT, RENEW_DEADLINE, RETRY_PERIOD,
};
use crate::Operator;

/// What a sharded replica does with the Leases of its ring, in the namespace they live in
/// (`--leader-election-namespace`, else the manager's), and so the Role it needs (a project's
/// `config/sharding/role.yaml`, the Helm chart's sharding Role):
/// - `create` its own Lease the first time (RBAC cannot limit a create to a name);
/// - `get` and `patch` its own Lease at each round, each write conditional on the version read;
/// - `list` the ring's Leases (by their label) to know who is live and what each claims;
/// - `delete` the Lease of a replica gone for good, conditional on the version it was judged by.
///
/// Each Lease is named after its replica's pod (`<leader-election-id>-shard-<pod name>`),
/// and a Deployment's pod names are not known beforehand: the Role cannot list them in
/// `resourceNames`, so it reaches every Lease of that namespace (memop's `docs/sharding.md`,
/// "The flag").
pub const RULES: &[crate::rbac::Rule] = &[crate::rbac::Rule {
    api_group: "coordination.k8s.io",
    resources: &["leases"],
    verbs: &["create", "delete", "get", "list", "patch"],
}];

/// How many buckets the objects are spread over: a fixed number, so that an object's bucket
/// never changes, and enough that 3 to 10 replicas get shares within a few percent of equal.
pub(crate) const BUCKETS: u16 = 64;

/// The 64-bit FNV-1a hash of `bytes`, with the standard offset basis and prime: the same on
/// every platform and in every process (unlike the randomly seeded `DefaultHasher`), and the
/// hash Kubernetes' server-side sharded list and watch (KEP-5866) computes.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The bucket of the object of `metadata`: the top bits of the FNV-1a hash of its UID, so that
/// bucket `b` is the hash range `[b * 2^58, (b + 1) * 2^58)`. An object without a UID (never
/// one read from the API server) falls back to its namespace and name.
pub(crate) fn bucket_of(metadata: &ObjectMeta) -> u16 {
    let key = match &metadata.uid {
        Some(uid) => uid.clone(),
        None => format!(
            "{}/{}",
            metadata.namespace.as_deref().unwrap_or_default(),
            metadata.name.as_deref().unwrap_or_default()
        ),
    };
    bucket_of_key(&key)
}

/// The bucket of the object whose UID is `uid`: that of an owned object is its controller's,
/// `bucket_of_uid` of its controller ownerReference's `uid`.
pub(crate) fn bucket_of_uid(uid: &str) -> u16 {
    bucket_of_key(uid)
}

fn bucket_of_key(key: &str) -> u16 {
    // BUCKETS is 2^6: the top 6 bits.
    (fnv1a64(key.as_bytes()) >> (64 - BUCKETS.trailing_zeros())) as u16
}

/// The owner of each bucket (by index) among `members`: rendezvous hashing with bounded loads.
/// Every (member, bucket) pair has a [`score`]; going down the pairs from the highest score,
/// a bucket goes to the member of its pair unless it has an owner already or the member holds
/// its share: ⌊`BUCKETS`/N⌋, or one more for the first `BUCKETS` mod N members to reach that.
/// So the shares are as even as 64 buckets allow (16 each among four, 22, 21 and 21 among
/// three), where plain rendezvous hashing (each bucket to its highest score) gives binomial
/// shares: 23, 16, 14 and 11 of 64 in one ring of four, and the largest share is what a
/// replica's memory limit must hold. Adding a member moves to it its share, the buckets it
/// scores highest for that the others let go, and a few others between the rest as their
/// shares shrink (about 1.1/N of the buckets in all, against 1/N). Empty without members; a
/// member named twice counts once.
pub(crate) fn assignment<'a>(members: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let members: std::collections::BTreeSet<&str> = members.into_iter().collect();
    if members.is_empty() {
        return Vec::new();
    }
    let (share, mut larger) = (
        usize::from(BUCKETS) / members.len(),
        usize::from(BUCKETS) % members.len(),
    );
    let mut pairs: Vec<(u64, &str, u16)> = (members.iter())
        .flat_map(|&member| (0..BUCKETS).map(move |b| (score(member, b), member, b)))
        .collect();
    // Highest first; a tie (never seen with 64-bit scores) goes to the greater name.
    pairs.sort_unstable_by(|x, y| (y.0, y.1).cmp(&(x.0, x.1)));
    let mut owners: Vec<Option<&str>> = vec![None; usize::from(BUCKETS)];
    let mut held: HashMap<&str, usize> = HashMap::new();
    for (_, member, bucket) in pairs {
        let (owner, count) = (
            &mut owners[usize::from(bucket)],
            held.entry(member).or_default(),
        );
        if owner.is_some() || *count > share || (*count == share && larger == 0) {
            continue;
        }
        if *count == share {
            larger -= 1;
        }
        *owner = Some(member);
        *count += 1;
    }
    // The shares add up to `BUCKETS`, and a bucket left at its last pair would mean every
    // member full: every bucket has its owner.
    owners.into_iter().flatten().collect()
}

/// How much `member` wants `bucket`: FNV-1a of the member, mixed with the bucket through a
/// finalizer (MurmurHash3's fmix64), so that members' preferences are independent across
/// buckets (FNV-1a alone barely mixes what differs in its last bytes).
fn score(member: &str, bucket: u16) -> u64 {
    fmix64(fnv1a64(member.as_bytes()) ^ fmix64(u64::from(bucket) + 1))
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// The buckets `identity` owns among `members` (which should include it), as a mask.
pub(crate) fn assigned<'a>(identity: &str, members: impl IntoIterator<Item = &'a str>) -> u64 {
    (assignment(members).into_iter().zip(0..BUCKETS))
        .filter(|&(owner, _)| owner == identity)
        .fold(0, |mask, (_, b)| mask | (1 << b))
}

/// The buckets of `mask`, in order.
pub(crate) fn buckets(mask: u64) -> impl Iterator<Item = u16> {
    (0..BUCKETS).filter(move |b| mask & (1 << b) != 0)
}

/// How long a shard waits for its own writes and reads, and for the others'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timings {
    /// How long another replica waits, from when it last saw a Lease change, before it judges
    /// it expired (whole seconds: the Lease has `leaseDurationSeconds`).
    pub(crate) lease_duration: Duration,
    /// How long a replica keeps acting after it sent its last successful renewal; shorter than
    /// `lease_duration`, by at least the time a request may take.
    pub(crate) renew_deadline: Duration,
    /// How often a replica renews its Lease and looks at the others'.
    pub(crate) retry_period: Duration,
}

impl Default for Timings {
    /// client-go's, as for leader election: 15 s, 10 s, 2 s.
    fn default() -> Self {
        Self {
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
        }
    }
}

/// Which ring a replica joins, as whom, and where its Lease is.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The ring's name: `--leader-election-id`.
    ring: String,
    /// The namespace of the Leases, or the client's default namespace.
    namespace: Option<String>,
    /// This replica's name (the pod's name): its Lease's, and its name as a member of the ring.
    name: String,
    /// The holder identity of this process in its Lease: `<name>_<uuid>`, unique per process,
    /// so that of two processes of one name only one holds the Lease.
    identity: String,
    /// The label key that marks the ring's Leases: `<domain>/shard-ring`.
    ring_label: String,
    /// The annotation that holds a Lease holder's claims: `<domain>/shard-buckets`.
    claims_annotation: String,
    timings: Timings,
}

impl Config {
    /// A process of replica `name` (the pod's name) of ring `ring` (`--leader-election-id`)
    /// of `operator`, with its Lease in `namespace` (or the client's default namespace), with
    /// client-go's timings. Its holder identity is `name` and a UUID of its own: another
    /// process of the same name does not take its Lease while it renews it.
    pub(crate) fn new(
        operator: &Operator,
        ring: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Self {
        Self {
            ring: ring.to_string(),
            namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_string),
            name: name.to_string(),
            identity: super::leader::process_identity(name),
            ring_label: format!("{}/shard-ring", operator.domain),
            claims_annotation: format!("{}/shard-buckets", operator.domain),
            timings: Timings::default(),
        }
    }

    /// The ring of `flags` (`--leader-election-id`, `--leader-election-namespace`), as this pod.
    pub(crate) fn from_flags(operator: &Operator, flags: &Flags) -> Self {
        let leader = super::leader::Config::from_flags(operator, flags);
        Self::new(
            operator,
            leader.lease_name(),
            flags.leader_election_namespace.as_deref(),
            leader.name(),
        )
    }

    /// These settings with other timings: shorter ones for tests. The renew deadline must be
    /// shorter than the lease duration, which is whole seconds.
    #[cfg(test)]
    pub(crate) fn with_timings(mut self, timings: Timings) -> Self {
        assert!(
            timings.renew_deadline < timings.lease_duration
                && timings.lease_duration.subsec_nanos() == 0,
            "the renew deadline must be shorter than the lease duration, in whole seconds"
        );
        self.timings = timings;
        self
    }

    /// The name of this replica's Lease: `<ring>-shard-<name>`, the same for every process of
    /// the replica.
    pub(crate) fn lease_name(&self) -> String {
        format!("{}-shard-{}", self.ring, self.name)
    }

    /// The name of the member whose Lease is `lease`: its name after `<ring>-shard-`.
    fn member_of<'a>(&self, lease: &'a str) -> Option<&'a str> {
        lease
            .strip_prefix(&self.ring)
            .and_then(|rest| rest.strip_prefix("-shard-"))
            .filter(|name| !name.is_empty())
    }

    /// The value of the ring label: the ring's name, or its hash when that is too long for a
    /// label value (63 characters).
    fn ring_value(&self) -> String {
        if self.ring.len() <= 63 {
            self.ring.clone()
        } else {
            format!("{:016x}", fnv1a64(self.ring.as_bytes()))
        }
    }
}

/// Where a replica stands with one bucket (the table of memop's `docs/sharding.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not claimed, not acted on.
    Free,
    /// Claimed (or about to be, by the next write), not acted on until no one else claims it.
    Claiming,
    /// Acted on: its reconciles run.
    Active,
    /// Given up: no new reconcile starts; claimed until the ones in flight have finished.
    Draining,
}

/// The phases of every bucket, and the reconciles in flight in each: the state machine of a
/// replica's share, apart from any I/O.
#[derive(Debug)]
pub(crate) struct Table {
    phases: [Phase; BUCKETS as usize],
    in_flight: [u32; BUCKETS as usize],
    /// Whether this replica is leaving the ring: it wants no bucket any more.
    leaving: bool,
    /// Whether this replica has stopped acting for good (its Lease is lost).
    lost: bool,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            phases: [Phase::Free; BUCKETS as usize],
            in_flight: [0; BUCKETS as usize],
            leaving: false,
            lost: false,
        }
    }
}

impl Table {
    /// Moves every bucket on before a renewal, `wanted` being the buckets the replica is
    /// assigned by the membership it last saw; returns the claims that renewal writes.
    pub(crate) fn plan(&mut self, wanted: u64) -> u64 {
        if self.lost {
            return 0;
        }
        let wanted = if self.leaving { 0 } else { wanted };
        for b in 0..BUCKETS as usize {
            let want = wanted & (1 << b) != 0;
            self.phases[b] = match (self.phases[b], want) {
                (Phase::Free, true) => Phase::Claiming,
                // (In flight only in a bucket that was active when the replica stopped acting:
                // claimed until that reconcile is gone.)
                (Phase::Claiming, false) if self.in_flight[b] == 0 => Phase::Free,
                (Phase::Active, false) => Phase::Draining,
                // Still claimed all along: no one else can have acted on it meanwhile.
                (Phase::Draining, true) => Phase::Active,
                (Phase::Draining, false) if self.in_flight[b] == 0 => Phase::Free,
                (phase, _) => phase,
            };
        }
        self.claims()
    }

    /// The buckets claimed: all but the free ones.
    pub(crate) fn claims(&self) -> u64 {
        self.mask(|phase| phase != Phase::Free)
    }

    /// The buckets acted on.
    pub(crate) fn active(&self) -> u64 {
        self.mask(|phase| phase == Phase::Active)
    }

    fn mask(&self, which: impl Fn(Phase) -> bool) -> u64 {
        (0..BUCKETS as usize)
            .filter(|&b| which(self.phases[b]))
            .fold(0, |mask, b| mask | (1 << b))
    }

    /// After a renewal that wrote `written` as the claims succeeded, and a list made after it
    /// found `others` claimed by other live members: the claimed buckets nobody else claims
    /// become active. Returns those.
    pub(crate) fn confirm(&mut self, written: u64, others: u64) -> u64 {
        let mut activated = 0;
        for b in buckets(written & !others) {
            if self.phases[b as usize] == Phase::Claiming {
                self.phases[b as usize] = Phase::Active;
                activated |= 1 << b;
            }
        }
        activated
    }

    /// Starts a reconcile in `bucket` if it is active; the caller ends it with [`Self::end`].
    pub(crate) fn begin(&mut self, bucket: u16) -> bool {
        let b = usize::from(bucket);
        let admitted = !self.lost && self.phases[b] == Phase::Active;
        if admitted {
            self.in_flight[b] += 1;
        }
        admitted
    }

    /// Ends a reconcile [`Self::begin`] started.
    pub(crate) fn end(&mut self, bucket: u16) {
        let b = usize::from(bucket);
        self.in_flight[b] = self.in_flight[b].saturating_sub(1);
    }

    /// Stops acting on every bucket until the next renewal: every bucket acted on or draining
    /// is claimed again, as a new claim is, so that it becomes active again only once a list
    /// made after a renewal shows no other live member claiming it (another may have taken it
    /// meanwhile, having judged this replica's Lease expired). The claims stay, and with them
    /// the caches.
    pub(crate) fn suspend(&mut self) {
        for phase in &mut self.phases {
            if matches!(*phase, Phase::Active | Phase::Draining) {
                *phase = Phase::Claiming;
            }
        }
    }

    /// Stops acting on every bucket, for good.
    pub(crate) fn lose(&mut self) {
        self.lost = true;
        self.phases = [Phase::Free; BUCKETS as usize];
    }

    /// Stops starting reconciles anywhere, ahead of a release, for good: every claimed bucket
    /// drains, and no round claims one again.
    pub(crate) fn leave(&mut self) {
        self.leaving = true;
        for (phase, &in_flight) in self.phases.iter_mut().zip(&self.in_flight) {
            *phase = match *phase {
                Phase::Active | Phase::Draining if in_flight > 0 => Phase::Draining,
                _ => Phase::Free,
            };
        }
    }

    /// How many reconciles are in flight, in all buckets.
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight.iter().sum()
    }
}

/// How many lease durations a Lease of the ring must stay unchanged, by a member's clock,
/// before that member deletes it: its replica went away for good (a Deployment's pods get new
/// names, so nothing would ever take it again).
const DEPARTED_AFTER: u32 = 10;

/// Another member's Lease, as this replica saw it.
struct Member {
    spec: LeaseSpec,
    claims: u64,
    /// Its resourceVersion as last listed: a delete of a departed member's Lease is conditional
    /// on it, so that one renewed meanwhile stays.
    version: Option<String>,
    /// When this replica first saw this spec and these claims, by its own clock.
    seen: Instant,
}

impl Member {
    /// Whether it is a live member at `now`: held, and changed within its duration of when it
    /// was seen (client-go's expiry, by the observer's monotonic clock).
    fn live(&self, now: Instant) -> bool {
        let held = self
            .spec
            .holder_identity
            .as_deref()
            .is_some_and(|h| !h.is_empty());
        let duration = self.spec.lease_duration_seconds.unwrap_or(0);
        let duration = Duration::from_secs(u64::try_from(duration).unwrap_or(0));
        held && now < self.seen + duration
    }

    /// Whether it is the Lease of a replica gone for good at `now`: unchanged for
    /// [`DEPARTED_AFTER`] times its duration (or `at_least`'s, if longer) since it was seen.
    fn departed(&self, now: Instant, at_least: Duration) -> bool {
        let duration = self.spec.lease_duration_seconds.unwrap_or(0);
        let duration = Duration::from_secs(u64::try_from(duration).unwrap_or(0)).max(at_least);
        now >= self.seen + duration * DEPARTED_AFTER
    }
}

/// A replica's share of a ring, kept by a task that renews its Lease and follows the others'.
/// Clones share it. Controllers built on a [`Shared`](super::Shared) that carries one
/// ([`Shared::with_shard`](super::Shared::with_shard)) reconcile only the objects of its
/// active buckets.
#[derive(Clone)]
pub(crate) struct Shard {
    inner: Arc<Inner>,
}

struct Inner {
    #[cfg(test)]
    identity: String,
    /// The annotation of the claims (written empty on release).
    claims_annotation: String,
    table: Mutex<Table>,
    /// How many times buckets became active: controllers reconcile their objects again on each.
    activations: watch::Sender<u64>,
    /// Whether the Lease is lost, for good.
    lost: watch::Sender<bool>,
    /// Whether this replica acts on nothing now: its Lease lost, or not renewed within the
    /// renew deadline (until it is renewed again).
    stopped: watch::Sender<bool>,
    /// The buckets whose objects this replica's caches hold: the claimed ones (see
    /// [`Holding`]).
    wanted: watch::Sender<u64>,
    /// The buckets each cache ([`Shard::hold`]) has listed since it last started over, while
    /// the cache lives.
    caches: Mutex<Vec<Weak<AtomicU64>>>,
    /// The members seen live at the last round (this replica included).
    members: Mutex<Vec<String>>,
    /// Stops the task, which then hands back its elector (to release the Lease).
    stop: Mutex<Option<oneshot::Sender<()>>>,
    task: Mutex<Option<tokio::task::JoinHandle<Elector>>>,
}

/// A reconcile under way in an active bucket: while it lives, the bucket does not finish
/// draining.
pub(crate) struct Turn {
    shard: Shard,
    bucket: u16,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.shard.table().end(self.bucket);
    }
}

/// What one cache of a sharded replica holds: the objects of the buckets the replica claims
/// (claiming, active or draining), and no others. A bucket's objects are cached from when it is
/// claimed until it is free again, so that they are there when it becomes active (and every
/// cached object of it is reconciled) and while its last reconciles drain.
///
/// The cache filters what its watch brings; when a bucket is added to the claims, it starts its
/// watch over (a list) with the new ones ([`Holding::restart`]) and, once that list is applied,
/// says so ([`Holding::listed`]): the rounds let a claimed bucket become active only then. The
/// list drops the objects of the buckets no longer claimed. When buckets are only given up, the
/// watch goes on, keeping fewer, and the cache drops their objects ([`Holding::narrow`]): no
/// list.
#[derive(Clone)]
pub(crate) struct Holding {
    wanted: watch::Receiver<u64>,
    /// The buckets the current watch keeps (shared by the clones: the watch's filter, and the
    /// store that says when its list is in).
    listing: Arc<AtomicU64>,
    /// The buckets this cache holds every object of (shared with [`Shard::cached`]).
    listed: Arc<AtomicU64>,
}

impl Holding {
    /// Starts over with the buckets claimed now: returns them, the ones the new watch keeps.
    /// Until its list is in, the cache holds every object only of the buckets it both held and
    /// still keeps.
    pub(crate) fn restart(&mut self) -> u64 {
        let listing = *self.wanted.borrow_and_update();
        self.listing.store(listing, Ordering::SeqCst);
        self.listed.fetch_and(listing, Ordering::SeqCst);
        listing
    }

    /// Follows a change of the claims that gave buckets up and added none, without starting
    /// over: the watch keeps only the buckets claimed now, which it returns, and the cache,
    /// which drops the objects of the others, still holds every object of those. `None` when
    /// a bucket was added: only a new list brings its objects ([`Self::restart`]).
    pub(crate) fn narrow(&mut self) -> Option<u64> {
        let wanted = *self.wanted.borrow_and_update();
        if wanted & !self.listing.load(Ordering::SeqCst) != 0 {
            return None;
        }
        self.listing.store(wanted, Ordering::SeqCst);
        self.listed.fetch_and(wanted, Ordering::SeqCst);
        Some(wanted)
    }

    /// Whether the claims changed since [`Self::restart`] (at once if they have).
    pub(crate) async fn changed(&mut self) {
        // Once the shard is gone, its claims never change again.
        if self.wanted.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Says that the list of the current watch is applied to the cache: it holds every object
    /// of the buckets it keeps.
    pub(crate) fn listed(&self) {
        let listing = self.listing.load(Ordering::SeqCst);
        self.listed.store(listing, Ordering::SeqCst);
    }

    /// Whether the cache keeps the objects of `bucket`.
    pub(crate) fn keeps(&self, bucket: u16) -> bool {
        self.listing.load(Ordering::SeqCst) & (1 << bucket) != 0
    }
}

impl Shard {
    /// Joins the ring of `config` with `client`: creates or takes this replica's Lease, and
    /// from then on renews it and follows the ring every retry period, in a task that runs
    /// until the manager releases it or [`Shard::abandon`], or until the Lease is lost. (Not on
    /// the manager's shutdown signal: the Lease is renewed while the controllers finish.)
    pub(crate) fn start(client: Client, config: Config) -> Self {
        let namespace = config
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        let leases: Api<LeaseObject> = Api::namespaced(client, &namespace);
        let mut elector = Elector::new(leases.clone(), &config.lease_name(), &config.identity)
            .with_lease_duration(config.timings.lease_duration);
        elector.set_metadata("labels", json!({ &config.ring_label: config.ring_value() }));
        let (stop, stopped) = oneshot::channel();
        let shard = Self {
            inner: Arc::new(Inner {
                #[cfg(test)]
                identity: config.identity.clone(),
                claims_annotation: config.claims_annotation.clone(),
                table: Mutex::default(),
                activations: watch::Sender::new(0),
                lost: watch::Sender::new(false),
                stopped: watch::Sender::new(false),
                wanted: watch::Sender::new(0),
                caches: Mutex::default(),
                members: Mutex::default(),
                stop: Mutex::new(Some(stop)),
                task: Mutex::default(),
            }),
        };
        tracing::info!(lease = %config.lease_name(), %namespace, replica = %config.name, identity = %config.identity, "joining the shard ring");
        let round = Rounds {
            shard: shard.clone(),
            elector,
            leases,
            config,
            others: HashMap::new(),
            listed: Instant::now(),
        };
        let task = tokio::spawn(round.run(stopped));
        *shard
            .inner
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(task);
        shard
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// This process's holder identity in its Lease: its name and a UUID.
    #[cfg(test)]
    pub(crate) fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The buckets this replica acts on now, as a mask (bit `b` for bucket `b`).
    pub(crate) fn active(&self) -> u64 {
        self.table().active()
    }

    /// The names of the live members it saw at its last round, itself included, in order.
    pub(crate) fn members(&self) -> Vec<String> {
        self.inner
            .members
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Starts a reconcile of the object of `metadata` if its bucket is active here: keep the
    /// turn until the reconcile ends. `None`: not this replica's to reconcile now.
    pub(crate) fn enter(&self, metadata: &ObjectMeta) -> Option<Turn> {
        let bucket = bucket_of(metadata);
        self.table().begin(bucket).then(|| Turn {
            shard: self.clone(),
            bucket,
        })
    }

    /// A cache of this replica's share: what it must hold, and where it says what it has
    /// listed. No bucket becomes active here until every live cache has listed its objects.
    pub(crate) fn hold(&self) -> Holding {
        let listed = Arc::new(AtomicU64::new(0));
        self.inner
            .caches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::downgrade(&listed));
        Holding {
            wanted: self.inner.wanted.subscribe(),
            listing: Arc::default(),
            listed,
        }
    }

    /// The buckets every live cache holds all the objects of.
    fn cached(&self) -> u64 {
        let mut caches = self
            .inner
            .caches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        caches.retain(|cache| cache.strong_count() > 0);
        (caches.iter().filter_map(Weak::upgrade))
            .fold(u64::MAX, |all, listed| all & listed.load(Ordering::SeqCst))
    }

    /// A receiver that changes each time buckets become active here.
    pub(crate) fn activations(&self) -> watch::Receiver<u64> {
        self.inner.activations.subscribe()
    }

    /// Whether this replica lost its Lease for good (another process holds it), or left (and
    /// acts on nothing any more).
    pub(crate) fn is_lost(&self) -> bool {
        *self.inner.lost.borrow()
    }

    /// Whether this replica has stopped acting, for now or for good: it has not renewed its
    /// Lease within the renew deadline (the API server is out of reach, say) and not since,
    /// or it lost its Lease, or left.
    #[cfg(test)]
    pub(crate) fn is_stopped(&self) -> bool {
        *self.inner.stopped.borrow()
    }

    /// Resolves when this replica stops acting: it has not renewed its Lease within the renew
    /// deadline, another process holds it, or it left (`Shard::release`,
    /// [`Shard::abandon`]); at once if it has stopped. Reconciles in flight are dropped then.
    /// A replica that stopped for want of a renewal acts again once it has renewed.
    pub(crate) async fn lost(&self) {
        let _ = self
            .inner
            .stopped
            .subscribe()
            .wait_for(|&stopped| stopped)
            .await;
    }

    /// Resolves when this replica has stopped for good: another process holds its Lease, or it
    /// left. The manager exits then; not while the API server is out of reach.
    pub(crate) async fn gone(&self) {
        let _ = self.inner.lost.subscribe().wait_for(|&lost| lost).await;
    }

    /// Stops taking part without touching the Lease, as a killed process would: the others take
    /// its buckets once its Lease has expired. It acts on nothing from then on.
    #[cfg(test)]
    pub(crate) fn abandon(&self) {
        self.table().lose();
        self.inner.stopped.send_replace(true);
        self.inner.lost.send_replace(true);
        if let Some(task) = self
            .inner
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }

    /// Leaves the ring: drains every bucket (waiting at most `drain` for the reconciles in
    /// flight, then dropping those left), then releases the Lease (no holder, no claims), so that the others take its
    /// buckets at their next round instead of a lease duration later. Bounded by `drain` plus
    /// a second.
    pub(crate) async fn release(&self, drain: Duration) {
        self.table().leave();
        let _ = tokio::time::timeout(drain, async {
            while self.table().in_flight() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        // What is still in flight is dropped (see `Controller::reconcile`) before the Lease,
        // and its claims, go.
        self.table().lose();
        self.inner.stopped.send_replace(true);
        self.inner.lost.send_replace(true);
        let stop = self
            .inner
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let task = self
            .inner
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let (Some(stop), Some(task)) = (stop, task) else {
            return;
        };
        let _ = stop.send(());
        let release = async {
            let mut elector = task.await?;
            let none = format!("{:016x}", 0);
            let annotations = json!({ &self.inner.claims_annotation: none });
            elector.set_metadata("annotations", annotations);
            anyhow::Ok(elector.release().await?)
        };
        match tokio::time::timeout(RELEASE_TIMEOUT, release).await {
            Ok(Ok(true)) => tracing::info!("released the shard lease"),
            Ok(Ok(false)) => tracing::info!("the shard lease is no longer ours"),
            Ok(Err(err)) => tracing::warn!(error = %err, "could not release the shard lease"),
            Err(_) => tracing::warn!("releasing the shard lease timed out"),
        }
    }
}

/// The task of a [`Shard`]: a round every retry period.
struct Rounds {
    shard: Shard,
    elector: Elector,
    leases: Api<LeaseObject>,
    config: Config,
    /// The other Leases of the ring, by name, as last seen.
    others: HashMap<String, Member>,
    /// When the last list of the ring's Leases that succeeded was made.
    listed: Instant,
}

impl Rounds {
    async fn run(mut self, mut stop: oneshot::Receiver<()>) -> Elector {
        let timings = self.config.timings;
        // Before the first renewal that succeeds, nothing is claimed: no deadline to keep.
        let mut renewed: Option<Instant> = None;
        // Whether it stopped acting for want of a renewal within the renew deadline.
        let mut suspended = false;
        let mut wanted = 0;
        let mut next = Instant::now();
        loop {
            let deadline = renewed
                .map(|at| at + timings.renew_deadline)
                .filter(|_| !suspended);
            let wake = deadline.map_or(next, |deadline| next.min(deadline));
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                _ = &mut stop => return self.elector,
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                // The others judge its Lease expired a lease duration after they last saw it
                // change: stop acting now. But do not leave: while the API server is out of
                // reach nobody can take the buckets over, and once it is back this replica
                // resumes with its caches (and a replica cut off alone is taken over, then
                // rejoins as its Lease is renewed).
                self.suspend(timings.renew_deadline);
                suspended = true;
                if Instant::now() < next {
                    continue;
                }
            }
            let sent = Instant::now();
            next = sent + timings.retry_period;
            let claims = self.claim(wanted);
            let attempt = self.elector.try_acquire_or_renew();
            let attempt = match (deadline, suspended) {
                (Some(deadline), false) => tokio::time::timeout_at(deadline, attempt).await.ok(),
                // Trying to renew again: as long as a renewal may take.
                (_, true) => tokio::time::timeout(timings.renew_deadline, attempt)
                    .await
                    .ok(),
                (None, false) => Some(attempt.await),
            };
            match attempt {
                Some(Attempt::Held) => {
                    renewed = Some(sent);
                    if suspended {
                        suspended = false;
                        self.resume();
                    }
                }
                Some(Attempt::HeldBy(holder)) if renewed.is_some() => {
                    self.lose(&format!("{holder} holds this replica's shard lease"));
                    return self.elector;
                }
                // Not joined yet (its Lease is held by a replica of the same name that went
                // away, say): wait, as a leader election candidate does.
                Some(Attempt::HeldBy(holder)) => {
                    tracing::debug!(%holder, "this replica's shard lease is held");
                    continue;
                }
                Some(Attempt::Failed) | None => continue,
            }
            if let Some(assigned) = self.confirm(claims).await {
                wanted = assigned;
            }
        }
    }

    /// Plans this round's claims from the buckets `wanted`, has the caches follow them (a
    /// bucket's objects are cached before it can become active, and dropped once it is free),
    /// and writes them on the Lease to renew.
    fn claim(&mut self, wanted: u64) -> u64 {
        let claims = self.shard.table().plan(wanted);
        self.shard
            .inner
            .wanted
            .send_if_modified(|cached| std::mem::replace(cached, claims) != claims);
        let value = format!("{claims:016x}");
        let annotations = json!({ &self.config.claims_annotation: value });
        self.elector.set_metadata("annotations", annotations);
        claims
    }

    /// After a renewal of `claims`: lists the ring, activates the claimed buckets no other live
    /// member claims, and returns the buckets this replica is assigned now (`None` when the
    /// list failed, and nothing changed).
    async fn confirm(&mut self, claims: u64) -> Option<u64> {
        // Only what was listed after this renewal counts: a claim of another member that was
        // written before it is in the list, and one written after sees ours.
        let listed = tokio::time::timeout(self.config.timings.retry_period, self.list()).await;
        let others = match listed {
            Ok(Ok(others)) => others,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "listing the shard leases failed");
                return None;
            }
            Err(_) => {
                tracing::warn!("listing the shard leases timed out");
                return None;
            }
        };
        // A claimed bucket whose objects are not all cached yet waits, as if claimed by another
        // member: its activation reconciles what is cached.
        let uncached = !self.shard.cached();
        let activated = self.shard.table().confirm(claims, others | uncached);
        let members = self.members();
        let wanted = assigned(&self.config.name, members.iter().map(String::as_str));
        *self
            .shard
            .inner
            .members
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = members;
        if activated != 0 {
            tracing::info!(
                buckets = activated.count_ones(),
                active = self.shard.active().count_ones(),
                "buckets became active"
            );
            self.shard.inner.activations.send_modify(|n| *n += 1);
        }
        Some(wanted)
    }

    fn lose(&self, why: &str) {
        tracing::warn!("{why}; acting on no bucket any more");
        self.shard.table().lose();
        self.shard.inner.stopped.send_replace(true);
        self.shard.inner.lost.send_replace(true);
    }

    /// Stops acting until the next renewal, keeping the claims and the caches.
    fn suspend(&self, deadline: Duration) {
        tracing::warn!(
            ?deadline,
            "the shard lease was not renewed within the renew deadline; acting on no bucket \
             until it is renewed (caches and claims kept)"
        );
        self.shard.table().suspend();
        self.shard.inner.stopped.send_replace(true);
    }

    /// Acts again after a renewal: the buckets become active as their claims are confirmed,
    /// from this round's list on.
    ///
    /// The time since its last successful list does not count against the others' Leases:
    /// it could not read them meanwhile, and after an outage of the API server they could not
    /// be renewed either, so judging them by the versions it saw last would take every other
    /// member for expired and claim (and list) every bucket for a round. Each Lease keeps the
    /// time it had left when it was last listed. (Judging a Lease expired later than a lease
    /// duration after it was seen is always safe: it only delays a takeover.)
    fn resume(&mut self) {
        tracing::info!("renewed the shard lease again; resuming as the claims are confirmed");
        let blind = self.listed.elapsed();
        for member in self.others.values_mut() {
            member.seen += blind;
        }
        self.shard.inner.stopped.send_replace(false);
    }

    /// Reads the ring's Leases, and returns the buckets claimed by its other live members.
    async fn list(&mut self) -> kube::Result<u64> {
        let selector = format!("{}={}", self.config.ring_label, self.config.ring_value());
        let list = self
            .leases
            .list(&ListParams::default().labels(&selector))
            .await?;
        let now = Instant::now();
        self.listed = now;
        let own = self.config.lease_name();
        let mut seen = HashMap::new();
        for lease in list.items {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            if name == own {
                continue;
            }
            let claims = (lease.metadata.annotations.as_ref())
                .and_then(|a| a.get(&self.config.claims_annotation))
                .and_then(|value| u64::from_str_radix(value, 16).ok())
                .unwrap_or(0);
            let spec = lease.spec.unwrap_or_default();
            let since = match self.others.remove(&name) {
                Some(member) if member.spec == spec && member.claims == claims => member.seen,
                _ => now,
            };
            seen.insert(
                name,
                Member {
                    spec,
                    claims,
                    version: lease.metadata.resource_version,
                    seen: since,
                },
            );
        }
        self.others = seen;
        self.forget_departed(now);
        let claimed = (self.others.values())
            .filter(|member| member.live(now))
            .fold(0, |mask, member| mask | member.claims);
        Ok(claimed)
    }

    /// Deletes the Leases of the replicas gone for good ([`Member::departed`]), each on
    /// condition of the resourceVersion listed: a replica that came back and renewed its Lease
    /// meanwhile keeps it. In the background, so that the round keeps its pace; a Lease whose
    /// delete failed is seen anew at the next list, and tried again as long after.
    fn forget_departed(&mut self, now: Instant) {
        let duration = self.config.timings.lease_duration;
        let departed: Vec<String> = (self.others.iter())
            .filter(|(_, member)| member.departed(now, duration))
            .map(|(name, _)| name.clone())
            .collect();
        for name in departed {
            let Some(Member {
                version: Some(version),
                ..
            }) = self.others.remove(&name)
            else {
                continue;
            };
            tokio::spawn(delete_departed(self.leases.clone(), name, version));
        }
    }
    /// The live members, by name: this replica, and the replicas of the live Leases of the
    /// others. By name, not by holder identity: the assignment stays with a replica across
    /// the restarts of its process (a StatefulSet's pods keep their buckets).
    fn members(&self) -> Vec<String> {
        let now = Instant::now();
        let mut members: BTreeMap<String, ()> = BTreeMap::new();
        members.insert(self.config.name.clone(), ());
        for (lease, _) in self.others.iter().filter(|(_, m)| m.live(now)) {
            if let Some(name) = self.config.member_of(lease) {
                members.insert(name.to_string(), ());
            }
        }
        members.into_keys().collect()
    }
}

/// Deletes the Lease `name` of a replica gone for good, on condition that it is still at
/// `version`, the resourceVersion this member judged it by.
async fn delete_departed(leases: Api<LeaseObject>, name: String, version: String) {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: Some(version),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    match leases.delete(&name, &params).await {
        Ok(_) => tracing::info!(lease = %name, "deleted the Lease of a departed replica"),
        // Renewed since (a conflict), or deleted by another member.
        Err(kube::Error::Api(status)) if status.code == 409 || status.is_not_found() => {
            tracing::debug!(lease = %name, "the Lease of a departed replica changed or went");
        }
        Err(err) => {
            tracing::warn!(lease = %name, error = %err, "could not delete the Lease of a departed replica");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("manager-7d9f8c6b5-{i:05}"))
            .collect()
    }

    fn owners(members: &[String]) -> Vec<String> {
        let owners = assignment(members.iter().map(String::as_str));
        owners.into_iter().map(str::to_string).collect()
    }

    #[test]
    fn fnv1a64_is_the_standard_one() {
        // The published test vectors of FNV-1a 64.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn an_object_is_bucketed_by_its_uid_into_a_hash_range() {
        let uid = "3f2a8c1e-5b7d-4e9a-9c0f-1d2e3f4a5b6c";
        let object = ObjectMeta {
            name: Some("a".into()),
            namespace: Some("default".into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        };
        let bucket = bucket_of(&object);
        assert_eq!(u64::from(bucket), fnv1a64(uid.as_bytes()) >> 58);
        // The same in every process, whatever else the object says.
        let renamed = ObjectMeta {
            name: Some("b".into()),
            ..object.clone()
        };
        assert_eq!(bucket_of(&renamed), bucket);
        // Without a UID: its namespace and name.
        let new = ObjectMeta {
            uid: None,
            ..object
        };
        assert_eq!(bucket_of(&new), bucket_of_key("default/a"));
    }

    #[test]
    fn buckets_spread_uids_evenly() {
        // UIDs are random (version 4) UUIDs: FNV-1a's top bits spread those evenly (not
        // sequential keys, which is one reason the bucket is the UID's and not the name's).
        let uuid = |i: u64| {
            let (a, b) = (fmix64(i), fmix64(!i));
            format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xfff,
                0x8000 | (b >> 48) & 0x3fff,
                b & 0xffff_ffff_ffff
            )
        };
        let mut counts = [0u32; BUCKETS as usize];
        for i in 0..64_000 {
            counts[usize::from(bucket_of_key(&uuid(i)))] += 1;
        }
        // 1,000 expected per bucket.
        assert!(
            counts.iter().all(|&c| (850..1150).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn every_bucket_has_one_owner_and_shares_are_as_even_as_can_be() {
        for n in 1..=12 {
            let members = members(n);
            let owners = owners(&members);
            let share = u32::from(BUCKETS) / n as u32;
            let mut masks = 0u64;
            let mut shares = Vec::new();
            for member in &members {
                let mask = assigned(member, members.iter().map(String::as_str));
                assert_eq!(masks & mask, 0, "a bucket with two owners");
                masks |= mask;
                let share = mask.count_ones();
                assert_eq!(owners.iter().filter(|o| *o == member).count() as u32, share);
                shares.push(share);
            }
            assert_eq!(masks, u64::MAX, "every bucket owned");
            // Plain rendezvous hashing gave 23 of 64 to one member of four: here 16 each.
            assert!(
                shares.iter().all(|s| [share, share + 1].contains(s)),
                "{n} members, {share} each or one more: {shares:?}"
            );
        }
        assert!(assignment(std::iter::empty()).is_empty());
        // A member named twice counts once.
        let twice = ["a", "b", "a"];
        assert_eq!(assignment(twice), assignment(["a", "b"]));
        assert_eq!(assigned("a", twice).count_ones(), 32);
    }

    #[test]
    fn the_assignment_does_not_depend_on_the_order_members_are_seen_in() {
        let members = members(5);
        let mut reversed = members.clone();
        reversed.reverse();
        assert_eq!(owners(&members), owners(&reversed));
    }

    #[test]
    fn adding_a_member_moves_about_one_in_n_buckets_most_of_them_to_it() {
        let (mut moved_total, mut to_others_total) = (0, 0);
        for n in 1..=9 {
            let before = members(n);
            let mut after = before.clone();
            let new = format!("manager-new-{n}");
            after.push(new.clone());
            let (old, new_owners) = (owners(&before), owners(&after));
            let moved: Vec<_> = (0..BUCKETS as usize)
                .filter(|&b| old[b] != new_owners[b])
                .collect();
            let to_new = moved.iter().filter(|&&b| new_owners[b] == new).count();
            // The new member gets its share; a bucket moves between the others only as their
            // shares shrink.
            let share = usize::from(BUCKETS) / (n + 1);
            assert!(
                [share, share + 1].contains(&to_new),
                "{n}: {to_new} to the new member"
            );
            let to_others = moved.len() - to_new;
            assert!(
                to_others <= share / 2 + 2,
                "{n}: {to_others} moved between the others"
            );
            // And removing it again moves them back: nothing else.
            assert_eq!(owners(&before), old);
            moved_total += moved.len();
            to_others_total += to_others;
        }
        // Over all nine additions, 64 * (1/2 + ... + 1/10) ≈ 120 buckets had to move.
        assert!((110..160).contains(&moved_total), "{moved_total}");
        assert!(
            to_others_total <= 30,
            "{to_others_total} moved between the others"
        );
    }

    #[test]
    fn a_bucket_is_acted_on_only_once_no_one_else_claims_it() {
        let mut table = Table::default();
        let wanted = 0b1011;
        // The first round claims them; they are not acted on yet.
        let claims = table.plan(wanted);
        assert_eq!(claims, wanted);
        assert_eq!(table.active(), 0);
        assert!(!table.begin(0));
        // The list after the write shows bucket 1 claimed by another live member.
        assert_eq!(table.confirm(claims, 0b0010), 0b1001);
        assert_eq!(table.active(), 0b1001);
        assert!(table.begin(0));
        table.end(0);
        assert!(!table.begin(1), "still the other member's");
        // The other member drained it and no longer claims it.
        let claims = table.plan(wanted);
        assert_eq!(claims, wanted);
        assert_eq!(table.confirm(claims, 0), 0b0010);
        assert_eq!(table.active(), wanted);
        // A claim that was never confirmed is dropped at once when no longer wanted.
        let mut table = Table::default();
        let claims = table.plan(0b1);
        table.confirm(claims, 0b1);
        assert_eq!(table.plan(0), 0);
    }

    #[test]
    fn a_bucket_given_up_stays_claimed_until_its_reconciles_end() {
        let mut table = Table::default();
        let claims = table.plan(0b11);
        table.confirm(claims, 0);
        assert!(table.begin(1));
        assert!(table.begin(1));
        // Bucket 1 is assigned elsewhere now: it drains, and admits nothing new.
        assert_eq!(table.plan(0b01), 0b11, "claimed while reconciles run");
        assert!(!table.begin(1));
        assert_eq!(table.active(), 0b01);
        table.end(1);
        assert_eq!(table.plan(0b01), 0b11);
        table.end(1);
        // The renewal without it is the acknowledgement the new owner waits for.
        assert_eq!(table.plan(0b01), 0b01);
        assert!(!table.begin(1));
        // Assigned back while draining: active again (it was claimed throughout).
        let mut table = Table::default();
        let claims = table.plan(0b1);
        table.confirm(claims, 0);
        assert!(table.begin(0));
        table.plan(0);
        assert_eq!(table.plan(0b1), 0b1);
        assert!(table.begin(0));
    }

    #[test]
    fn a_lost_lease_stops_every_bucket_and_leaving_every_new_reconcile() {
        let mut table = Table::default();
        let claims = table.plan(u64::MAX);
        table.confirm(claims, 0);
        assert!(table.begin(5));
        table.leave();
        assert!(!table.begin(6));
        // No round claims anything again; the bucket in flight stays claimed until it ends.
        assert_eq!(table.plan(u64::MAX), 1 << 5);
        assert!(!table.begin(6));
        assert_eq!(table.in_flight(), 1);
        assert_eq!(
            table.claims(),
            1 << 5,
            "only the bucket with a reconcile in flight"
        );
        table.lose();
        assert_eq!((table.claims(), table.active()), (0, 0));
        // Nothing is ever admitted again, whatever a round would plan.
        let claims = table.plan(u64::MAX);
        table.confirm(claims, 0);
        assert!(!table.begin(5));
    }

    #[test]
    fn a_replica_that_stops_acting_keeps_its_claims_and_acts_again_only_once_confirmed() {
        let mut table = Table::default();
        let claims = table.plan(0b111);
        table.confirm(claims, 0);
        assert!(table.begin(0));
        // Bucket 2 is assigned elsewhere: it drains.
        assert_eq!(table.plan(0b011), 0b111);
        // The renew deadline passes: nothing is acted on, every claim stays (the caches too).
        table.suspend();
        assert_eq!(table.active(), 0);
        assert!(!table.begin(1));
        assert_eq!(table.claims(), 0b111);
        // A draining bucket assigned back is not active again at the next plan, as it would
        // be had it stayed claimed and renewed all along.
        assert_eq!(table.plan(0b111), 0b111);
        assert_eq!(table.active(), 0);
        // Bucket 0, whose reconcile was in flight when it stopped, is no longer assigned: it
        // stays claimed until that reconcile is gone.
        assert_eq!(table.plan(0b110), 0b111);
        table.end(0);
        assert_eq!(table.plan(0b110), 0b110);
        // Renewed again: another member took bucket 1 meanwhile (it judged this replica's
        // Lease expired), so only bucket 2 becomes active.
        assert_eq!(table.confirm(0b110, 0b010), 0b100);
        assert!(!table.begin(1));
        assert!(table.begin(2));
    }

    /// The delete of a departed replica's Lease is conditional: a replica that came back and
    /// renewed its Lease after a member listed it keeps it (on the real control plane).
    #[tokio::test]
    async fn a_departed_replicas_lease_is_deleted_only_as_it_was_listed() {
        use kube::api::{Patch, PatchParams, PostParams};
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture");
        let Some(env) = memop_test::TestEnv::real_for(&fixture).await else {
            return;
        };
        let leases: Api<LeaseObject> = Api::namespaced(env.admin.clone(), &env.namespace);
        let name = "ring-shard-gone".to_string();
        let lease = serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": { "holderIdentity": "gone", "leaseDurationSeconds": 15 },
        }))
        .unwrap();
        let created = leases.create(&PostParams::default(), &lease).await.unwrap();
        let listed = created.metadata.resource_version.unwrap();
        // The replica renews it after the member listed it, before the member's delete.
        let renew = Patch::Merge(json!({ "metadata": { "annotations": { "renewed": "yes" } } }));
        let renewed = leases
            .patch(&name, &PatchParams::default(), &renew)
            .await
            .unwrap();

        delete_departed(leases.clone(), name.clone(), listed).await;
        assert!(
            leases.get_opt(&name).await.unwrap().is_some(),
            "a Lease renewed since it was listed was deleted"
        );
        let current = renewed.metadata.resource_version.unwrap();
        delete_departed(leases.clone(), name.clone(), current).await;
        assert!(leases.get_opt(&name).await.unwrap().is_none());
    }
}
