//! A controller's cache of its own objects ([`Store`]), kept as compact JSON packed against
//! the first object it held ([`Packer`]), as the owned caches keep theirs (`owned.rs`): kube's
//! reflector store keeps each object as a typed `Arc<K>`, whose empty `Option`s, `String`s and
//! maps take up to 7 times the object's JSON (2.2 kB, key and map included, for a ConfigMap of
//! 320 B); compact JSON takes about 1.2 times and the key, and packed, a sixth of the JSON or
//! less (a Memcached of the tutorial: 997 B typed, 571 B as JSON, about 95 packed). An object
//! is read back into a fresh `Arc<K>` when something reads it (a reconcile, a `watches` map),
//! in microseconds.
//!
//! [`reflect`] applies a watch's events to it, every list in place.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::cache::{Key, Packer, compact, kept_in, own_bucket};

/// The objects, each as packed compact JSON, by namespace and name.
type Objects = Arc<RwLock<HashMap<Key, Box<[u8]>>>>;

/// A controller's cache of the objects of its kind (a reader: clones see the same objects), as
/// [`Builder::watches`](super::Builder::watches) gives it to its `map`. Each object is kept
/// without `managedFields` (and, unless
/// [`Builder::keeps_last_applied`](super::Builder::keeps_last_applied), without `kubectl
/// apply`'s record), as packed compact JSON, and read back into a fresh object by each read.
/// Sharded, it holds the objects of this replica's claimed buckets only.
pub struct Store<K: Resource<DynamicType = ()>> {
    objects: Objects,
    packer: Arc<Packer>,
    /// Whether the first list is in; closed when the writer goes before it is.
    ready: watch::Receiver<bool>,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()>> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            objects: self.objects.clone(),
            packer: self.packer.clone(),
            ready: self.ready.clone(),
            kind: PhantomData,
        }
    }
}

/// What applies a watch's objects to a [`Store`] ([`reflect`]).
pub(crate) struct Writer<K: Resource<DynamicType = ()>> {
    objects: Objects,
    packer: Arc<Packer>,
    ready: watch::Sender<bool>,
    kind: PhantomData<fn() -> K>,
}

/// An empty store and its writer.
pub(crate) fn new<K: Resource<DynamicType = ()>>() -> (Store<K>, Writer<K>) {
    let writer = Writer {
        objects: Objects::default(),
        packer: Arc::default(),
        ready: watch::Sender::new(false),
        kind: PhantomData,
    };
    (writer.as_reader(), writer)
}

impl<K: Resource<DynamicType = ()>> Store<K> {
    /// How many objects it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.objects.read().expect("store lock").len()
    }

    /// The keys of every cached object (none read back).
    pub(crate) fn keys(&self) -> Vec<Key> {
        let objects = self.objects.read().expect("store lock");
        objects.keys().cloned().collect()
    }

    /// Waits for the first list to be in; `false` if the writer went before (the controller
    /// stopped). Every waiter is woken (kube's store wakes only the last of several).
    pub(crate) async fn wait_until_ready(&self) -> bool {
        self.ready.clone().wait_for(|ready| *ready).await.is_ok()
    }
}

impl<K: Resource<DynamicType = ()> + DeserializeOwned> Store<K> {
    /// The cached object of `key` (its name and namespace), read back.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        self.read(&Key::from(key))
    }

    /// The cached object of `key`, read back.
    pub(crate) fn read(&self, key: &Key) -> Option<Arc<K>> {
        let objects = self.objects.read().expect("store lock");
        self.packer.read(key, objects.get(key)?).map(Arc::new)
    }

    /// Every cached object, each read back: a `map` that looks for the objects that refer to
    /// the one it got reads them all, so it costs that much each time.
    pub fn state(&self) -> Vec<Arc<K>> {
        let objects = self.objects.read().expect("store lock");
        (objects.iter())
            .filter_map(|(key, packed)| self.packer.read(key, packed))
            .map(Arc::new)
            .collect()
    }

    /// The cached objects outside the buckets of `kept` (by their own UID's): those of buckets
    /// a sharded replica gave up. Only their metadata is read to tell.
    pub(crate) fn outside(&self, kept: u64) -> Vec<K> {
        let objects = self.objects.read().expect("store lock");
        (objects.iter())
            .filter(|(_, packed)| {
                (self.packer.metadata(packed))
                    .is_some_and(|metadata| !kept_in(kept, own_bucket(&metadata)))
            })
            .filter_map(|(key, packed)| self.packer.read(key, packed))
            .collect()
    }
}

impl<K: Resource<DynamicType = ()>> Writer<K> {
    pub(crate) fn as_reader(&self) -> Store<K> {
        Store {
            objects: self.objects.clone(),
            packer: self.packer.clone(),
            ready: self.ready.subscribe(),
            kind: PhantomData,
        }
    }

    /// Caches `object`, in place of what it held of it.
    pub(crate) fn insert(&mut self, object: &K)
    where
        K: Serialize,
    {
        let packed = self.packer.pack(&compact(object));
        let mut objects = self.objects.write().expect("store lock");
        objects.insert(Key::of(object), packed);
    }

    pub(crate) fn remove(&mut self, key: &Key) {
        self.objects.write().expect("store lock").remove(key);
    }

    /// The resourceVersion of the cached object of `key` (only its metadata read back).
    pub(crate) fn version(&self, key: &Key) -> Option<String> {
        let objects = self.objects.read().expect("store lock");
        self.packer.version(objects.get(key)?)
    }

    /// Drops the objects not in `listed`, and returns them (read back).
    pub(crate) fn retain(&mut self, listed: &HashSet<Key>) -> Vec<K>
    where
        K: DeserializeOwned,
    {
        let mut objects = self.objects.write().expect("store lock");
        let mut gone = Vec::new();
        objects.retain(|key, packed| {
            let kept = listed.contains(key);
            if !kept {
                gone.extend(self.packer.read(key, packed));
            }
            kept
        });
        gone
    }

    /// Says that the first list is in.
    pub(crate) fn ready(&mut self) {
        self.ready.send_replace(true);
    }
}

/// kube's `reflector(writer, events)`, into memop's [`Store`], with every list
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
    use super::*;
    use futures::FutureExt;
    use futures::channel::mpsc;
    use futures::stream::BoxStream;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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
            let (store, writer) = new();
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
    fn objects_of_a_kind_are_held_packed_and_read_back_whole() {
        let (store, mut writer) = new::<ConfigMap>();
        let objects: Vec<ConfigMap> = (0..200)
            .map(|i| {
                let mut object = object(&format!("memcached-{i}"), &format!("{i}"));
                object.metadata.labels = Some(
                    [
                        ("app.kubernetes.io/name", "memcached".to_string()),
                        ("app.kubernetes.io/instance", format!("memcached-{i}")),
                        (
                            "app.kubernetes.io/managed-by",
                            "memcached-operator".to_string(),
                        ),
                    ]
                    .map(|(k, v)| (k.to_string(), v))
                    .into(),
                );
                object
            })
            .collect();
        for object in &objects {
            writer.insert(object);
        }
        let json: usize = objects.iter().map(|o| compact(o).len()).sum();
        let held: usize = (store.objects.read().unwrap().values())
            .map(|packed| packed.len())
            .sum();
        assert!(held * 3 < json, "{held} B held for {json} B of JSON");
        for object in &objects {
            let key = ObjectRef::new(object.metadata.name.as_deref().unwrap()).within("default");
            assert_eq!(store.get(&key).as_deref(), Some(object));
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
        let (store, writer) = new();
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
}
