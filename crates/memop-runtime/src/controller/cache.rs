//! How a controller's caches follow their watches: lists streamed where the API server serves
//! them ([`watch`]), a relist applied in place, not gathered beside the cache ([`reflect`]),
//! and, sharded, only the objects of the replica's buckets ([`follow`]).

use std::collections::{HashSet, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::store::Writer;
use crate::manager::sharding::{Holding, bucket_of, bucket_of_uid};

/// A watch's events.
pub(crate) type Events<K> = BoxStream<'static, watcher::Result<Event<K>>>;

/// Whether a watch of some kind lists in pages, because the API server refused to stream its
/// list; shared by the watches a cache makes one after the other, so that it is asked once.
#[derive(Clone, Default)]
pub(crate) struct Paged(Arc<AtomicBool>);

/// kube's `watcher(api, config)`, its lists streamed: the watch asks for the objects as events
/// (`sendInitialEvents`, Kubernetes' WatchList, served by default since 1.34) and the list ends
/// with a bookmark, so that a list, and every relist, reaches the cache one object at a time
/// instead of in pages of 500 decoded at once beside it, and costs the API server no list
/// either. An API server that refuses it (the feature gate off: 422 or 400) is listed in pages
/// from then on (`paged` remembers it for the next watches of the cache), as client-go's
/// `WatchListClient` falls back.
pub(crate) fn watch<K>(api: Api<K>, config: watcher::Config, paged: Paged) -> Events<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let streaming = !paged.0.load(Ordering::SeqCst);
    let events = if streaming {
        watcher::watcher(api.clone(), config.clone().streaming_lists()).boxed()
    } else {
        watcher::watcher(api.clone(), config.clone()).boxed()
    };
    futures::stream::unfold((events, streaming), move |(mut events, mut streaming)| {
        let (api, config, paged) = (api.clone(), config.clone(), paged.clone());
        async move {
            loop {
                let event = events.next().await?;
                if streaming && refuses_streaming(&event) {
                    tracing::info!(
                        kind = %K::kind(&()),
                        "the API server does not stream lists; listing in pages"
                    );
                    paged.0.store(true, Ordering::SeqCst);
                    streaming = false;
                    events = watcher::watcher(api.clone(), config.clone()).boxed();
                    continue;
                }
                return Some((event, (events, streaming)));
            }
        }
    })
    .boxed()
}

/// Whether `event` is an API server's refusal of a streamed list: its validation forbids
/// `sendInitialEvents` while the WatchList feature gate is off (422 Invalid; 400 from some
/// versions and proxies).
fn refuses_streaming<K>(event: &watcher::Result<Event<K>>) -> bool {
    let code = match event {
        Err(watcher::Error::WatchStartFailed(kube::Error::Api(status))) => status.code,
        Err(watcher::Error::WatchError(status)) => status.code,
        _ => return false,
    };
    matches!(code, 400 | 422)
}

/// The key of an object in the maps kept as long as the object is (the caches, the queue,
/// what was applied): its namespace and name as one shared string, `namespace/name` (the name
/// alone for a cluster-scoped object; neither holds a `/`). kube's `ObjectRef` takes 96 bytes
/// in a map's table and two allocations; this takes 16 and one, and a clone shares it. The
/// bytes of a key count about twice per object in each map: a table at 30,000 objects has
/// room for 65,536 (hashbrown keeps it at most 7/8 full).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key(Arc<str>);

impl Key {
    pub(crate) fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace.filter(|namespace| !namespace.is_empty()) {
            Some(namespace) => Self(format!("{namespace}/{name}").into()),
            None => Self(name.into()),
        }
    }

    /// The key of `object`.
    pub(crate) fn of<K: Resource>(object: &K) -> Self {
        let metadata = object.meta();
        Self::new(
            metadata.namespace.as_deref(),
            metadata.name.as_deref().unwrap_or_default(),
        )
    }

    /// The object's namespace; `None` for a cluster-scoped one.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(namespace, _)| namespace)
    }

    /// The object's name.
    pub(crate) fn name(&self) -> &str {
        self.0.split_once('/').map_or(&self.0, |(_, name)| name)
    }

    /// kube's reference to the object of this key.
    pub(crate) fn to_ref<K: Resource<DynamicType = ()>>(&self) -> ObjectRef<K> {
        let key = ObjectRef::new(self.name());
        match self.namespace() {
            Some(namespace) => key.within(namespace),
            None => key,
        }
    }
}

