//! The objects a controller owns (a Deployment per custom resource, say), read from a cache
//! instead of the API server, with what the controller last applied to each: what
//! controller-runtime's cache and `Owns()` are to a kubebuilder controller.
//!
//! [`Owned::watch`] keeps a cache of the owned kind, limited to the objects a label selector
//! picks, stripped of `managedFields` (the largest part of an object, which no reconcile
//! reads), and held as compact JSON packed against the first object cached (LZ4 with that as
//! its dictionary, [`Packer`]): a Deployment of the Memcached example takes about 280 B so,
//! key included, against 2.2 kB as compact JSON and 8.5 kB as a `k8s_openapi` struct (most of
//! whose fields are empty but take their room). A reconcile reads its object back into the
//! struct (tens of microseconds). The controller's trigger is fed by that same watch ([`Owned::owned_by`]):
//! one watch of the kind per controller, as with kube's `Controller::owns`. A reconcile asks
//! [`Owned::observe`] how the object it wants compares with the cache, and tells
//! [`Owned::applied`] what its apply returned.
//!
//! An object this process applied (or found as wanted) is then kept as a projection: what
//! the runtime reads of it (names, labels, owners, versions, memop's annotations, its size
//! and update strategy, its whole status) and the digest of the fields applied to it, hashed
//! under the shape of the object applied, as controller-runtime's cache transforms keep what a
//! controller reads. A Deployment of the Memcached example takes about 240 B so, packed,
//! instead of 280 whole (and its projection, packed, holds its status at little cost). The
//! digest tells drift of any field applied; only then is the object read whole from the API
//! server (once) to compare. A projection drops annotations other than memop's
//! and every other field of the spec: a reconciler that reads more of an object it applies
//! reads it from the object it built, or from the API server. An object created and never
//! compared after (`Operand::create`: a Job, whose status and annotations a controller reads)
//! is kept whole.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, watch};

use serde_json::Value;

use super::cache::{Key, Packer, compact};
use super::drift::{Fnv1a, digest, fields_in_sync, fnv1a, same_hash, shape};
use super::queue::{Priority, Request};
use super::{APPLIED_HASH, WatchScope, claims_fingerprint, resource_version as version};
use crate::manager::health::Readiness;
use crate::manager::sharding::{BUCKETS, Holding, Shard};
use crate::shared::Shared;

/// How long the cache may lag behind an apply of this controller before it is believed again
/// anyway. A watch event comes within milliseconds; this bounds the wait when one never comes
/// (the object went away while the watch was reconnecting).
const PENDING_FOR: Duration = Duration::from_secs(10);
/// Applies in one second from which on the controller is changing objects in bulk (a fleet
/// resized or created at once); see [`Owned::in_burst`]. A sharded replica, which applies its
/// share of a fleet's changes, counts with its share of this rate ([`burst_rate`]).
const BURST_RATE: u32 = 50;
/// How long a burst may hold reports back: a fleet that keeps changing still gets its
/// reports, interleaved with its applies, after this. Long enough for the resize of a large
/// fleet on a loaded API server (10,000 objects took 160 s of patches at load 25, 30,000 about
/// 300 s on a quiet one): a shorter hold sends thousands of reports in the middle of it, and
/// they slow the applies down.
const BURST_HOLD: Duration = Duration::from_secs(600);
/// Seconds in a row below half the burst rate that end a burst: a loaded API server stalls
/// for a second now and then, and a burst that ended at each stall would release every report
/// it held into the middle of the applies.
const BURST_QUIET: u32 = 3;

/// What an owned cache tells of every event of its watch ([`Owned::watch_telling`]).
pub(crate) type Every<K> = Arc<dyn Fn(&watcher::Event<K>) + Send + Sync>;

/// A cache of the objects of kind `K` a controller owns; dropping it stops its watch.
pub struct Owned<K: Resource<DynamicType = ()> + Clone + 'static> {
    cache: Arc<Cache<K>>,
    /// What changed and the controller has not taken yet, once a controller asked
    /// ([`Self::owned_by`]).
    changes: Arc<Mutex<Option<Arc<Changes>>>>,
    /// Per object: what this process last applied (until the object is deleted).
    applied: Arc<Mutex<HashMap<Key, Applied>>>,
    /// The shapes of the objects applied ([`shape`]), each kept once, by its hash: the objects
    /// of an operand share a few.
    shapes: Mutex<HashMap<u64, Arc<Value>>>,
    /// How many applies this process made lately.
    burst: Arc<Mutex<Burst>>,
    /// The objects whose owners' reports wait for the burst to end, and the task that tells
    /// their owners' controller when it does (see [`Owned::hold`]).
    held: Arc<Mutex<HashSet<Key>>>,
    release: Mutex<Option<tokio::task::AbortHandle>>,
    watch: tokio::task::AbortHandle,
    /// This replica's share of the objects, with `--sharding`.
    shard: Option<Shard>,
}

/// What the watch keeps, shared with the task that runs it.
struct Cache<K: Resource<DynamicType = ()> + Clone + 'static> {
    /// Each object as packed compact JSON, without `managedFields`, whole or projected (shared,
    /// so that a reader copies it out of the lock and decodes it after).
    objects: RwLock<HashMap<Key, Entry>>,
    /// What packs and unpacks them.
    packer: Packer,
    /// The highest resourceVersion among the events the cache has applied.
    seen: AtomicU64,
    /// Whether the first list is in (then `objects` holds everything).
    listed: watch::Sender<bool>,
    /// The objects of each controller, once [`Owned::children`] asked (built then from
    /// `objects`, and kept by the watch after): a cache that is never asked spends nothing on
    /// it.
    by_owner: Mutex<Option<OwnerIndex>>,
    kind: PhantomData<fn() -> K>,
}

/// A cached object: whole, or, once this process applied it or found it as wanted, its
/// projection ([`reduce`]) and the digest of the fields applied to it.
#[derive(Clone)]
struct Entry {
    /// The object, or its projection, as packed compact JSON ([`Packer`]).
    packed: Arc<[u8]>,
    /// Projected: the [`shape`] of the object last applied to it, and the [`digest`] of the
    /// object's fields at the paths of that shape.
    digest: Option<(Arc<Value>, u64)>,
}

impl Entry {
    fn whole<K: Serialize>(packer: &Packer, object: &K) -> Self {
        Self {
            packed: packer.pack(&compact(object)).into(),
            digest: None,
        }
    }

    /// `object` projected ([`reduce`]), with the digest of its fields at the paths of
    /// `shape`; `None` when the projection does not read back as a `K` (a kind of which it
    /// leaves out a required number): such a kind is cached whole.
    fn projected<K: Serialize + DeserializeOwned>(
        packer: &Packer,
        object: &K,
        shape: &Arc<Value>,
    ) -> Option<Self> {
        let value = serde_json::to_value(object).ok()?;
        let digest = digest(&value, shape);
        Self::reduced::<K>(packer, value, digest, shape)
    }

