//! Sharded replicas (`--sharding`, `manager::sharding`, docs/sharding.md) on the real control
//! plane (skipped without `KUBEBUILDER_ASSETS`, a failure with `ENVTEST_REQUIRED=1`). Each
//! replica runs in this process with a client of its own, authenticated as the operator's
//! ServiceAccount (the RBAC of `tests/fixture/config/rbac`), whose every request its
//! [`RequestLog`] records: the audit log of that replica. Their controller stamps each labelled
//! ConfigMap with the version of its data it saw and who saw it, and records when it wrote.
//!
//! The invariants of docs/sharding.md, each checked here on those logs and records:
//! no object written by two replicas in one window; a killed replica's objects taken over within
//! the lease duration plus a round and a reconcile; a new replica taking its share of the
//! objects, and every replica acting on its share of the bounded-load assignment, an old one
//! that only gave buckets up listing nothing; a replica whose Lease requests fail stopping
//! before its objects are taken over; a bucket acted on only once every cache of its new owner
//! holds its objects.
//!
//! The Leases last 4 s here (renew deadline 3 s, a round every 500 ms) instead of client-go's
//! 15 s, 10 s and 2 s, which remain the manager's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Operator;
use crate::controller::{Builder, Owned, Reconciler, Report, Result, Store};
use crate::manager::Shared;
use crate::manager::sharding::{BUCKETS, Config, Shard, Timings, assigned, assignment, bucket_of};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use memop_test::{Backend, RequestLog, TestEnv, Verb, eventually};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const OPERATOR: Operator = Operator {
    name: "test-operator",
    domain: "example.com",
};
/// The ring: `--leader-election-id` (each test has a namespace of its own for its Leases).
const RING: &str = "test-operator.example.com";
/// The label of the ConfigMaps the replicas reconcile.
const SELECTOR: &str = "example.com/sharded=true";
/// The version of its data a ConfigMap holds (`data.v`), and what the controller stamps:
/// the version it saw, and which replica saw it.
const SEEN: &str = "example.com/seen";
const BY: &str = "example.com/by";
/// The label of the ConfigMaps the primary ones own (one each, by a controller
/// ownerReference), which each replica caches as a controller caches its operands.
const OWNED: &str = "example.com/owned=true";
/// How many ConfigMaps each test makes.
const OBJECTS: usize = 48;
const TIMINGS: Timings = Timings {
    lease_duration: Duration::from_secs(4),
    renew_deadline: Duration::from_secs(3),
    retry_period: Duration::from_millis(500),
};
/// How long a test waits for what the replicas do in the background.
const WAIT: Duration = Duration::from_secs(60);
/// One test at a time: each runs three or four replicas with short deadlines on a shared
/// machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A write of the controller: which object, at which version, and when it was sent and answered.
#[derive(Clone, Debug)]
struct Write {
    object: String,
    sent: Instant,
    done: Instant,
}

/// The controller of a replica: stamps [`SEEN`] and [`BY`] on each ConfigMap whose data's
/// version it has not seen, after [`Stamp::pause`] (a reconcile that takes its time, so that
/// reconciles are in flight when buckets move).
struct Stamp {
    client: Client,
    identity: String,
    pause: Arc<Mutex<Duration>>,
    writes: Arc<Mutex<Vec<Write>>>,
    reconciles: Arc<Mutex<Vec<Write>>>,
}

/// Records a reconcile's span when it ends, or is dropped midway.
struct Span<'a> {
    object: String,
    start: Instant,
    into: &'a Mutex<Vec<Write>>,
}

impl Drop for Span<'_> {
    fn drop(&mut self) {
        self.into.lock().unwrap().push(Write {
            object: std::mem::take(&mut self.object),
            sent: self.start,
            done: Instant::now(),
        });
    }
}

impl Reconciler for Stamp {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, object: &ConfigMap, _: &mut Report) -> Result<Action> {
        let _span = Span {
            object: object.name_any(),
            start: Instant::now(),
            into: &self.reconciles,
        };
        let version = version(object);
        if object.annotations().get(SEEN) == Some(&version) {
            return Ok(Action::await_change());
        }
        let pause = *self.pause.lock().unwrap();
        tokio::time::sleep(pause).await;
        let api: Api<ConfigMap> =
            Api::namespaced(self.client.clone(), &object.namespace().unwrap());
        let patch = json!({ "metadata": { "annotations": { SEEN: version, BY: self.identity } } });
        let sent = Instant::now();
        api.patch(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
        self.writes.lock().unwrap().push(Write {
            object: object.name_any(),
            sent,
            done: Instant::now(),
        });
        Ok(Action::await_change())
    }
}

fn version(object: &ConfigMap) -> String {
    let data = object.data.as_ref();
    data.and_then(|d| d.get("v")).cloned().unwrap_or_default()
}