impl<K: Resource> From<&ObjectRef<K>> for Key {
    fn from(key: &ObjectRef<K>) -> Self {
        Self::new(key.namespace.as_deref(), &key.name)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The annotation in which `kubectl apply` keeps the whole object it applied: as large as the
/// object's spec again, and read by nothing but `kubectl apply` itself.
pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What a cache keeps of each object as it decodes it: all but its `managedFields` (one entry per
/// writer, often the larger part of an object, which no reconcile reads) and, unless `whole`, its
/// `kubectl apply` record ([`LAST_APPLIED`]), which no reconcile reads either.
pub(crate) fn projection<K: Resource>(whole: bool) -> impl FnMut(&mut K) + Send + Clone + 'static {
    move |object: &mut K| {
        object.meta_mut().managed_fields = None;
        if !whole && let Some(annotations) = object.meta_mut().annotations.as_mut() {
            annotations.remove(LAST_APPLIED);
        }
    }
}

/// The metadata of a cached object (as compact JSON), read without the rest of it.
#[derive(serde::Deserialize)]
pub(crate) struct Metadata {
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
}

/// The resourceVersion of a cached object (as compact JSON), read without the rest of its
/// metadata: what a relist compares each listed object by.
pub(crate) fn version_in(json: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Object {
        #[serde(default)]
        metadata: Versioned,
    }
    #[derive(serde::Deserialize, Default)]
    struct Versioned {
        #[serde(rename = "resourceVersion")]
        resource_version: Option<String>,
    }
    serde_json::from_slice::<Object>(json)
        .ok()?
        .metadata
        .resource_version
}

/// `object` as compact JSON: how the caches keep their objects.
pub(crate) fn compact<K: Serialize>(object: &K) -> Vec<u8> {
    serde_json::to_vec(object).unwrap_or_default()
}

/// The bucket of a controller's own object: its UID's.
pub(crate) fn own_bucket(metadata: &ObjectMeta) -> Option<u16> {
    Some(bucket_of(metadata))
}

/// The bucket of an owned object: its controller's (the bucket hashes the UID, which its
/// controller ownerReference names), so that an object and what it owns go to one replica.
/// `None` for an object without a controller: no replica reconciles it.
pub(crate) fn owner_bucket(metadata: &ObjectMeta) -> Option<u16> {
    let owners = metadata.owner_references.as_deref().unwrap_or_default();
    let controller = owners.iter().find(|owner| owner.controller == Some(true))?;
    Some(bucket_of_uid(&controller.uid))
}

/// The events of the watches `watch` makes. Unsharded (`holding` is `None`): one watch, as it
/// comes. Sharded: only the objects whose `bucket` the replica claims. When a bucket is added
/// to its claims, the watch is made again, so that its list brings the objects of the buckets
/// newly claimed (the API server cannot select by UID hash) and the cache drops those of the
/// buckets given up (a relist drops what it did not list, see [`reflect`]); the cache then says
/// so ([`Holding::listed`]). When buckets are only given up (a replica joins the ring, and takes
/// some of each other's), the watch goes on, keeping fewer, and the cache's objects of those
/// buckets come out as deleted: `cached(kept)` gives the objects the cache holds outside the
/// buckets of `kept`. No list: an operator's rolling upgrade, a replica joining and one leaving
/// at each step, lists only on the replicas that take buckets in.
// Over 80 lines on purpose: one state machine (the watch made again, the deletions of buckets
// given up still to come out, a list under way), whose states read best side by side.
pub(crate) fn follow<K>(
    watch: impl Fn() -> Events<K> + Send + 'static,
    holding: Option<Holding>,
    bucket: fn(&ObjectMeta) -> Option<u16>,
    cached: impl Fn(u64) -> Vec<K> + Send + 'static,
) -> Events<K>
where
    K: Resource + Send + 'static,
{
    let Some(holding) = holding else {
        return watch();
    };
    struct State<K, W, C> {
        watch: W,
        cached: C,
        holding: Holding,
        events: Option<Events<K>>,
        /// Whether the watch is in the middle of a list (the cache has not applied it yet).
        listing: bool,
        /// The deletions of the objects of buckets given up, still to come out.
        dropped: VecDeque<K>,
    }
    let state = State {
        watch,
        cached,
        holding,
        events: None,
        listing: false,
        dropped: VecDeque::new(),
    };
    futures::stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(object) = state.dropped.pop_front() {
                return Some((Ok(Event::Delete(object)), state));
            }
            let events = match &mut state.events {
                Some(events) => events,
                None => {
                    let keeps = state.holding.restart();
                    tracing::debug!(buckets = keeps.count_ones(), "watching the claimed buckets");
                    state.listing = false;
                    state.events.insert((state.watch)())
                }
            };
            let event = tokio::select! {
                () = state.holding.changed() => {
                    // In the middle of a list, the cache may hold objects of the buckets given
                    // up that it has not applied yet: start over.
                    match (!state.listing).then(|| state.holding.narrow()).flatten() {
                        Some(kept) => {
                            state.dropped.extend((state.cached)(kept));
                            tracing::debug!(
                                buckets = kept.count_ones(),
                                dropped = state.dropped.len(),
                                "buckets given up; watching the others still"
                            );
                        }
                        None => state.events = None,
                    }
                    continue;
                }
                event = events.next() => event?,
            };
            let kept = match &event {
                Ok(Event::Apply(object) | Event::InitApply(object) | Event::Delete(object)) => {
                    bucket(object.meta()).is_some_and(|b| state.holding.keeps(b))
                }
                Ok(Event::Init) => {
                    state.listing = true;
                    true
                }
                Ok(Event::InitDone) => {
                    state.listing = false;
                    true
                }
                Err(_) => true,
            };
            if kept {
                return Some((event, state));
            }
        }
    })
    .boxed()
}