    /// The object `value` (JSON) projected, its `digest` under `shape` taken already.
    fn reduced<K: DeserializeOwned>(
        packer: &Packer,
        mut value: Value,
        digest: u64,
        shape: &Arc<Value>,
    ) -> Option<Self> {
        reduce(&mut value);
        let json = serde_json::to_vec(&value).ok()?;
        serde_json::from_slice::<K>(&json).ok()?;
        Some(Self {
            packed: packer.pack(&json).into(),
            digest: Some((shape.clone(), digest)),
        })
    }
}

/// What a projection keeps of an object's metadata: what the runtime reads (names, owners,
/// versions), the labels (a reconciler selects children by them, and they are small), and of
/// its annotations those of memop ([`APPLIED_HASH`]).
const KEPT_METADATA: &[&str] = &[
    "name",
    "labels",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "finalizers",
    "ownerReferences",
];

/// What a projection keeps of an object's spec: what [`Workload`](crate::operand::Workload)
/// reads of a Deployment's, StatefulSet's or DaemonSet's (its size, a StatefulSet's partition).
const KEPT_SPEC: &[&str] = &["replicas", "updateStrategy"];

/// Reduces `object` (JSON) to what the runtime reads of an object it applies: `apiVersion`,
/// `kind`, the [`KEPT_METADATA`], memop's annotations, the [`KEPT_SPEC`] and the whole
/// `status`. Every other field is left out, or, where it may be required to read the object
/// back (an object, a list or a string: a Deployment's `selector` and `template`), emptied.
/// Drift of the fields applied is told by the digest kept beside it.
fn reduce(object: &mut Value) {
    let Some(object) = object.as_object_mut() else {
        return;
    };
    object.retain(|field, value| match field.as_str() {
        "apiVersion" | "kind" | "status" => true,
        "metadata" => {
            if let Some(metadata) = value.as_object_mut() {
                let annotations = metadata.remove("annotations");
                metadata.retain(|field, _| KEPT_METADATA.contains(&field.as_str()));
                if let Some(Value::Object(mut annotations)) = annotations {
                    annotations.retain(|key, _| key.starts_with("memop.rs/"));
                    if !annotations.is_empty() {
                        metadata.insert("annotations".into(), annotations.into());
                    }
                }
            }
            true
        }
        "spec" => {
            if let Some(spec) = value.as_object_mut() {
                spec.retain(|field, value| KEPT_SPEC.contains(&field.as_str()) || emptied(value));
            }
            true
        }
        _ => emptied(value),
    });
}

/// Empties a value a projection leaves out; whether it keeps its place (empty): an object, a
/// list or a string may be a required field, a number or a boolean is left out.
fn emptied(value: &mut Value) -> bool {
    match value {
        Value::Object(object) => object.clear(),
        Value::Array(list) => list.clear(),
        Value::String(text) => text.clear(),
        _ => return false,
    }
    true
}

/// The cached objects by the UID of their controller (the owner reference with
/// `controller: true`): controller-runtime's field index on `.metadata.controller`, which the
/// book's CronJob controller lists its Jobs by.
struct OwnerIndex {
    children: HashMap<String, HashSet<Key>>,
    controller: HashMap<Key, String>,
}

impl OwnerIndex {
    fn new() -> Self {
        Self {
            children: HashMap::new(),
            controller: HashMap::new(),
        }
    }

    /// Files `key` under the controller `metadata` names (if any), and nowhere else.
    fn set(&mut self, key: &Key, metadata: &ObjectMeta) {
        let controller = metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map(|r| &r.uid);
        if self.controller.get(key) == controller {
            return;
        }
        self.remove(key);
        if let Some(uid) = controller {
            self.children
                .entry(uid.clone())
                .or_default()
                .insert(key.clone());
            self.controller.insert(key.clone(), uid.clone());
        }
    }

    fn remove(&mut self, key: &Key) {
        let Some(uid) = self.controller.remove(key) else {
            return;
        };
        if let Some(children) = self.children.get_mut(&uid) {
            children.remove(key);
            if children.is_empty() {
                self.children.remove(&uid);
            }
        }
    }
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Cache<K> {
    /// Caches `object` (as the watch saw it) under `key`: projected under `shape`, the shape
    /// of what this process last applied to it, if it did, else whole.
    fn insert(&self, key: Key, object: &K, shape: Option<&Arc<Value>>)
    where
        K: Serialize + DeserializeOwned,
    {
        let entry = shape
            .and_then(|shape| Entry::projected(&self.packer, object, shape))
            .unwrap_or_else(|| Entry::whole(&self.packer, object));
        // The index follows the objects: it is looked at after they changed, so that one built
        // meanwhile ([`Owned::children`]) saw the change or is told of it here.
        self.objects
            .write()
            .expect("cache lock")
            .insert(key.clone(), entry);
        if let Some(index) = self.by_owner.lock().expect("index lock").as_mut() {
            index.set(&key, object.meta());
        }
    }

    /// Drops `key` from the cache.
    fn remove(&self, key: &Key) {
        self.objects.write().expect("cache lock").remove(key);
        if let Some(index) = self.by_owner.lock().expect("index lock").as_mut() {
            index.remove(key);
        }
    }
}

impl<K: Resource<DynamicType = ()> + Clone + DeserializeOwned + 'static> Cache<K> {
    /// The cached objects outside the buckets of `kept`: those of buckets a sharded replica
    /// gave up.
    fn outside(&self, kept: u64) -> Vec<K> {
        let objects = self.objects.read().expect("cache lock");
        let keys: Vec<Key> = (objects.iter())
            .filter(|(_, entry)| {
                self.packer.metadata(&entry.packed).is_some_and(|metadata| {
                    !super::cache::kept_in(kept, super::cache::owner_bucket(&metadata))
                })
            })
            .map(|(key, _)| key.clone())
            .collect();
        drop(objects);
        keys.iter()
            .filter_map(|key| self.object(key))
            .map(|object| object.as_ref().clone())
            .collect()
    }

    /// The resourceVersion of the cached object of `key`.
    fn version(&self, key: &Key) -> Option<String> {
        let json = self
            .objects
            .read()
            .expect("cache lock")
            .get(key)?
            .packed
            .clone();
        self.packer.version(&json)
    }

    /// The cached object of `key`, read back from its JSON (a projection, if it is one).
    fn object(&self, key: &Key) -> Option<Arc<K>> {
        self.entry(key).and_then(|(object, _)| object)
    }

    /// The cached object of `key`, read back, and its digest if it is a projection.
    #[allow(clippy::type_complexity)]
    fn entry(&self, key: &Key) -> Option<(Option<Arc<K>>, Option<(Arc<Value>, u64)>)> {
        let entry = self.objects.read().expect("cache lock").get(key)?.clone();
        let object = self.packer.read(key, &entry.packed).map(Arc::new);
        Some((object, entry.digest))
    }