/// A replica: its share, its controller, its audit log and its controller's writes.
struct Replica {
    identity: String,
    shard: Shard,
    log: RequestLog,
    writes: Arc<Mutex<Vec<Write>>>,
    /// The span of every reconcile its shard let through.
    reconciles: Arc<Mutex<Vec<Write>>>,
    pause: Arc<Mutex<Duration>>,
    /// Its controller's cache of the primary ConfigMaps.
    store: Store<ConfigMap>,
    /// Its cache of the owned ConfigMaps.
    owned: Owned<ConfigMap>,
    controller: JoinHandle<anyhow::Result<()>>,
}

impl Replica {
    async fn start(env: &TestEnv, identity: &str) -> Self {
        Self::start_logged(env, identity, RequestLog::default()).await
    }

    /// Starts one whose requests go through `log`, faults already set on it included.
    async fn start_logged(env: &TestEnv, identity: &str, log: RequestLog) -> Self {
        let client = client(env, &log).await;
        let config =
            Config::new(&OPERATOR, RING, Some(&env.namespace), identity).with_timings(TIMINGS);
        let shard = Shard::start(client.clone(), config);
        let shared = Shared::new(&OPERATOR, client.clone(), Some(env.namespace.clone()))
            .with_shard(shard.clone());
        let (writes, reconciles, pause) = (Arc::default(), Arc::default(), Arc::default());
        let stamp = Stamp {
            client,
            identity: identity.to_string(),
            pause: Arc::clone(&pause),
            writes: Arc::clone(&writes),
            reconciles: Arc::clone(&reconciles),
        };
        let controller = Builder::new("configmaps", &shared)
            .watching(watcher::Config::default().labels(SELECTOR))
            .build(stamp);
        let api = Api::namespaced(shared.client().clone(), &env.namespace);
        let owned = Owned::watch(
            api,
            watcher::Config::default().labels(OWNED),
            &shared,
            "owned",
        );
        Self {
            store: controller.store(),
            owned,
            identity: identity.to_string(),
            shard,
            log,
            writes,
            reconciles,
            pause,
            controller: tokio::spawn(controller.run()),
        }
    }

    /// The ConfigMaps this replica wrote since its log was last cleared (its audit log).
    fn written(&self) -> BTreeSet<String> {
        (self.log.requests().into_iter())
            .filter(|r| r.verb.is_write() && r.resource == "configmaps")
            .filter(|r| r.injected_failure.is_none())
            .filter_map(|r| r.name)
            .collect()
    }

    /// Makes each of its writes wait `pause` first.
    fn pause(&self, pause: Duration) {
        *self.pause.lock().unwrap() = pause;
    }