/// Whether `bucket` is in the mask `kept`; an object of no bucket is kept by no replica.
pub(crate) fn kept_in(kept: u64, bucket: Option<u16>) -> bool {
    bucket.is_some_and(|b| kept & (1 << b) != 0)
}

/// kube's `reflector(writer, events)`, into memop's [`Store`](super::Store), with every list
/// applied to it in place: kube's writer gathers a list into a second map and swaps it in at
/// its end, so that a replica holds every object twice meanwhile during a relist; here each
/// listed object replaces its cached copy at once, and at the end of the list the objects it
/// did not bring (deleted while the watch was down, or of a bucket given up) are deleted. The
/// store is ready at the end of the first list, as kube's. The events come out as the store
/// applied them (a relisted object as an `Apply`), except that a relisted object the cache held
/// as it is (the same resourceVersion) comes out as an `InitApply`: a controller queues it at
/// low priority, behind the changes, as controller-runtime's `WithLowPriorityWhenUnchanged`
/// does with a relist's unchanged updates. `listed` is called each time a list has been
/// applied.
pub(crate) fn reflect<K>(
    events: impl Stream<Item = watcher::Result<Event<K>>> + Send + 'static,
    mut writer: Writer<K>,
    mut listed: impl FnMut() + Send + 'static,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    // Whether the first list is in; during a list, the objects it brought so far.
    let mut ready = false;
    let mut relisted: Option<HashSet<Key>> = None;
    events.flat_map(move |event| {
        let event = match event {
            Ok(event) => event,
            Err(err) => return futures::stream::iter(vec![Err(err)]),
        };
        let emitted = match event {
            // (kube's watcher starts every list with `Init`: without one, nothing is known
            // to be gone.)
            Event::Init => {
                relisted = Some(HashSet::new());
                if ready { vec![] } else { vec![Event::Init] }
            }
            Event::InitApply(object) => {
                let key = Key::of(&object);
                let version = &object.meta().resource_version;
                // Whether a relisted object is as the cache held it (only its metadata read).
                let unchanged =
                    ready && version.is_some() && writer.version(&key).as_ref() == version.as_ref();
                if let Some(relisted) = &mut relisted {
                    relisted.insert(key);
                }
                writer.insert(&object);
                if ready && !unchanged {
                    vec![Event::Apply(object)]
                } else {
                    vec![Event::InitApply(object)]
                }
            }
            Event::InitDone => {
                let gone = relisted.take().map(|relisted| writer.retain(&relisted));
                let mut emitted: Vec<_> = gone.into_iter().flatten().map(Event::Delete).collect();
                if !ready {
                    ready = true;
                    writer.ready();
                    emitted.push(Event::InitDone);
                }
                listed();
                emitted
            }
            Event::Apply(object) => {
                writer.insert(&object);
                vec![Event::Apply(object)]
            }
            Event::Delete(object) => {
                writer.remove(&Key::of(&object));
                vec![Event::Delete(object)]
            }
        };
        futures::stream::iter(emitted.into_iter().map(Ok).collect::<Vec<_>>())
    })
}