    /// Caches `object` projected under `shape` in place of the entry of `key`, if that holds
    /// the same version of it: an object found as wanted, or applied, whose watch event came
    /// before this process knew the shape of what it applies to it. `value` is `object` as
    /// JSON, and `digest` its digest under `shape`, both taken already.
    fn project(&self, key: &Key, object: &K, value: Value, digest: u64, shape: &Arc<Value>) {
        let version = object.meta().resource_version.as_ref();
        if version.is_none() || self.version(key).as_ref() != version {
            return;
        }
        let Some(entry) = Entry::reduced::<K>(&self.packer, value, digest, shape) else {
            return;
        };
        let mut objects = self.objects.write().expect("cache lock");
        if let Some(cached) = objects.get_mut(key) {
            let same = self.packer.version(&cached.packed).as_ref() == version;
            if same {
                *cached = entry;
            }
        }
    }
}

/// What applies a watch's events to an owned cache, and tells its controller of them.
struct Follower<K: Resource<DynamicType = ()> + Clone + 'static> {
    cache: Arc<Cache<K>>,
    changes: Arc<Mutex<Option<Arc<Changes>>>>,
    applied: Arc<Mutex<HashMap<Key, Applied>>>,
    holding: Option<Holding>,
    readiness: Readiness,
    name: &'static str,
    /// A relist updates the cache in place (it is never held twice), remembering what it
    /// brought; at its end, what it did not bring goes: objects deleted while the watch was
    /// down, and those of buckets this replica gave up.
    relisted: HashSet<Key>,
}

impl<K> Follower<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + 'static,
{
    fn event(&mut self, event: &watcher::Event<K>) {
        let cache = &self.cache;
        // Whether the object is as listed, not changed: all of a first list; of a relist,
        // those the cache held at the same resourceVersion (the others changed while the watch
        // was down, or are new: changes, as `reflect` tells them apart for a controller's own
        // cache).
        let mut listed = false;
        let touched = match event {
            watcher::Event::Init => {
                self.relisted.clear();
                return;
            }
            watcher::Event::InitApply(object) => {
                let key = Key::of(object);
                let version = &object.meta().resource_version;
                listed = !*cache.listed.borrow()
                    || (version.is_some() && cache.version(&key) == *version);
                self.relisted.insert(key.clone());
                let shape = shape_of(&self.applied, &key);
                cache.insert(key, object, shape.as_ref());
                object
            }
            watcher::Event::InitDone => return self.listed(),
            watcher::Event::Apply(object) => {
                let key = Key::of(object);
                let shape = shape_of(&self.applied, &key);
                cache.insert(key, object, shape.as_ref());
                object
            }
            watcher::Event::Delete(object) => {
                let key = Key::of(object);
                cache.remove(&key);
                // What was applied to it is of no use any more, whoever deleted it (the
                // garbage collector after its owner, say).
                self.applied.lock().expect("applied lock").remove(&key);
                object
            }
        };
        if let Some(version) = version(touched) {
            cache.seen.fetch_max(version, Ordering::SeqCst);
        }
        // An object of a bucket given up leaves the cache without a word to the controller:
        // its owner is no longer this replica's to reconcile.
        let ours = self.holding.as_ref().is_none_or(|holding| {
            super::cache::owner_bucket(touched.meta()).is_some_and(|b| holding.keeps(b))
        });
        // Only the metadata: the controller maps it to its owner, nothing else.
        if ours && let Some(changes) = self.changes.lock().expect("changes lock").as_ref() {
            let priority = if listed {
                Priority::Low
            } else {
                Priority::Normal
            };
            changes.add(touched.meta(), priority);
        }
    }

    /// The end of a list: what it did not bring goes.
    fn listed(&mut self) {
        let cache = &self.cache;
        let relisted = std::mem::take(&mut self.relisted);
        let mut gone = Vec::new();
        (cache.objects.write().expect("cache lock")).retain(|key, _| {
            let kept = relisted.contains(key);
            if !kept {
                gone.push(key.clone());
            }
            kept
        });
        // What was applied to those is of no use any more, as on a delete. (Not what was
        // applied to objects made since the list: their events, and they, come next.)
        let mut applied = self.applied.lock().expect("applied lock");
        let mut index = cache.by_owner.lock().expect("index lock");
        for key in gone {
            applied.remove(&key);
            if let Some(index) = index.as_mut() {
                index.remove(&key);
            }
        }
        drop((applied, index));
        if let Some(holding) = &self.holding {
            holding.listed();
        }
        if !cache.listed.send_replace(true) {
            tracing::info!(cache = self.name, "cache synced");
            self.readiness.synced(self.name);
        }
    }
}

/// The changes of a cache that its controller has not taken yet, each object once with its
/// newest metadata, in the order they came. The watch adds to it and never waits: kube's
/// controller stops taking changes for a while after an error of its own watch (its trigger's
/// backoff), and a bounded channel would then stop the cache too; this holds at most one entry
/// per object instead.
struct Changes {
    queue: Mutex<Queue>,
    added: Notify,
}

/// The objects in the order they changed, and the newest owner references of each, with the
/// priority of its change.
type Queue = (VecDeque<Key>, HashMap<Key, (Vec<OwnerReference>, Priority)>);

/// The entries a drained [`Changes`] keeps room for: a relist or a resize queues an entry per
/// object for a moment, and a map keeps the capacity it grew to (at 30,000 objects, megabytes)
/// until told otherwise.
const CHANGES_KEPT_ROOM: usize = 64;

impl Changes {
    fn new() -> Self {
        Self {
            queue: Mutex::default(),
            added: Notify::new(),
        }
    }

    /// Tells the controller that the object of `metadata` changed (or was listed, at
    /// [`Priority::Low`]).
    fn add(&self, metadata: &ObjectMeta, priority: Priority) {
        let key = Key::new(
            metadata.namespace.as_deref(),
            metadata.name.as_deref().unwrap_or_default(),
        );
        // Only what the controller maps a change by (its owners), not the rest of the
        // metadata: a fleet changed at once queues an entry per object.
        let owners = metadata.owner_references.clone().unwrap_or_default();
        let mut queue = self.queue.lock().expect("changes lock");
        let (order, newest) = &mut *queue;
        let priority = match newest.get(&key) {
            Some((_, queued)) => priority.max(*queued),
            None => {
                order.push_back(key.clone());
                priority
            }
        };
        newest.insert(key, (owners, priority));
        drop(queue);
        self.added.notify_one();
    }

    /// The next change, once there is one: the object's namespace (`None`: cluster-scoped),
    /// its owner references and the change's priority.
    async fn next(&self) -> (Option<String>, Vec<OwnerReference>, Priority) {
        loop {
            {
                let mut queue = self.queue.lock().expect("changes lock");
                let (order, newest) = &mut *queue;
                while let Some(key) = order.pop_front() {
                    if let Some((owners, priority)) = newest.remove(&key) {
                        if order.is_empty() {
                            order.shrink_to(CHANGES_KEPT_ROOM);
                            newest.shrink_to(CHANGES_KEPT_ROOM);
                        }
                        return (key.namespace().map(str::to_owned), owners, priority);
                    }
                }
            }
            // A change added since the queue was empty left its permit: no wake-up is lost.
            self.added.notified().await;
        }
    }
}

