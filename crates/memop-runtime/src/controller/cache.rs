//! How a controller's caches follow their watches: lists streamed where the API server serves
//! them ([`watch`]), and, sharded, only the objects of the replica's buckets ([`follow`]); how
//! a cache keys ([`Key`]) and keeps ([`compact`], [`Packer`]) an object. (A relist is applied
//! in place, not gathered beside the cache: `store::reflect`.)

use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use serde::Serialize;
use serde::de::DeserializeOwned;

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

/// `object` as compact JSON: how the caches keep their objects (each packed, [`Packer`]).
pub(crate) fn compact<K: Serialize>(object: &K) -> Vec<u8> {
    serde_json::to_vec(object).unwrap_or_default()
}

/// How a cache packs the compact JSON of each object it keeps: LZ4 against a dictionary, the
/// JSON of the first object it packed (its last 64 KiB, LZ4's window). The objects of one kind
/// in one cache share most of their bytes (field names, labels, owner references, images,
/// condition messages, the API server's defaults), so each packs to about what differs: a
/// Memcached of the tutorial from 571 B to about 95, a Deployment's projection with its status
/// from 1.4 kB to about 150. Unpacking one takes about a microsecond, beside the tens a reader
/// spends decoding the JSON. An object unlike the first packs as LZ4 packs it alone.
#[derive(Default)]
pub(crate) struct Packer {
    dictionary: OnceLock<Box<[u8]>>,
}

/// LZ4's window: how far back a match may reach, and so what a dictionary can serve.
const WINDOW: usize = 64 * 1024;

impl Packer {
    /// `json`, packed.
    pub(crate) fn pack(&self, json: &[u8]) -> Box<[u8]> {
        let dictionary =
            (self.dictionary).get_or_init(|| json[json.len().saturating_sub(WINDOW)..].into());
        lz4_flex::block::compress_prepend_size_with_dict(json, dictionary).into_boxed_slice()
    }

    /// The JSON `packed` was made of. Only bytes [`Self::pack`] made are given: an error is a
    /// bug, logged, and reads as nothing.
    pub(crate) fn unpack(&self, packed: &[u8]) -> Option<Vec<u8>> {
        let dictionary = self.dictionary.get().map_or(&[][..], |d| d);
        lz4_flex::block::decompress_size_prepended_with_dict(packed, dictionary)
            .inspect_err(|err| tracing::error!(error = %err, "a cached object cannot be unpacked"))
            .ok()
    }

    /// The object of `key` read back from `packed`. It was packed from a `K`: an error is a bug,
    /// logged, and reads as nothing.
    pub(crate) fn read<K: DeserializeOwned>(&self, key: &Key, packed: &[u8]) -> Option<K> {
        serde_json::from_slice(&self.unpack(packed)?)
            .inspect_err(
                |err| tracing::error!(%key, error = %err, "a cached object cannot be read back"),
            )
            .ok()
    }

    /// The resourceVersion of the object `packed` ([`version_in`]).
    pub(crate) fn version(&self, packed: &[u8]) -> Option<String> {
        version_in(&self.unpack(packed)?)
    }

    /// The metadata of the object `packed`.
    pub(crate) fn metadata(&self, packed: &[u8]) -> Option<ObjectMeta> {
        let json = self.unpack(packed)?;
        Some(serde_json::from_slice::<Metadata>(&json).ok()?.metadata)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_packs_to_what_differs_from_the_first_and_unpacks_as_it_was() {
        let json = |i: usize| {
            compact(&serde_json::json!({
                "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
                "metadata": {
                    "finalizers": ["cache.example.com/finalizer"], "generation": 2,
                    "name": format!("memcached-{i}"), "namespace": format!("bench-{}", i % 10),
                    "resourceVersion": format!("{}", 200_000 + i * 7),
                    "uid": format!("9e8d7c6b-5a4f-4e3d-2c1b-{:012x}", i * 7919 * 104_729),
                },
                "spec": { "size": 2 },
                "status": { "conditions": [{
                    "message": format!("Deployment memcached-{i} for custom resource memcached-{i} with 2 replicas is available"),
                    "observedGeneration": 2, "reason": "Reconciling", "status": "True", "type": "Available",
                }]},
            }))
        };
        let packer = Packer::default();
        let first = packer.pack(&json(0));
        assert_eq!(packer.unpack(&first).unwrap(), json(0));
        let (mut unpacked, mut packed) = (0, 0);
        for i in 1..100 {
            let object = packer.pack(&json(i));
            assert_eq!(packer.unpack(&object).unwrap(), json(i), "{i}");
            (unpacked, packed) = (unpacked + json(i).len(), packed + object.len());
        }
        assert!(packed * 4 < unpacked, "{packed} B packed of {unpacked}");
        let version = packer.version(&packer.pack(&json(3)));
        assert_eq!(version.as_deref(), Some("200021"));
        let metadata = packer.metadata(&packer.pack(&json(4))).unwrap();
        assert_eq!(metadata.namespace.as_deref(), Some("bench-4"));
        // Something unlike the first object packs too; a damaged packing reads as nothing.
        let other = br#"{"kind":"ConfigMap","data":{"a":"b"}}"#;
        assert_eq!(packer.unpack(&packer.pack(other)).unwrap(), other);
        assert_eq!(packer.unpack(&first[..first.len() / 2]), None);
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