#[cfg(test)]
mod tests {
    use super::super::store::{self, Store};
    use super::*;
    use futures::FutureExt;
    use futures::channel::mpsc;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn object(name: &str, v: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            data: Some([("v".to_string(), v.to_string())].into()),
            ..ConfigMap::default()
        }
    }

    /// The version of `name` in `store`, if it holds it.
    fn version(store: &Store<ConfigMap>, name: &str) -> Option<String> {
        let object = store.get(&ObjectRef::new(name).within("default"))?;
        object.data.as_ref()?.get("v").cloned()
    }

    /// A watch whose events a test sends one by one, through [`reflect`] into a store; each
    /// step returns what came out.
    struct Reflected {
        events: mpsc::UnboundedSender<watcher::Result<Event<ConfigMap>>>,
        out: BoxStream<'static, watcher::Result<Event<ConfigMap>>>,
        store: Store<ConfigMap>,
        lists: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Reflected {
        fn new() -> Self {
            let (events, rx) = mpsc::unbounded();
            let (store, writer) = store::new();
            let lists = std::sync::Arc::<std::sync::atomic::AtomicUsize>::default();
            let counted = lists.clone();
            let out = reflect(rx, writer, move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
            .boxed();
            Self {
                events,
                out,
                store,
                lists,
            }
        }

        fn send(&mut self, event: Event<ConfigMap>) -> Vec<Event<ConfigMap>> {
            self.events.unbounded_send(Ok(event)).unwrap();
            let mut out = Vec::new();
            while let Some(Some(event)) = self.out.next().now_or_never() {
                out.push(event.unwrap());
            }
            out
        }

        fn lists(&self) -> usize {
            self.lists.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[test]
    fn a_relist_updates_the_store_in_place_and_drops_what_it_did_not_bring() {
        let mut watch = Reflected::new();
        // The first list: ready at its end.
        watch.send(Event::Init);
        for name in ["a", "b", "c"] {
            watch.send(Event::InitApply(object(name, "1")));
        }
        assert!(watch.store.wait_until_ready().now_or_never().is_none());
        assert_eq!(watch.send(Event::InitDone).len(), 1);
        assert!(watch.store.wait_until_ready().now_or_never().is_some());
        assert_eq!((watch.store.len(), watch.lists()), (3, 1));

        // A relist (the watch came back after c was deleted): each object it brings replaces
        // the cached one at once, so that the store is the only copy of every object; the
        // others stay until its end.
        let init = watch.send(Event::Init);
        let out = watch.send(Event::InitApply(object("a", "2")));
        assert_eq!(version(&watch.store, "a").as_deref(), Some("2"));
        assert_eq!(version(&watch.store, "c").as_deref(), Some("1"));
        assert_eq!(watch.store.len(), 3);
        // The controller is triggered as by kube's reflector (which ignores `Init` and treats
        // `Apply` as `InitApply`).
        assert!(init.is_empty());
        assert!(matches!(&out[..], [Event::Apply(_)]), "{out:?}");
        watch.send(Event::InitApply(object("b", "2")));
        let out = watch.send(Event::InitDone);
        // What the relist did not bring was deleted while the watch was down: it goes now.
        assert!(matches!(&out[..], [Event::Delete(c)] if c.metadata.name.as_deref() == Some("c")));
        assert_eq!(version(&watch.store, "c"), None);
        assert_eq!(version(&watch.store, "b").as_deref(), Some("2"));
        assert_eq!((watch.store.len(), watch.lists()), (2, 2));

        // Changes between lists are applied as they come.
        watch.send(Event::Apply(object("d", "1")));
        watch.send(Event::Delete(object("a", "2")));
        assert_eq!(version(&watch.store, "d").as_deref(), Some("1"));
        assert_eq!(watch.store.len(), 2);
    }

    /// A relist brings most objects as they were: those come out as listed (`InitApply`, which
    /// a controller queues at low priority), those that changed while the watch was down as
    /// changes (`Apply`), so that a relist of 30,000 objects does not hold the changes up.
    #[test]
    fn a_relist_tells_the_unchanged_objects_from_the_changed_ones() {
        let versioned = |name: &str, v: &str| {
            let mut object = object(name, v);
            object.metadata.resource_version = Some(v.to_string());
            object
        };
        let mut watch = Reflected::new();
        watch.send(Event::Init);
        watch.send(Event::InitApply(versioned("same", "1")));
        watch.send(Event::InitApply(versioned("edited", "2")));
        watch.send(Event::InitDone);

        watch.send(Event::Init);
        let same = watch.send(Event::InitApply(versioned("same", "1")));
        let edited = watch.send(Event::InitApply(versioned("edited", "3")));
        let new = watch.send(Event::InitApply(versioned("new", "4")));
        assert!(matches!(&same[..], [Event::InitApply(_)]), "{same:?}");
        assert!(matches!(&edited[..], [Event::Apply(_)]), "{edited:?}");
        assert!(matches!(&new[..], [Event::Apply(_)]), "{new:?}");
        // Applied to the store all the same.
        assert_eq!(version(&watch.store, "edited").as_deref(), Some("3"));
        watch.send(Event::InitDone);
        assert_eq!(watch.store.len(), 3);
    }

    /// A Memcached as `memop create api` writes its kind.
    #[derive(
        kube::CustomResource,
        serde::Serialize,
        serde::Deserialize,
        Clone,
        Debug,
        PartialEq,
        schemars::JsonSchema,
    )]
    #[kube(
        group = "cache.example.com",
        version = "v1alpha1",
        kind = "Memcached",
        namespaced,
        status = "MemcachedStatus",
        derive = "PartialEq"
    )]
    struct MemcachedSpec {
        size: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<String>,
    }

    #[derive(
        serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema,
    )]
    struct MemcachedStatus {
        #[serde(default)]
        conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    }

    /// A store that listed `objects`, through [`reflect`].
    fn listed<K>(objects: &[K]) -> Store<K>
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Send + Sync,
        K: 'static,
    {
        let (store, writer) = store::new();
        let list = objects.iter().cloned().map(Event::InitApply);
        let events = std::iter::once(Event::Init)
            .chain(list)
            .chain([Event::InitDone]);
        let events = futures::stream::iter(events.map(Ok).collect::<Vec<_>>());
        reflect(events, writer, || {})
            .collect::<Vec<_>>()
            .now_or_never()
            .unwrap();
        store
    }

    /// The store keeps JSON, and a reconcile gets an object read back from it: the object as
    /// it was cached, every field, label and condition of it, in a kube custom resource as in
    /// a k8s-openapi kind.
    #[test]
    fn what_a_reconcile_reads_back_is_what_was_cached() {
        use kube::ResourceExt;
        let memcached: Memcached = serde_json::from_value(serde_json::json!({
            "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": {
                "name": "memcached-1", "namespace": "default", "uid": "9e8d7c6b", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "2026-12-05T17:49:07Z",
                "labels": { "app.kubernetes.io/name": "memcached", "tier": "cache" },
                "annotations": { "note": "kept" },
                "finalizers": ["cache.example.com/finalizer"],
            },
            "spec": { "size": 3, "image": "memcached:1.6.26-alpine" },
            "status": { "conditions": [{
                "type": "Available", "status": "True", "reason": "Reconciling", "observedGeneration": 2,
                "lastTransitionTime": "2026-12-05T17:49:09Z", "message": "3 replicas are available",
            }]},
        }))
        .unwrap();
        let store = listed(std::slice::from_ref(&memcached));
        let read = store.get(&ObjectRef::from_obj(&memcached)).unwrap();
        assert_eq!(*read, memcached);
        assert_eq!(read.labels()["tier"], "cache");
        assert_eq!(
            read.status.as_ref().unwrap().conditions[0].message,
            "3 replicas are available"
        );
        assert_eq!(store.state(), [Arc::new(memcached)]);

        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "p", "namespace": "default", "labels": { "app": "x" } },
            "spec": { "containers": [{ "name": "c", "image": "busybox", "ports": [{ "containerPort": 80 }],
                "resources": { "limits": { "memory": "64Mi", "cpu": "250m" } } }] },
            "status": { "phase": "Running", "podIP": "10.0.0.7", "startTime": "2026-12-05T17:49:09Z" },
        }))
        .unwrap();
        let store = listed(std::slice::from_ref(&pod));
        assert_eq!(*store.get(&ObjectRef::from_obj(&pod)).unwrap(), pod);
        assert!(
            store
                .get(&ObjectRef::new("p").within("elsewhere"))
                .is_none()
        );
    }

    #[test]
    fn an_owned_object_is_in_its_controllers_bucket() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = ObjectMeta {
            uid: Some("3f2a8c1e-5b7d-4e9a-9c0f-1d2e3f4a5b6c".into()),
            ..ObjectMeta::default()
        };
        let reference = |uid: &str, controller| OwnerReference {
            uid: uid.into(),
            controller: Some(controller),
            ..OwnerReference::default()
        };
        let owned = ObjectMeta {
            uid: Some("another".into()),
            owner_references: Some(vec![
                reference("not-the-controller", false),
                reference(owner.uid.as_deref().unwrap(), true),
            ]),
            ..ObjectMeta::default()
        };
        assert_eq!(owner_bucket(&owned), own_bucket(&owner));
        assert_eq!(owner_bucket(&ObjectMeta::default()), None);
    }
}