/// What an apply of this process left on one object (or a comparison that found it as wanted).
struct Applied {
    /// The [`APPLIED_HASH`] of what was applied, hashed ([`hash_of`]).
    hash: Option<u64>,
    /// What the applied fields looked like right after: their [`digest`] (see [`in_sync`]).
    fingerprint: u64,
    /// The [`shape`] of what was applied, by which the watch keeps each new version of the
    /// object projected, with the digest of those fields; `None` for an object created and
    /// never compared after ([`Operand::create`](crate::operand::Operand::create): a Job),
    /// which the cache keeps whole.
    shape: Option<Arc<Value>>,
    /// The object's resourceVersion then, until the cache has seen it.
    version: Option<(u64, Instant)>,
}

/// How the object a reconcile wants compares with what the cache holds.
#[derive(Debug)]
pub(crate) enum Observed<K> {
    /// This process applied this very object a moment ago and the cache has not seen it yet:
    /// nothing to do until it has, and its watch event brings the next reconcile.
    Pending(Duration),
    /// It does not exist.
    Absent,
    /// It exists and differs from what is wanted (or belongs to someone else): the object
    /// whole.
    Differs(Arc<K>),
    /// The cache holds it projected, the fields applied to it as this process's last apply
    /// left them, but what is wanted changed (its [`APPLIED_HASH`]): the projection, to apply
    /// the new object over (or patch a new size alone).
    Rehashed(Arc<K>),
    /// The cache holds it projected, and one of the fields applied to it changed since (or
    /// the projection was taken under another shape): the projection; read the object whole
    /// and [`Owned::compare`] it.
    Changed(Arc<K>),
    /// It exists with every field as wanted: no apply needed.
    InSync(Arc<K>),
    /// It differs, but says (in [`APPLIED_FINGERPRINT`](super::APPLIED_FINGERPRINT)) that an
    /// admission webhook rewrote an apply of the object wanted into it: in sync if a dry run of
    /// that apply gives the same fields ([`Owned::verified`]), else to apply.
    Claimed(Arc<K>),
}

impl<K> Observed<K> {
    /// The object as it exists, if it does and was looked at.
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Differs(object)
            | Self::InSync(object)
            | Self::Claimed(object)
            | Self::Rehashed(object)
            | Self::Changed(object) => Some(object),
            Self::Pending(_) | Self::Absent => None,
        }
    }
}

