//! A controller's cache of its own objects ([`Store`]), kept as compact JSON, as the owned
//! caches keep theirs (`owned.rs`): kube's reflector store keeps each object as a typed
//! `Arc<K>`, whose empty `Option`s, `String`s and maps take up to 7 times the object's JSON
//! (2.2 kB, key and map included, for a ConfigMap of 320 B); compact JSON takes about 1.2 times
//! and the key. How much that saves depends on the kind's shape: 45 MiB at 30,000 such
//! ConfigMaps, about 7 MiB at 30,000 of the tutorial's `Memcached`s (997 B typed, 774 B as
//! JSON). An object is read back into a fresh `Arc<K>` when something reads it (a reconcile, a
//! `watches` map), in microseconds.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::{Arc, RwLock};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::cache::{Key, Metadata, compact, kept_in, own_bucket, version_in};

/// The objects, each as compact JSON, by namespace and name.
type Objects = Arc<RwLock<HashMap<Key, Box<[u8]>>>>;

/// A controller's cache of the objects of its kind (a reader: clones see the same objects), as
/// [`Builder::watches`](super::Builder::watches) gives it to its `map`. Each object is kept
/// without `managedFields` (and, unless
/// [`Builder::keeps_last_applied`](super::Builder::keeps_last_applied), without `kubectl
/// apply`'s record), as compact JSON, and read back into a fresh object by each read. Sharded,
/// it holds the objects of this replica's claimed buckets only.
pub struct Store<K: Resource<DynamicType = ()>> {
    objects: Objects,
    /// Whether the first list is in; closed when the writer goes before it is.
    ready: watch::Receiver<bool>,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()>> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            objects: self.objects.clone(),
            ready: self.ready.clone(),
            kind: PhantomData,
        }
    }
}

/// What applies a watch's objects to a [`Store`] (see `cache::reflect`).
pub(crate) struct Writer<K: Resource<DynamicType = ()>> {
    objects: Objects,
    ready: watch::Sender<bool>,
    kind: PhantomData<fn() -> K>,
}

/// An empty store and its writer.
pub(crate) fn new<K: Resource<DynamicType = ()>>() -> (Store<K>, Writer<K>) {
    let writer = Writer {
        objects: Objects::default(),
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
        read(key, objects.get(key)?).map(Arc::new)
    }

    /// Every cached object, each read back: a `map` that looks for the objects that refer to
    /// the one it got reads them all, so it costs that much each time.
    pub fn state(&self) -> Vec<Arc<K>> {
        let objects = self.objects.read().expect("store lock");
        (objects.iter())
            .filter_map(|(key, json)| read(key, json))
            .map(Arc::new)
            .collect()
    }

    /// The cached objects outside the buckets of `kept` (by their own UID's): those of buckets
    /// a sharded replica gave up. Only their metadata is read to tell.
    pub(crate) fn outside(&self, kept: u64) -> Vec<K> {
        let objects = self.objects.read().expect("store lock");
        (objects.iter())
            .filter(|(_, json)| {
                serde_json::from_slice::<Metadata>(json)
                    .is_ok_and(|object| !kept_in(kept, own_bucket(&object.metadata)))
            })
            .filter_map(|(key, json)| read(key, json))
            .collect()
    }
}

impl<K: Resource<DynamicType = ()>> Writer<K> {
    pub(crate) fn as_reader(&self) -> Store<K> {
        Store {
            objects: self.objects.clone(),
            ready: self.ready.subscribe(),
            kind: PhantomData,
        }
    }

    /// Caches `object`, in place of what it held of it.
    pub(crate) fn insert(&mut self, object: &K)
    where
        K: Serialize,
    {
        let json = compact(object).into_boxed_slice();
        let mut objects = self.objects.write().expect("store lock");
        objects.insert(Key::of(object), json);
    }

    pub(crate) fn remove(&mut self, key: &Key) {
        self.objects.write().expect("store lock").remove(key);
    }

    /// The resourceVersion of the cached object of `key` (only its metadata read back).
    pub(crate) fn version(&self, key: &Key) -> Option<String> {
        let objects = self.objects.read().expect("store lock");
        version_in(objects.get(key)?)
    }

    /// Drops the objects not in `listed`, and returns them (read back).
    pub(crate) fn retain(&mut self, listed: &HashSet<Key>) -> Vec<K>
    where
        K: DeserializeOwned,
    {
        let mut objects = self.objects.write().expect("store lock");
        let mut gone = Vec::new();
        objects.retain(|key, json| {
            let kept = listed.contains(key);
            if !kept {
                gone.extend(read(key, json));
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

/// The object of `key` read back from `json`.
fn read<K: DeserializeOwned>(key: &Key, json: &[u8]) -> Option<K> {
    match serde_json::from_slice(json) {
        Ok(object) => Some(object),
        // It was written from a `K`: this cannot fail but for a bug.
        Err(err) => {
            tracing::error!(%key, error = %err, "a cached object cannot be read back");
            None
        }
    }
}