    /// Stops it as a killed process would stop: its Lease is left as it was.
    fn kill(&self) {
        self.shard.abandon();
        self.controller.abort();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A client of the operator's ServiceAccount whose requests `log` records.
async fn client(env: &TestEnv, log: &RequestLog) -> Client {
    let Backend::Real { kubeconfig, .. } = &env.backend else {
        unreachable!("TestEnv::real_for is the real control plane")
    };
    let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(log)
        .build()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture")
}

fn name(i: usize) -> String {
    format!("object-{i:02}")
}

/// Makes the [`OBJECTS`] ConfigMaps, at version `v`.
async fn create_objects(env: &TestEnv, v: u32) {
    let api = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let (key, value) = SELECTOR.split_once('=').unwrap();
    for i in 0..OBJECTS {
        let object = json!({
            "metadata": { "name": name(i), "labels": { key: value } },
            "data": { "v": v.to_string() },
        });
        let object = serde_json::from_value(object).unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
}

/// Makes a ConfigMap owned by each of the [`OBJECTS`], `owned-<its name>`, with a controller
/// ownerReference to it.
async fn create_owned(env: &TestEnv) {
    let api = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let (key, value) = OWNED.split_once('=').unwrap();
    for owner in objects(env).await {
        let object = json!({
            "metadata": {
                "name": format!("owned-{}", owner.name_any()),
                "labels": { key: value },
                "ownerReferences": [{
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner.name_any(),
                    "uid": owner.uid().unwrap(),
                    "controller": true,
                }],
            },
        });
        let object = serde_json::from_value(object).unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
}

/// Waits until each replica's caches hold exactly the objects `owners` gives it, and the
/// objects those own: its claimed buckets' (settled, the same as its active ones), no other.
async fn cached_by_owner(env: &TestEnv, replicas: &[&Replica], owners: &BTreeMap<String, String>) {
    let holds = |replica: &Replica| {
        let mine = owned_by(owners, &replica.identity);
        let cached: BTreeSet<String> = (replica.store.state().iter())
            .map(|o| o.name_any())
            .collect();
        let owned = (mine.iter())
            .filter(|o| (replica.owned).contains(&env.namespace, &format!("owned-{o}")));
        cached == mine.iter().cloned().collect()
            && replica.owned.len() == mine.len()
            && owned.count() == mine.len()
    };
    let outcome = tokio::time::timeout(WAIT, async {
        while !replicas.iter().all(|r| holds(r)) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    for replica in replicas {
        println!(
            "{} caches {} objects and {} owned ones; its share is {} of {OBJECTS}",
            replica.identity,
            replica.store.len(),
            replica.owned.len(),
            owned_by(owners, &replica.identity).len(),
        );
    }
    assert!(
        outcome.is_ok(),
        "a replica caches objects of others' buckets, or misses its own"
    );
}

/// Sets the data of the named ConfigMaps to version `v`.
async fn touch(env: &TestEnv, names: impl IntoIterator<Item = &String>, v: u32) {
    let api = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let patch = Patch::Merge(json!({ "data": { "v": v.to_string() } }));
    for name in names {
        api.patch(name, &PatchParams::default(), &patch)
            .await
            .unwrap();
    }
}

async fn objects(env: &TestEnv) -> Vec<ConfigMap> {
    let api = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let list = api.list(&ListParams::default().labels(SELECTOR)).await;
    list.unwrap().items
}

/// Waits until every object says it was seen at version `v`.
async fn converged(env: &TestEnv, v: u32) {
    let v = v.to_string();
    eventually(
        &format!("every object seen at version {v}"),
        WAIT,
        || async {
            let objects = objects(env).await;
            objects.len() == OBJECTS
                && objects
                    .iter()
                    .all(|o| o.annotations().get(SEEN) == Some(&v))
        },
    )
    .await;
}

/// Waits until the replicas all see each other and every bucket is active on the one the ring
/// assigns it to.
async fn settled(replicas: &[&Replica]) {
    let identities: Vec<&str> = replicas.iter().map(|r| r.identity.as_str()).collect();
    eventually("the ring settled", WAIT, || async {
        replicas.iter().all(|r| {
            let members = r.shard.members();
            members.len() == identities.len()
                && r.shard.active() == assigned(&r.identity, identities.iter().copied())
        })
    })
    .await;
}

/// Checks, every few milliseconds until it is dropped, that no bucket is active on two
/// replicas at once (with the API server's round trips between one replica's drain and
/// another's start, two reads microseconds apart cannot catch a handover midway).
struct Overlaps(JoinHandle<()>);

impl Overlaps {
    fn watch(shards: Vec<Shard>) -> Self {
        Self(tokio::spawn(async move {
            loop {
                let mut seen = 0u64;
                for shard in &shards {
                    let active = shard.active();
                    assert_eq!(
                        seen & active,
                        0,
                        "buckets active on two replicas at once, {} among them",
                        shard.identity()
                    );
                    seen |= active;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }))
    }

    /// Fails the test if an overlap was seen.
    async fn check(self) {
        self.0.abort();
        match self.0.await {
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            _ => {}
        }
    }
}

/// Checks that no object was reconciled by two replicas at overlapping times: that a bucket's
/// new owner started only after the old one's reconciles there had ended (the drain).
fn no_overlapping_reconciles(replicas: &[&Replica]) {
    let mut spans: BTreeMap<String, Vec<(Instant, Instant, &str)>> = BTreeMap::new();
    for replica in replicas {
        for span in replica.reconciles.lock().unwrap().iter() {
            let entry = spans.entry(span.object.clone()).or_default();
            entry.push((span.sent, span.done, replica.identity.as_str()));
        }
    }
    let mut handovers = 0;
    for (object, mut spans) in spans {
        spans.sort();
        for pair in spans.windows(2) {
            let ((_, end, first), (start, _, second)) = (pair[0], pair[1]);
            if first != second {
                handovers += 1;
                assert!(
                    end <= start,
                    "{object} reconciled by {first} until {:?} after {second} started",
                    end - start
                );
            }
        }
    }
    println!("{handovers} handovers of an object between replicas, none overlapping");
}

/// Every object created in version 1, then shards a, b and c started, settled and converged.
async fn three_converged(env: &TestEnv) -> [Replica; 3] {
    create_objects(env, 1).await;
    let a = Replica::start(env, "shard-a").await;
    let b = Replica::start(env, "shard-b").await;
    let c = Replica::start(env, "shard-c").await;
    settled(&[&a, &b, &c]).await;
    converged(env, 1).await;
    [a, b, c]
}

/// The objects `owners` gives to `shard`.
fn owned_by(owners: &BTreeMap<String, String>, shard: &str) -> Vec<String> {
    owners
        .iter()
        .filter(|(_, owner)| *owner == shard)
        .map(|(object, _)| object.clone())
        .collect()
}

/// Who each object belongs to among `members`, by its UID.
async fn owners(env: &TestEnv, members: &[&str]) -> BTreeMap<String, String> {
    let objects = objects(env).await;
    let owner = assignment(members.iter().copied());
    objects
        .iter()
        .map(|o| {
            (
                o.name_any(),
                owner[usize::from(bucket_of(o.meta()))].to_string(),
            )
        })
        .collect()
}

/// The replicas here run with the Lease rules the runtime declares for them, no more: a verb
/// they use and `sharding::RULES` leaves out fails these tests with a 403, as it would fail a
/// project's replicas under its `config/sharding/role.yaml` (which memop's tests hold to the
/// same rules).
#[test]
fn the_replicas_role_is_what_the_runtime_declares() {
    let role =
        std::fs::read_to_string(fixture().join("config/rbac/leader_election_role.yaml")).unwrap();
    let declared = crate::rbac::role_yaml(
        crate::rbac::Scope::Namespace,
        &[crate::manager::sharding::RULES],
    );
    let rules = &declared[declared.find("rules:").unwrap()..];
    assert!(
        role.ends_with(rules),
        "the fixture's role should end with:\n{rules}"
    );
}

#[tokio::test]
async fn three_shards_converge_with_no_object_written_by_two() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    // The objects are there before the replicas: the first to join takes every bucket, and
    // hands most over as the others join.
    create_objects(&env, 1).await;
    let a = Replica::start(&env, "shard-a").await;
    let b = Replica::start(&env, "shard-b").await;
    let c = Replica::start(&env, "shard-c").await;
    for replica in [&a, &b, &c] {
        replica.pause(Duration::from_millis(300));
    }
    let overlaps = Overlaps::watch(vec![a.shard.clone(), b.shard.clone(), c.shard.clone()]);
    settled(&[&a, &b, &c]).await;
    converged(&env, 1).await;

    // A window in which every object changes: each is written by its owner, and only by it.
    for replica in [&a, &b, &c] {
        replica.log.clear();
    }
    let all: Vec<String> = (0..OBJECTS).map(name).collect();
    touch(&env, &all, 2).await;
    converged(&env, 2).await;
    let owners = owners(&env, &["shard-a", "shard-b", "shard-c"]).await;
    let mut written = BTreeSet::new();
    for replica in [&a, &b, &c] {
        let mine = replica.written();
        println!("{} wrote {} objects", replica.identity, mine.len());
        assert!(!mine.is_empty(), "{} wrote nothing", replica.identity);
        for object in &mine {
            assert!(
                written.insert(object.clone()),
                "{object} written by two replicas"
            );
            assert_eq!(owners[object], replica.identity, "{object}");
        }
    }
    assert_eq!(written.len(), OBJECTS, "every object written once");
    for object in objects(&env).await {
        assert_eq!(
            object.annotations().get(BY),
            Some(&owners[&object.name_any()])
        );
    }
    no_overlapping_reconciles(&[&a, &b, &c]);
    overlaps.check().await;
}

#[tokio::test]
async fn each_shard_caches_only_the_objects_of_its_buckets_and_takes_a_killed_ones_in() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    create_objects(&env, 1).await;
    create_owned(&env).await;
    let a = Replica::start(&env, "shard-a").await;
    let b = Replica::start(&env, "shard-b").await;
    let c = Replica::start(&env, "shard-c").await;
    settled(&[&a, &b, &c]).await;
    converged(&env, 1).await;
    let before = owners(&env, &["shard-a", "shard-b", "shard-c"]).await;
    cached_by_owner(&env, &[&a, &b, &c], &before).await;

    // B is killed: once its Lease has expired, its buckets are claimed by the others, whose
    // caches list them before acting on them.
    b.kill();
    let orphans = owned_by(&before, "shard-b");
    touch(&env, &orphans, 2).await;
    settled(&[&a, &c]).await;
    let after = owners(&env, &["shard-a", "shard-c"]).await;
    cached_by_owner(&env, &[&a, &c], &after).await;
    // Every object of B's was reconciled by its new owner from its cache.
    eventually("the killed replica's objects taken over", WAIT, || async {
        (objects(&env).await.iter())
            .filter(|o| orphans.contains(&o.name_any()))
            .all(|o| o.annotations().get(SEEN).map(String::as_str) == Some("2"))
    })
    .await;
}

#[tokio::test]
async fn a_claimed_bucket_is_acted_on_only_once_every_cache_holds_its_objects() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    create_objects(&env, 1).await;
    create_owned(&env).await;
    let a = Replica::start(&env, "shard-a").await;
    settled(&[&a]).await;
    converged(&env, 1).await;
    let buckets: BTreeMap<String, u16> = (objects(&env).await.iter())
        .map(|o| (o.name_any(), bucket_of(o.meta())))
        .collect();

    // B's lists of ConfigMaps come back late, those that fill its caches with the buckets it
    // claims among them: A gives the buckets up long before they are in.
    const LATE: Duration = Duration::from_secs(5);
    let log = RequestLog::default();
    for _ in 0..16 {
        log.delay_next(Verb::List, "configmaps", LATE);
    }
    let started = Instant::now();
    let b = Replica::start_logged(&env, "shard-b", log).await;
    let sampled = async {
        loop {
            let active = b.shard.active();
            let cached: BTreeSet<String> = (b.store.state().iter()).map(|o| o.name_any()).collect();
            for (object, bucket) in &buckets {
                let holds = cached.contains(object)
                    && (b.owned).contains(&env.namespace, &format!("owned-{object}"));
                assert!(
                    active & (1 << bucket) == 0 || holds,
                    "{object}'s bucket is active on shard-b before its caches hold it"
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let both = [&a, &b];
    tokio::select! {
        () = settled(&both) => {}
        () = sampled => {}
    }
    let took = started.elapsed();
    println!("shard-b acted on its buckets {took:?} after it started");
    assert!(
        took >= LATE,
        "active after {took:?}, before its lists were in"
    );
    let after = owners(&env, &["shard-a", "shard-b"]).await;
    cached_by_owner(&env, &[&a, &b], &after).await;
}

#[tokio::test]
async fn a_killed_shards_objects_are_taken_over_within_the_lease_duration_and_a_reconcile() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let [a, b, c] = three_converged(&env).await;
    let before = owners(&env, &["shard-a", "shard-b", "shard-c"]).await;
    let orphans = owned_by(&before, "shard-b");
    assert!(!orphans.is_empty());

    b.kill();
    let killed = Instant::now();
    for replica in [&a, &c] {
        replica.log.clear();
    }
    // Its objects change right away: nobody acts on them until its Lease has expired.
    touch(&env, &orphans, 2).await;
    eventually("the killed replica's objects taken over", WAIT, || async {
        let objects = objects(&env).await;
        let taken = |o: &&ConfigMap| orphans.contains(&o.name_any());
        objects
            .iter()
            .filter(taken)
            .all(|o| o.annotations().get(SEEN).map(String::as_str) == Some("2"))
    })
    .await;
    let took = killed.elapsed();
    println!(
        "took over {} objects {took:?} after the kill",
        orphans.len()
    );
    // Its Lease expires for the others at most a round after it was last renewed plus the lease
    // duration; they claim at their next round, and act once that claim is written and listed.
    let bound = TIMINGS.lease_duration + 3 * TIMINGS.retry_period + Duration::from_secs(2);
    assert!(took <= bound, "took {took:?}, more than {bound:?}");
    assert!(
        took >= TIMINGS.lease_duration - TIMINGS.retry_period,
        "taken over before the Lease expired: {took:?}"
    );
    // Each went to its owner among the survivors; the survivors' own objects did not move
    // (in this ring the assignment moves none between them).
    let after = owners(&env, &["shard-a", "shard-c"]).await;
    for replica in [&a, &c] {
        for object in replica.written() {
            assert!(
                orphans.contains(&object),
                "{object} was not the killed one's"
            );
            assert_eq!(after[&object], replica.identity);
        }
    }
    for (object, owner) in &before {
        if owner != "shard-b" {
            assert_eq!(&after[object], owner, "{object} moved");
        }
    }
}

/// A fourth replica takes a quarter of the buckets from the others, and the others' shares
/// shrink to a quarter each as the bounded-load assignment says (in this ring, three buckets
/// move between them too); one that only gives buckets up drops those objects from its caches
/// without listing anything again.
#[tokio::test]
async fn adding_a_shard_moves_about_one_in_n_objects_and_every_share_to_a_quarter() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let [a, b, c] = three_converged(&env).await;
    create_owned(&env).await;
    let before = owners(&env, &["shard-a", "shard-b", "shard-c"]).await;
    cached_by_owner(&env, &[&a, &b, &c], &before).await;
    let masks: Vec<u64> = [&a, &b, &c].iter().map(|r| r.shard.active()).collect();
    for replica in [&a, &b, &c] {
        replica.log.clear();
    }

    let overlaps = Overlaps::watch(vec![a.shard.clone(), b.shard.clone(), c.shard.clone()]);
    // Reconciles are in flight as the fourth replica joins: every object changes, and each
    // reconcile takes a second.
    for replica in [&a, &b, &c] {
        replica.pause(Duration::from_secs(1));
    }
    touch(&env, &(0..OBJECTS).map(name).collect::<Vec<_>>(), 2).await;
    let d = Replica::start(&env, "shard-d").await;
    d.pause(Duration::from_secs(1));
    settled(&[&a, &b, &c, &d]).await;
    converged(&env, 2).await;
    no_overlapping_reconciles(&[&a, &b, &c, &d]);
    for replica in [&a, &b, &c, &d] {
        replica.pause(Duration::ZERO);
    }
    // Each holds its share of the ring of four: a quarter of the buckets.
    let ring = ["shard-a", "shard-b", "shard-c", "shard-d"];
    for replica in [&a, &b, &c, &d] {
        let active = replica.shard.active();
        assert_eq!(
            active,
            assigned(&replica.identity, ring),
            "{}",
            replica.identity
        );
        assert_eq!(
            active.count_ones(),
            u32::from(BUCKETS) / 4,
            "{}",
            replica.identity
        );
    }
    // The others hold exactly their smaller shares; one that only gave buckets up listed
    // nothing to get there.
    let four = owners(&env, &ring).await;
    cached_by_owner(&env, &[&a, &b, &c, &d], &four).await;
    let only_gave_up: Vec<_> = ([&a, &b, &c].into_iter().zip(masks))
        .filter(|(replica, mask)| replica.shard.active() & !mask == 0)
        .map(|(replica, _)| replica)
        .collect();
    assert!(
        !only_gave_up.is_empty(),
        "every old member took a bucket in"
    );
    for replica in only_gave_up {
        let requests = replica.log.requests();
        let count = |verb: Verb| {
            (requests.iter())
                .filter(|r| r.verb == verb && r.resource == "configmaps")
                .count()
        };
        println!(
            "{} gave buckets up with {} lists and {} watches of ConfigMaps",
            replica.identity,
            count(Verb::List),
            count(Verb::Watch)
        );
        assert_eq!(count(Verb::List), 0, "{} listed again", replica.identity);
    }

    for replica in [&a, &b, &c, &d] {
        replica.log.clear();
    }
    let all: Vec<String> = (0..OBJECTS).map(name).collect();
    touch(&env, &all, 3).await;
    converged(&env, 3).await;
    let after = owners(&env, &["shard-a", "shard-b", "shard-c", "shard-d"]).await;
    let moved: Vec<&String> = (after.keys()).filter(|o| after[*o] != before[*o]).collect();
    println!("{} of {OBJECTS} objects moved", moved.len());
    let fraction = moved.len() as f64 / OBJECTS as f64;
    assert!(
        (0.08..=0.45).contains(&fraction),
        "{fraction}, about 1/4 expected"
    );
    // Every object was written by its owner in the ring of four, once.
    let mut written = BTreeSet::new();
    for replica in [&a, &b, &c, &d] {
        for object in replica.written() {
            assert!(written.insert(object.clone()), "{object} written by two");
            assert_eq!(after[&object], replica.identity, "{object}");
        }
    }
    assert_eq!(written.len(), OBJECTS);
    overlaps.check().await;
}

#[tokio::test]
async fn a_partitioned_shard_stops_before_its_objects_are_taken() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let [a, b, c] = three_converged(&env).await;
    let before = owners(&env, &["shard-a", "shard-b", "shard-c"]).await;
    let cut_off = owned_by(&before, "shard-b");
    assert!(!cut_off.is_empty());

    // B can no longer reach its Lease, nor the others' (as behind a partition), but its object
    // writes still go through: if it went on acting, it would write.
    for verb in [Verb::Get, Verb::List, Verb::Create, Verb::Patch] {
        b.log.fail_next(verb, "leases", 503, usize::MAX);
    }
    let partitioned = Instant::now();
    // Its objects change all along, so that whoever acts on them writes.
    let changing = {
        let (admin, namespace, cut_off) =
            (env.admin.clone(), env.namespace.clone(), cut_off.clone());
        tokio::spawn(async move {
            let api = Api::<ConfigMap>::namespaced(admin, &namespace);
            for v in 2.. {
                let patch = Patch::Merge(json!({ "data": { "v": v.to_string() } }));
                for name in &cut_off {
                    api.patch(name, &PatchParams::default(), &patch)
                        .await
                        .unwrap();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let stopping = {
        let shard = b.shard.clone();
        tokio::spawn(async move {
            shard.lost().await;
            Instant::now()
        })
    };
    let taken_by = |replica: &Replica| {
        let writes = replica.writes.lock().unwrap().clone();
        writes
            .into_iter()
            .filter(|w| cut_off.contains(&w.object))
            .map(|w| w.sent)
            .min()
    };
    eventually("its objects taken over", WAIT, || async {
        taken_by(&a).is_some() || taken_by(&c).is_some()
    })
    .await;
    // Let the others write its objects a while.
    tokio::time::sleep(Duration::from_secs(2)).await;
    changing.abort();
    let taken = [taken_by(&a), taken_by(&c)].into_iter().flatten().min();
    let taken = taken.unwrap();
    let last_of_b = (b.writes.lock().unwrap().iter())
        .map(|w| w.done)
        .max()
        .unwrap();
    // B's audit log: its object writes all went through (only its Lease requests failed).
    assert!(
        (b.log.requests().iter())
            .filter(|r| r.resource == "configmaps" && r.verb.is_write())
            .all(|r| r.injected_failure.is_none())
    );
    assert!(last_of_b < taken, "B wrote after its objects were taken");
    assert!(stopping.is_finished(), "B still acts");
    let stopped = stopping.await.unwrap();
    assert_eq!(b.shard.active(), 0);
    assert!(
        stopped - partitioned <= TIMINGS.renew_deadline + Duration::from_secs(1),
        "stopped {:?} after the partition",
        stopped - partitioned
    );
    println!(
        "partitioned at 0; B's last write done at {:?}, B stopped at {:?}, first takeover write sent at {:?}",
        last_of_b - partitioned,
        stopped - partitioned,
        taken - partitioned
    );
    assert!(
        stopped < taken,
        "B stopped only after its objects were taken"
    );
    assert!(
        taken - partitioned >= TIMINGS.lease_duration - TIMINGS.retry_period,
        "taken over before B's Lease could have expired"
    );
    // Nothing written by B after it stopped, in its audit log.
    let b_writes_after: Vec<_> = (b.writes.lock().unwrap().iter())
        .filter(|w| w.done > stopped)
        .cloned()
        .collect();
    assert!(b_writes_after.is_empty(), "{b_writes_after:?}");
    // And the others took exactly B's objects.
    let after = owners(&env, &["shard-a", "shard-c"]).await;
    for replica in [&a, &c] {
        let writes = replica.writes.lock().unwrap().clone();
        for write in writes.iter().filter(|w| w.sent > partitioned) {
            assert!(cut_off.contains(&write.object), "{}", write.object);
            assert_eq!(after[&write.object], replica.identity);
        }
    }

    // The partition heals: B, which never left the ring, renews its Lease again and acts on
    // its buckets once the others have drained them back, never while they act on them.
    assert!(
        !b.shard.is_lost(),
        "B left the ring: its manager would exit"
    );
    let overlaps = Overlaps::watch(vec![a.shard.clone(), b.shard.clone(), c.shard.clone()]);
    b.log.heal();
    let healed = Instant::now();
    settled(&[&a, &b, &c]).await;
    println!(
        "B acted on its buckets again {:?} after the partition healed",
        healed.elapsed()
    );
    touch(&env, &cut_off, 1_000).await;
    eventually("B reconciles its objects again", WAIT, || async {
        (objects(&env).await.iter())
            .filter(|o| cut_off.contains(&o.name_any()))
            .all(|o| o.annotations().get(BY).map(String::as_str) == Some("shard-b"))
    })
    .await;
    overlaps.check().await;
}

#[tokio::test]
async fn the_lease_of_a_replica_gone_for_good_is_deleted_after_ten_lease_durations() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let a = Replica::start(&env, "shard-a").await;
    let b = Replica::start(&env, "shard-b").await;
    settled(&[&a, &b]).await;
    let leases = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let lease_of = |replica: &Replica| format!("{RING}-shard-{}", replica.identity);
    let (lease_a, lease_b) = (lease_of(&a), lease_of(&b));

    b.kill();
    let killed = Instant::now();
    // A's clock starts when it last saw B's Lease change: at most a round after the kill.
    let departed = TIMINGS.lease_duration * 10;
    eventually("B's Lease deleted", departed + WAIT, || async {
        leases.get_opt(&lease_b).await.unwrap().is_none()
    })
    .await;
    let took = killed.elapsed();
    println!("B's Lease deleted {took:?} after the kill");
    assert!(
        took >= departed,
        "deleted after {took:?}, before {departed:?}"
    );
    assert!(
        took <= departed + 3 * TIMINGS.retry_period + Duration::from_secs(2),
        "deleted after {took:?}"
    );
    // The live member's stays.
    assert!(leases.get_opt(&lease_a).await.unwrap().is_some());
}

/// Two processes of one replica name (a StatefulSet pod force-deleted from a partitioned node
/// and its replacement, or a `POD_NAME` fixed in a patch) share one Lease name: only the one
/// that holds it acts, the other waits until it has expired, then takes every bucket over.
#[tokio::test]
async fn two_processes_of_one_name_never_act_on_the_same_bucket() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    create_objects(&env, 1).await;
    let first = Replica::start(&env, "shard-a").await;
    settled(&[&first]).await;
    converged(&env, 1).await;
    let twin = Replica::start(&env, "shard-a").await;
    let overlaps = Overlaps::watch(vec![first.shard.clone(), twin.shard.clone()]);
    // Three lease durations in which both run, the first renewing: the twin acts on nothing.
    tokio::time::sleep(TIMINGS.lease_duration * 3).await;
    assert_eq!(twin.shard.active(), 0, "the twin acts");
    assert_eq!(first.shard.active(), u64::MAX);
    assert!(!first.shard.is_lost() && !twin.shard.is_lost());
    let leases = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let lease = leases.get(&format!("{RING}-shard-shard-a")).await.unwrap();
    let holder = lease.spec.unwrap().holder_identity.unwrap();
    assert_eq!(holder, first.shard.identity());
    assert!(holder.starts_with("shard-a_"), "{holder}");

    // The first is killed: the twin takes the Lease once it has expired, and every bucket.
    first.kill();
    let killed = Instant::now();
    eventually("the twin took every bucket", WAIT, || async {
        twin.shard.active() == u64::MAX
    })
    .await;
    let took = killed.elapsed();
    println!("the twin took over {took:?} after the first was killed");
    assert!(
        took >= TIMINGS.lease_duration - TIMINGS.retry_period,
        "{took:?}"
    );
    assert_eq!(twin.shard.members(), ["shard-a"]);
    touch(&env, &(0..OBJECTS).map(name).collect::<Vec<_>>(), 2).await;
    converged(&env, 2).await;
    overlaps.check().await;
}

/// An API server outage longer than the renew deadline (every request of every replica fails,
/// for two lease durations): every shard stops acting by its renew deadline, but none leaves
/// the ring (its manager would exit, and all would restart and relist together as the API
/// server comes back); each keeps its caches, and they resume with the buckets they held once
/// their requests go through again.
#[tokio::test]
async fn an_api_server_outage_stops_every_shard_and_each_resumes_with_its_buckets() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let [a, b, c] = three_converged(&env).await;
    let replicas = [&a, &b, &c];
    let masks: Vec<u64> = replicas.iter().map(|r| r.shard.active()).collect();
    let cached: Vec<usize> = replicas.iter().map(|r| r.store.len()).collect();
    let overlaps = Overlaps::watch(vec![a.shard.clone(), b.shard.clone(), c.shard.clone()]);
    const VERBS: [Verb; 7] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
    ];
    for replica in replicas {
        for verb in VERBS {
            replica.log.fail_next(verb, "*", 503, usize::MAX);
        }
    }
    let outage = Instant::now();
    eventually("every shard stopped acting", WAIT, || async {
        replicas.iter().all(|r| r.shard.active() == 0)
    })
    .await;
    let stopped = outage.elapsed();
    assert!(
        stopped <= TIMINGS.renew_deadline + TIMINGS.retry_period + Duration::from_secs(1),
        "still acting {stopped:?} into the outage"
    );
    tokio::time::sleep_until(outage + TIMINGS.lease_duration * 2).await;
    for (replica, cached) in replicas.iter().zip(&cached) {
        assert!(
            !replica.shard.is_lost(),
            "{} left the ring in the outage: its manager exits",
            replica.identity
        );
        assert!(replica.shard.is_stopped(), "{}", replica.identity);
        assert_eq!(replica.store.len(), *cached, "{}", replica.identity);
    }

    for replica in replicas {
        replica.log.clear();
        replica.log.heal();
    }
    let healed = Instant::now();
    settled(&replicas).await;
    let resumed = healed.elapsed();
    println!(
        "every shard stopped {stopped:?} into an outage of {:?}, and all acted again {resumed:?} after it",
        TIMINGS.lease_duration * 2
    );
    for (replica, mask) in replicas.iter().zip(masks) {
        assert_eq!(replica.shard.active(), mask, "{}", replica.identity);
        assert!(!replica.shard.is_stopped());
    }
    assert!(
        resumed <= TIMINGS.retry_period * 6 + Duration::from_secs(2),
        "resumed {resumed:?} after the outage"
    );
    touch(&env, &(0..OBJECTS).map(name).collect::<Vec<_>>(), 2).await;
    converged(&env, 2).await;
    for replica in replicas {
        let lists = (replica.log.requests().iter())
            .filter(|r| r.verb == Verb::List && r.resource == "configmaps")
            .count();
        println!(
            "{} listed ConfigMaps {lists} times after the outage",
            replica.identity
        );
        // Its claims did not change: its caches did not start over.
        assert_eq!(lists, 0, "{} relisted", replica.identity);
    }
    overlaps.check().await;
}