impl<K> Owned<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync,
    K: 'static,
    K::Scope: WatchScope,
{
    /// Starts watching the objects of `api` that `config` selects (give it the label every
    /// owned object carries, so the cache holds those only). The watch runs until the `Owned`
    /// is dropped, and must run inside a Tokio runtime.
    ///
    /// The manager's readiness waits for its first list under `name` (as for a controller's
    /// own cache): until then `/readyz` says so, and a cache that never lists (the role does
    /// not allow listing the kind, say) stops the manager after its cache-sync timeout, saying
    /// which. After that the watch is kept an eye on as a controller's own is (see
    /// [`Builder`](super::Builder)): `/readyz` names it while it goes without an answer for longer than the
    /// silence limit, and `memop_watch_errors_total{watch="<name>"}` counts its errors.
    #[cfg(test)]
    pub(crate) fn watch(
        api: Api<K>,
        config: watcher::Config,
        shared: &Shared,
        name: &'static str,
    ) -> Self {
        Self::watch_telling(api, config, shared, name, None)
    }

    /// [`Self::watch`], telling `every` of each event of the watch as it comes, before a
    /// sharded replica leaves out the objects of other replicas' buckets: what the whole fleet
    /// of objects is doing (the rollouts under way, which every replica counts alike).
    pub(crate) fn watch_telling(
        api: Api<K>,
        config: watcher::Config,
        shared: &Shared,
        name: &'static str,
        every: Option<Every<K>>,
    ) -> Self {
        let cache = Arc::new(Cache {
            objects: RwLock::default(),
            packer: Packer::default(),
            seen: AtomicU64::new(0),
            listed: watch::Sender::new(false),
            by_owner: Mutex::default(),
            kind: PhantomData,
        });
        let changes: Arc<Mutex<Option<Arc<Changes>>>> = Arc::default();
        let (api, pulse) = super::watched(shared, name, api);
        let config = watcher::Config {
            bookmarks: true,
            ..config
        };
        // Sharded: only the objects whose controller is in a bucket this replica claims.
        let holding = shared.shard.as_ref().map(Shard::hold);
        let paged = super::cache::Paged::default();
        let watch = move || {
            let every = every.clone();
            super::cache::watch(api.clone(), config.clone(), paged.clone())
                .default_backoff()
                .inspect(move |event| {
                    if let (Some(every), Ok(event)) = (&every, event) {
                        every(event);
                    }
                })
                .boxed()
        };
        let cached = {
            let cache = cache.clone();
            move |kept: u64| cache.outside(kept)
        };
        let events =
            super::cache::follow(watch, holding.clone(), super::cache::owner_bucket, cached)
                .modify(super::cache::projection(false));
        let readiness = shared.readiness.clone();
        readiness.expect(name);
        let applied: Arc<Mutex<HashMap<Key, Applied>>> = Arc::default();
        let mut follower = Follower {
            cache: cache.clone(),
            changes: changes.clone(),
            applied: applied.clone(),
            holding,
            readiness,
            name,
            relisted: HashSet::new(),
        };
        let watch = tokio::spawn(async move {
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => follower.event(&event),
                    Err(err) => {
                        // The backoff retries; until then the cache stays as it was.
                        pulse.failed();
                        tracing::warn!(kind = %K::kind(&()), error = %err, "cannot list or watch; retrying");
                    }
                }
            }
        });
        Self {
            cache,
            changes,
            applied,
            shapes: Mutex::default(),
            burst: Arc::new(Mutex::new(Burst::new(BURST_RATE))),
            held: Arc::default(),
            release: Mutex::default(),
            watch: watch.abort_handle(),
            shard: shared.shard.clone(),
        }
    }

    /// The requests to reconcile the owner of kind `P` of every object that changes in this
    /// cache (deletions included), as kube's `Controller::owns` makes them, fed by the cache's
    /// own watch: at [`Priority::Low`] for an object as listed (by a relist, unchanged since
    /// the cache held it), [`Priority::Normal`] for a change. Only the last stream asked for
    /// here is told of changes.
    pub(crate) fn owned_by<P>(&self) -> impl Stream<Item = Request> + Send + 'static
    where
        P: Resource<DynamicType = ()> + 'static,
    {
        let changes = Arc::new(Changes::new());
        *self.changes.lock().expect("changes lock") = Some(changes.clone());
        futures::stream::unfold(changes, |changes| async move {
            let change = changes.next().await;
            Some((change, changes))
        })
        .flat_map(|(namespace, owners, priority)| {
            // As kube's `ObjectRef::from_owner_ref`: only the owners of kind `P`.
            let owners = owners.into_iter().filter(|owner| {
                owner.kind == P::kind(&()) && owner.api_version == P::api_version(&())
            });
            futures::stream::iter(
                owners.map(move |owner| (Key::new(namespace.as_deref(), &owner.name), priority)),
            )
        })
    }

    /// The cached object `name` in `namespace`, once the cache has listed them all.
    pub async fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.ready().await;
        self.cached(&Key::new(Some(namespace), name))
    }

    /// The cached objects that `owner` controls (whose owner reference with `controller: true`
    /// names its UID), once the cache has listed them all, in no particular order: what
    /// controller-runtime's `List(ctx, &children, client.MatchingFields{ownerKey: name})` gives
    /// over a cache indexed by owner, without a request to the API server. The index is built
    /// at the first call and kept by the watch after; an owner not yet created (no UID) has
    /// none.
    pub(crate) async fn children<P: Resource>(&self, owner: &P) -> Vec<Arc<K>> {
        self.ready().await;
        let Some(uid) = owner.meta().uid.as_deref() else {
            return Vec::new();
        };
        let keys: Vec<Key> = {
            let mut index = self.cache.by_owner.lock().expect("index lock");
            let index = index.get_or_insert_with(|| {
                let mut index = OwnerIndex::new();
                for (key, entry) in self.cache.objects.read().expect("cache lock").iter() {
                    if let Some(metadata) = self.cache.packer.metadata(&entry.packed) {
                        index.set(key, &metadata);
                    }
                }
                index
            });
            index
                .children
                .get(uid)
                .into_iter()
                .flatten()
                .cloned()
                .collect()
        };
        keys.iter().filter_map(|key| self.cached(key)).collect()
    }

    /// Waits until the cache has listed the objects once (at once after that).
    pub(crate) async fn ready(&self) {
        // The sender lives as long as `self`: waiting can only end with the list.
        let _ = self
            .cache
            .listed
            .subscribe()
            .wait_for(|listed| *listed)
            .await;
    }

    /// Whether the cache holds `name` in `namespace` (now, without waiting for its list).
    pub(crate) fn contains(&self, namespace: &str, name: &str) -> bool {
        let key = Key::new(Some(namespace), name);
        self.cache
            .objects
            .read()
            .expect("cache lock")
            .contains_key(&key)
    }

    /// How many objects the cache holds.
    #[cfg(test)]
    #[allow(clippy::len_without_is_empty)]
    pub(crate) fn len(&self) -> usize {
        self.cache.objects.read().expect("cache lock").len()
    }

    /// The cached object of `key`, read back from its JSON.
    fn cached(&self, key: &Key) -> Option<Arc<K>> {
        self.cache.object(key)
    }

    /// How `desired` compares with the cache. The cache holds what the label selector picks:
    /// an object of that name that someone else made is `Absent` here, and only an apply tells
    /// (an apply that would take it over should fail: say, a Deployment's selector cannot
    /// change, and an object has at most one controller).
    ///
    /// An object this process applied, or found as wanted, is cached projected: its fields as
    /// applied are told apart from what it last applied by their digest alone, and an object
    /// whose digest changed is [`Observed::Changed`], to read whole. `compares` is false for
    /// an object that is only created, never compared after ([`Operand::create`]): it stays
    /// whole in the cache.
    ///
    /// [`Operand::create`]: crate::operand::Operand::create
    pub(crate) async fn observe(&self, desired: &K, compares: bool) -> Observed<K> {
        self.ready().await;
        let key = Key::of(desired);
        // Only the record is read under the lock; decoding and comparing happen after, so that
        // the reconciles of other objects do not wait for this one's.
        let record = {
            let mut applied = self.applied.lock().expect("applied lock");
            let seen = self.cache.seen.load(Ordering::SeqCst);
            match applied.get_mut(&key) {
                None => None,
                Some(last) => {
                    if let Some((version, at)) = last.version {
                        let waited = at.elapsed();
                        if version <= seen || waited >= PENDING_FOR {
                            last.version = None;
                        } else if last.hash == hash_of(desired) {
                            return Observed::Pending(PENDING_FOR - waited);
                        }
                    }
                    Some((last.fingerprint, last.hash, last.shape.clone()))
                }
            }
        };
        let Some((Some(object), digest)) = self.cache.entry(&key) else {
            return Observed::Absent;
        };
        let Some((shape, digest)) = digest else {
            let fingerprint = record.map(|(fingerprint, ..)| fingerprint);
            return self.compared(desired, object, fingerprint, compares);
        };
        // As this process's last apply (or comparison) left it: the same fields applied, of
        // the same shape, and the same hash on it.
        let unchanged = record.is_some_and(|(fingerprint, hash, last)| {
            fingerprint == digest
                && hash == hash_of(object.as_ref())
                && last.is_some_and(|last| Arc::ptr_eq(&last, &shape))
        });
        match (unchanged, hash_of(object.as_ref()) == hash_of(desired)) {
            (true, true) => Observed::InSync(object),
            (true, false) => Observed::Rehashed(object),
            (false, _) => Observed::Changed(object),
        }
    }

    /// How `desired` compares with `object`, whole: cached whole, or read from the API server
    /// after [`Observed::Changed`]. An object found as wanted is recorded so, as after an
    /// apply ([`Self::verified`]), and cached projected from then on.
    pub(crate) fn compare(&self, desired: &K, object: Arc<K>) -> Observed<K> {
        let key = Key::of(desired);
        let fingerprint = (self.applied.lock().expect("applied lock"))
            .get(&key)
            .map(|last| last.fingerprint);
        self.compared(desired, object, fingerprint, true)
    }

    fn compared(
        &self,
        desired: &K,
        object: Arc<K>,
        fingerprint: Option<u64>,
        compares: bool,
    ) -> Observed<K> {
        // Each object as JSON once, for the comparison and, in sync, for the record.
        let json = same_hash(object.as_ref(), desired).then(|| {
            let observed = serde_json::to_value(object.as_ref()).unwrap_or_default();
            let wanted = serde_json::to_value(desired).unwrap_or_default();
            (observed, wanted)
        });
        if let Some((observed, wanted)) =
            json.filter(|(observed, wanted)| fields_in_sync(observed, wanted, fingerprint))
        {
            if compares {
                let key = Key::of(desired);
                let json = (observed, wanted);
                self.record_json(key, desired, object.as_ref(), json, None, true);
            }
            Observed::InSync(object)
        } else if fingerprint.is_none() && claims_fingerprint(object.as_ref(), desired) {
            Observed::Claimed(object)
        } else {
            Observed::Differs(object)
        }
    }

    /// Records that applying `desired` returned `result`, so that [`Self::observe`] waits for
    /// the cache to see it and then compares with how it came back; `compares` as for
    /// [`Self::observe`].
    pub(crate) fn applied(&self, desired: &K, result: &K, compares: bool) {
        let key = Key::of(desired);
        let version = version(result).map(|version| (version, Instant::now()));
        self.record(key, desired, result, version, compares);
        let mut burst = self.burst.lock().expect("burst lock");
        if let Some(shard) = &self.shard {
            burst.rate = burst_rate(shard.active());
        }
        burst.count(Instant::now());
    }

    /// Records that `observed` has the fields of `desired` as wanted: compared in full, or a
    /// dry run of an apply of `desired` gave them (a claimed rewrite checked:
    /// [`Observed::Claimed`]): from now on the object is in sync while they stay so, as after
    /// an apply of this process.
    pub(crate) fn verified(&self, desired: &K, observed: &K) {
        self.record(Key::of(desired), desired, observed, None, true);
    }

    /// Records what `desired` left on `object` (their digest under its shape, when `compares`),
    /// and caches the object projected under that shape, if the cache holds that version.
    fn record(
        &self,
        key: Key,
        desired: &K,
        object: &K,
        version: Option<(u64, Instant)>,
        compares: bool,
    ) {
        let observed = serde_json::to_value(object).unwrap_or_default();
        let wanted = serde_json::to_value(desired).unwrap_or_default();
        self.record_json(key, desired, object, (observed, wanted), version, compares);
    }

    /// [`Self::record`], with `object` and `desired` as JSON already (`json`).
    fn record_json(
        &self,
        key: Key,
        desired: &K,
        object: &K,
        (observed, wanted): (Value, Value),
        version: Option<(u64, Instant)>,
        compares: bool,
    ) {
        let shape = compares.then(|| {
            let shape = shape(&wanted);
            let mut hasher = Fnv1a::default();
            // Writing to a hasher cannot fail.
            let _ = serde_json::to_writer(&mut hasher, &shape);
            let mut shapes = self.shapes.lock().expect("shapes lock");
            shapes
                .entry(hasher.0)
                .or_insert_with(|| Arc::new(shape))
                .clone()
        });
        // The same as under the shape of `wanted` ([`digest`]).
        let fingerprint = digest(&observed, &wanted);
        let record = Applied {
            hash: hash_of(desired),
            fingerprint,
            shape: shape.clone(),
            version,
        };
        (self.applied.lock().expect("applied lock")).insert(key.clone(), record);
        if let Some(shape) = &shape {
            (self.cache).project(&key, object, observed, fingerprint, shape);
        }
    }

    /// Holds back the report of `object`'s owner until this process's burst of applies ends
    /// ([`Self::in_burst`]): then the owner's controller ([`Self::owned_by`]) is told, as for a
    /// change of the object, and reports at once, instead of asking again and again meanwhile.
    pub(crate) fn hold(&self, object: &K) {
        self.held.lock().expect("held lock").insert(Key::of(object));
        let mut release = self.release.lock().expect("release lock");
        if release.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let (held, burst, changes, cache) = (
            self.held.clone(),
            self.burst.clone(),
            self.changes.clone(),
            self.cache.clone(),
        );
        let task = tokio::spawn(async move {
            while burst.lock().expect("burst lock").active(Instant::now()) {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let keys: Vec<_> = held.lock().expect("held lock").drain().collect();
            let Some(changes) = changes.lock().expect("changes lock").clone() else {
                return;
            };
            for key in keys {
                if let Some(object) = cache.object(&key) {
                    changes.add(object.meta(), Priority::Normal);
                }
            }
        });
        *release = Some(task.abort_handle());
    }

    /// Whether this process is applying objects in bulk: at least 50 in the last second (a
    /// sharded replica: its share of 50), as when a fleet is resized or created at once. A
    /// reconcile then holds back a report that can wait (a status that says what was applied,
    /// not a failure), so that the API server, which sets the pace, spends itself on the
    /// changes users asked for; kubebuilder's controllers, whose requeues go through a
    /// 10-per-second limiter, report after their applies too. A burst ends after three
    /// seconds in a row below half that rate, and holds reports back for ten minutes at most.
    pub fn in_burst(&self) -> bool {
        self.burst
            .lock()
            .expect("burst lock")
            .active(Instant::now())
    }
}

/// The burst rate of a replica whose active buckets are `active` (a mask): its share of
/// [`BURST_RATE`], so that a fleet changed at once is a burst for each of its shards as it is
/// for one replica (three shards resizing 30,000 objects apply about 40 a second each).
fn burst_rate(active: u64) -> u32 {
    (BURST_RATE * active.count_ones())
        .div_ceil(u32::from(BUCKETS))
        .max(1)
}

/// Applies per second, counted in whole seconds.
#[derive(Debug)]
struct Burst {
    /// The applies in a second that make a burst.
    rate: u32,
    /// Where the current second began, and the applies in it.
    second: Option<(Instant, u32)>,
    /// The complete seconds in a row, up to the current one, with fewer than half `rate`.
    slow: u32,
    /// Since when a second had `rate` applies or more, while no [`BURST_QUIET`] seconds in a
    /// row since had fewer than half that.
    since: Option<Instant>,
}

impl Burst {
    fn new(rate: u32) -> Self {
        Self {
            rate,
            second: None,
            slow: 0,
            since: None,
        }
    }

    /// Counts an apply at `now`.
    fn count(&mut self, now: Instant) {
        self.roll(now);
        let (_, count) = self.second.get_or_insert((now, 0));
        *count += 1;
        if *count >= self.rate {
            self.since.get_or_insert(now);
        }
    }

    /// Whether `now` is in a burst that began less than [`BURST_HOLD`] ago.
    fn active(&mut self, now: Instant) -> bool {
        self.roll(now);
        self.since
            .is_some_and(|since| now.duration_since(since) < BURST_HOLD)
    }

    /// Moves the window on to the second `now` is in.
    fn roll(&mut self, now: Instant) {
        let Some((start, count)) = self.second else {
            return;
        };
        let elapsed = now.duration_since(start).as_secs();
        if elapsed == 0 {
            return;
        }
        // The second that just ended had `count` applies, the `elapsed - 1` after it none.
        let quiet = u32::try_from(elapsed - 1).unwrap_or(u32::MAX);
        self.slow = if count < self.rate / 2 {
            self.slow.saturating_add(quiet).saturating_add(1)
        } else {
            quiet
        };
        self.second = Some((start + Duration::from_secs(elapsed), 0));
        // A burst that only slowed down (the API server's flow control makes the rate wobble,
        // and a loaded one stalls) goes on; otherwise every slower second would end it and
        // release its reports into the applies, and the next busy one start a new one.
        if self.slow >= BURST_QUIET {
            self.since = None;
        }
    }
}

/// The [`APPLIED_HASH`] of `object`, hashed: what [`Applied`] keeps of it (8 bytes).
fn hash_of<K: Resource>(object: &K) -> Option<u64> {
    let hash = object.meta().annotations.as_ref()?.get(APPLIED_HASH)?;
    Some(fnv1a(hash.as_bytes()))
}

/// The shape of what this process last applied to `key` (see [`Applied::shape`]).
fn shape_of(applied: &Mutex<HashMap<Key, Applied>>, key: &Key) -> Option<Arc<Value>> {
    let applied = applied.lock().expect("applied lock");
    applied.get(key)?.shape.clone()
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Drop for Owned<K> {
    fn drop(&mut self) {
        self.watch.abort();
        if let Some(release) = self.release.lock().expect("release lock").take() {
            release.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` applies spread evenly over the second from `start`.
    fn applies(burst: &mut Burst, start: Instant, n: u32) {
        for i in 0..n {
            burst.count(start + Duration::from_secs(1) * i / n);
        }
    }

    #[test]
    fn a_sharded_replica_bursts_at_its_share_of_the_rate() {
        let buckets = |n: u32| (1u64 << n) - 1;
        assert_eq!(burst_rate(u64::MAX), BURST_RATE);
        assert_eq!(burst_rate(buckets(21)), 17);
        assert_eq!(burst_rate(0), 1);
        // One of three shards resizing a fleet (30,000 objects in about 250 s applies about 40
        // a second): a burst for it, as the whole resize is for one replica.
        let start = Instant::now();
        let mut burst = Burst::new(burst_rate(buckets(21)));
        applies(&mut burst, start, 40);
        assert!(burst.active(start + Duration::from_millis(999)));
        assert!(burst.active(start + Duration::from_millis(1500)));
    }

    #[test]
    fn a_burst_is_fifty_applies_in_a_second() {
        let start = Instant::now();
        let mut burst = Burst::new(BURST_RATE);
        applies(&mut burst, start, BURST_RATE - 1);
        assert!(!burst.active(start + Duration::from_millis(999)));
        burst.count(start + Duration::from_millis(999));
        assert!(burst.active(start + Duration::from_millis(999)));
        // Quiet seconds after it end it once there are three of them in a row.
        assert!(burst.active(start + Duration::from_millis(1500)));
        assert!(burst.active(start + Duration::from_millis(3500)));
        assert!(!burst.active(start + Duration::from_millis(4500)));
    }

    /// The resize of 10,000 objects on a loaded API server: 160 s of about 60 applies a
    /// second, with a stall of a second or two now and then. It is one burst from start to
    /// end, so that no report goes out in the middle of it (which slowed the resize down to
    /// 0.81 status writes per object and 2.4 times kubebuilder's time, when a burst ended at
    /// the first slow second or after a minute).
    #[test]
    fn a_long_resize_on_a_loaded_api_server_is_one_burst() {
        let start = Instant::now();
        let mut burst = Burst::new(BURST_RATE);
        for second in 0..160 {
            let now = start + Duration::from_secs(second);
            let stalled = second % 20 == 7 || (second % 40 == 8);
            applies(&mut burst, now, if stalled { 5 } else { 60 });
            assert!(
                burst.active(now + Duration::from_millis(999)),
                "second {second}"
            );
        }
        // Once the applies stop, it ends within a few seconds, and the reports go out.
        let after = start + Duration::from_secs(160);
        assert!(burst.active(after + Duration::from_millis(1500)));
        assert!(!burst.active(after + Duration::from_millis(3500)));
    }

    #[test]
    fn a_few_applies_now_and_then_are_no_burst() {
        let start = Instant::now();
        let mut burst = Burst::new(BURST_RATE);
        for second in 0..10 {
            applies(&mut burst, start + Duration::from_secs(second), 10);
            assert!(!burst.active(start + Duration::from_secs(second)));
        }
    }

    #[test]
    fn a_burst_holds_reports_back_for_ten_minutes_at_most() {
        let start = Instant::now();
        let mut burst = Burst::new(BURST_RATE);
        for second in 0..700 {
            let now = start + Duration::from_secs(second);
            applies(&mut burst, now, BURST_RATE * 2);
            assert_eq!(
                burst.active(now + Duration::from_millis(999)),
                second < 600,
                "second {second}"
            );
        }
        // A pause ends the burst; the next one holds reports back again.
        let later = start + Duration::from_secs(710);
        applies(&mut burst, later, BURST_RATE * 2);
        assert!(burst.active(later + Duration::from_millis(999)));
    }
}

/// What each structure of an owned cache costs per object, on the heap: a measurement, not a
/// check (docs/performance.md has the figures). Run it alone:
///
/// ```text
/// cargo test -p memop-runtime --release --lib heap_per_object -- --ignored --nocapture
/// ```
#[cfg(test)]
mod heap {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::runtime::reflector;

    #[global_allocator]
    static COUNTING_ALLOCATOR: memop_test::heap::Counting = memop_test::heap::Counting;

    /// How many objects: 10,000, or `MEMOP_HEAP_OBJECTS` (a map's table is sized in powers of
    /// two, so that its cost per object depends on the count: at 30,000 a table has 65,536
    /// places, 2.2 per object, against 1.6 at 10,000).
    static N: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
        std::env::var("MEMOP_HEAP_OBJECTS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(10_000)
    });

    /// A Deployment of the Memcached example as the API server returns it (its defaults filled
    /// in), without `managedFields`, and with no status (no deployment controller in the
    /// side-by-side benchmark).
    fn deployment(i: usize) -> Deployment {
        let name = format!("memcached-{i}");
        let labels = serde_json::json!({
            "app.kubernetes.io/instance": name, "app.kubernetes.io/managed-by": "memcached-operator",
            "app.kubernetes.io/name": "memcached", "app.kubernetes.io/part-of": "memcached-operator",
            "app.kubernetes.io/version": "1.6.26-alpine3.19",
        });
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": name, "namespace": format!("bench-{}", i % 10),
                "uid": format!("3f2a8c1e-5b7d-4e9a-9c0f-{i:012}"), "resourceVersion": format!("{}", 100_000 + i),
                "generation": 1, "creationTimestamp": "2026-12-05T17:49:07Z",
                "labels": labels,
                "annotations": { "memop.rs/applied-hash": "0123456789abcdef", "deployment.kubernetes.io/revision": "1" },
                "ownerReferences": [{ "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": name,
                    "uid": format!("9e8d7c6b-5a4f-4e3d-2c1b-{i:012}"), "controller": true, "blockOwnerDeletion": true }],
            },
            "spec": {
                "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "selector": { "matchLabels": { "app.kubernetes.io/instance": name, "app.kubernetes.io/name": "memcached" } },
                "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": "25%" } },
                "template": {
                    "metadata": { "labels": labels },
                    "spec": {
                        "containers": [{
                            "name": "memcached", "image": "memcached:1.6.26-alpine3.19", "imagePullPolicy": "IfNotPresent",
                            "command": ["memcached", "--memory-limit=64", "-o", "modern", "-v"],
                            "ports": [{ "containerPort": 11211, "name": "memcached", "protocol": "TCP" }],
                            "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                            "securityContext": { "allowPrivilegeEscalation": false, "capabilities": { "drop": ["ALL"] },
                                "runAsNonRoot": true, "runAsUser": 1001 },
                        }],
                        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                        "securityContext": { "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } },
                        "terminationGracePeriodSeconds": 30,
                    },
                },
            },
        }))
        .unwrap()
    }

    /// The Memcached example's kind, as `memop create api` writes it.
    #[derive(
        kube::CustomResource, Serialize, serde::Deserialize, Clone, Debug, schemars::JsonSchema,
    )]
    #[kube(
        group = "cache.example.com",
        version = "v1alpha1",
        kind = "Memcached",
        namespaced
    )]
    #[kube(status = "MemcachedStatus")]
    struct MemcachedSpec {
        size: i32,
    }

    #[derive(Serialize, serde::Deserialize, Clone, Debug, Default, schemars::JsonSchema)]
    struct MemcachedStatus {
        #[serde(default)]
        conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    }

    /// A Memcached of the side-by-side benchmark once reconciled, as its controller's cache
    /// keeps it (no `managedFields`): its finalizer, its size, and the condition reported.
    fn memcached(i: usize) -> Memcached {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": {
                "name": format!("memcached-{i}"), "namespace": format!("bench-{}", i % 10),
                "uid": format!("9e8d7c6b-5a4f-4e3d-2c1b-{i:012}"), "resourceVersion": format!("{}", 200_000 + i),
                "generation": 2, "creationTimestamp": "2026-12-05T17:49:07Z",
                "finalizers": ["cache.example.com/finalizer"],
            },
            "spec": { "size": 2 },
            "status": { "conditions": [{
                "type": "Available", "status": "True", "reason": "Reconciling", "observedGeneration": 2,
                "lastTransitionTime": "2026-12-05T17:49:09Z",
                "message": format!("Deployment memcached-{i} for custom resource memcached-{i} with 2 replicas is available"),
            }]},
        }))
        .unwrap()
    }

    fn per_object(before: usize) -> usize {
        memop_test::heap::live().saturating_sub(before) / *N
    }

    #[test]
    #[ignore = "a measurement: run it alone, with --ignored"]
    fn heap_per_object() {
        let objects: Vec<Deployment> = (0..*N).map(deployment).collect();
        let json = compact(&objects[0]).len();
        println!("{} Deployments of {json} B of compact JSON each", *N);

        let before = memop_test::heap::live();
        let cache = Cache::<Deployment> {
            objects: RwLock::default(),
            packer: Packer::default(),
            seen: AtomicU64::new(0),
            listed: watch::Sender::new(false),
            by_owner: Mutex::default(),
            kind: PhantomData,
        };
        for object in &objects {
            cache.insert(Key::of(object), object, None);
        }
        println!(
            "owned cache, whole (key and compact JSON): {} B per object",
            per_object(before)
        );
        drop(cache);

        // As it is once this process applied the objects (or found them as wanted).
        let desired = serde_json::to_value(&objects[0]).unwrap();
        let shape = Arc::new(super::shape(&desired));
        let before = memop_test::heap::live();
        let cache = Cache::<Deployment> {
            objects: RwLock::default(),
            packer: Packer::default(),
            seen: AtomicU64::new(0),
            listed: watch::Sender::new(false),
            by_owner: Mutex::default(),
            kind: PhantomData,
        };
        for object in &objects {
            cache.insert(Key::of(object), object, Some(&shape));
        }
        let projected = compact(&{
            let mut value = serde_json::to_value(&objects[0]).unwrap();
            reduce(&mut value);
            value
        })
        .len();
        println!(
            "owned cache, projected (key, {projected} B of JSON packed, and the digest): {} B per object",
            per_object(before)
        );

        let before = memop_test::heap::live();
        let mut index = OwnerIndex::new();
        for object in &objects {
            index.set(&Key::of(object), object.meta());
        }
        println!("owner index: {} B per object", per_object(before));

        let before = memop_test::heap::live();
        let applied: HashMap<Key, Applied> = (objects.iter())
            .map(|object| {
                let record = Applied {
                    hash: hash_of(object),
                    fingerprint: digest(&desired, &shape),
                    shape: Some(shape.clone()),
                    version: None,
                };
                (Key::of(object), record)
            })
            .collect();
        println!(
            "what was applied (Owned::applied): {} B per object",
            per_object(before)
        );

        let before = memop_test::heap::live();
        let changes = Changes::new();
        for object in &objects {
            changes.add(object.meta(), Priority::Low);
        }
        println!(
            "changes queued, not yet taken: {} B per object",
            per_object(before)
        );
        while !changes.queue.lock().unwrap().0.is_empty() {
            futures::FutureExt::now_or_never(changes.next()).unwrap();
        }
        println!(
            "changes, all taken (the room the maps keep): {} B per object",
            per_object(before)
        );

        let before = memop_test::heap::live();
        let queue = crate::controller::queue::Queue::new(None);
        for object in &objects {
            queue.add(Key::of(object), Priority::Low, Duration::from_secs(600));
        }
        println!(
            "the controller's queue, each object's resync due: {} B per object",
            per_object(before)
        );

        let before = memop_test::heap::live();
        let keys: HashSet<Key> = objects.iter().map(Key::of).collect();
        println!(
            "a relist's keys (HashSet<Key>): {} B per object",
            per_object(before)
        );

        let before = memop_test::heap::live();
        let (store, mut writer) = reflector::store::<Deployment>();
        writer.apply_watcher_event(&watcher::Event::Init);
        for object in &objects {
            writer.apply_watcher_event(&watcher::Event::InitApply(object.clone()));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        println!(
            "kube's store of the same, typed (a controller's own cache): {} B per object",
            per_object(before)
        );

        let primaries: Vec<Memcached> = (0..*N).map(memcached).collect();
        let before = memop_test::heap::live();
        let (primary_store, mut primary_writer) = reflector::store::<Memcached>();
        primary_writer.apply_watcher_event(&watcher::Event::Init);
        for object in &primaries {
            primary_writer.apply_watcher_event(&watcher::Event::InitApply(object.clone()));
        }
        primary_writer.apply_watcher_event(&watcher::Event::InitDone);
        let primary_json = compact(&primaries[0]).len();
        println!(
            "kube's store of the primary (a Memcached of {primary_json} B of compact JSON): {} B per object",
            per_object(before)
        );
        drop((primary_store, primary_writer));

        let before = memop_test::heap::live();
        let (primary_store, mut primary_writer) = crate::controller::store::new::<Memcached>();
        for object in &primaries {
            primary_writer.insert(object);
        }
        let primary = per_object(before);
        println!("memop's store of the primary (a controller's own cache): {primary} B per object");
        // Its JSON, and its key and place in the map (about 200 B).
        assert!(primary <= primary_json + 512, "{primary} B per object");
        drop((primary_store, primary_writer, primaries));

        let before = memop_test::heap::live();
        let metadata: Vec<Arc<ObjectMeta>> = objects
            .iter()
            .map(|o| Arc::new(o.metadata.clone()))
            .collect();
        println!(
            "the metadata alone, typed: {} B per object",
            per_object(before)
        );
        drop((
            cache, index, applied, changes, queue, keys, store, writer, metadata,
        ));
    }
}
