//! What every controller shares: the error type, [`Builder`] (its watches feeding a priority
//! queue whose workers reconcile until shutdown, with a time limit, tracing span, metrics, panic
//! recovery, retry backoff and status writes around every reconcile), the resync with jitter,
//! status conditions, the cache of owned objects ([`Owned`]), an event `Recorder`, and the
//! hash that keeps reconciles free of needless writes ([`stamp`]).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::manager::sharding::Shard;
use crate::manager::watchdog::{self, Pulse};
use crate::shared::Shared;

mod builder;
mod cache;
mod clock;
mod drift;
mod events;
mod instruments;
mod owned;
mod queue;
mod status;
mod store;
pub use builder::{Builder, Controller, Kind, RESYNC, Reconciler, Report};
pub use clock::Clock;
pub(crate) use drift::{APPLIED_HASH, claims_fingerprint, fingerprint, fingerprint_patch, in_sync};
pub use drift::{label_value, stamp};
pub(crate) use events::Recorder;
use instruments::resource_version;
pub use instruments::resync;
pub(crate) use instruments::{Instruments, publish};
pub use owned::Owned;
pub(crate) use owned::{Every, Observed};
#[cfg(test)]
pub(crate) use queue::Priority;
pub(crate) use status::{Conditions, owned_conditions};
pub use status::{Truth, condition};
pub use store::Store;

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API request failed: {0}")]
    /// A request to the API server failed.
    Kube(#[from] kube::Error),
    #[error("finalizer: {0}")]
    /// Adding or removing the finalizer failed, or the cleanup it runs did.
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
    #[error("{0}")]
    /// The object cannot be reconciled as it is (a message for its status and the log).
    Invalid(String),
    #[error("the reconcile did not finish within {0:?}")]
    /// The reconcile took longer than the reconcile timeout.
    Timeout(Duration),
    #[error("the reconcile panicked: {0}")]
    /// The reconcile panicked (a bug): the object is retried with backoff, as after any
    /// other failure, and the controller goes on with the others.
    Panicked(String),
}

/// The result of a reconcile step.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The requests of a controller's watch of `api` and `config` (what kube's
/// `Controller::new(api, config)` watches), with the objects' `managedFields` left out of its
/// cache: no reconcile reads them, and they are often the larger part of an object (one entry
/// per writer: the user, the finalizer, the status). At 10,000 objects that is megabytes. So is
/// `kubectl apply`'s record of the object (`kubectl.kubernetes.io/last-applied-configuration`),
/// left out too unless `whole` (see [`Builder::keeps_last_applied`]). Its events are made
/// requests by [`queue::requests`].
///
/// The watch is kept an eye on as `name` (give it the controller's name): the manager is not
/// ready while it has gone without an answer for longer than [`WATCH_SILENCE_LIMIT`] (a
/// half-open connection, say), and its errors are counted in `memop_watch_errors_total`. It asks
/// for bookmarks whatever `config` says, so that a quiet watch still shows life.
///
/// [`WATCH_SILENCE_LIMIT`]: crate::manager::WATCH_SILENCE_LIMIT
pub(crate) fn new<K>(
    name: &'static str,
    shared: &Shared,
    config: watcher::Config,
    writer: store::Writer<K>,
    whole: bool,
) -> queue::Requests
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + Send + Sync,
    K: 'static,
    K::Scope: WatchScope,
{
    queue::requests(name, reflected(name, shared, config, writer, whole))
}

/// The events of the watch of `api` as `writer`'s store applied them: what [`new`] and
/// [`Warm::start`] feed their controller with. Its relists are applied in place, and, sharded,
/// the store holds only the objects of the buckets this replica claims (see [`cache`]).
fn reflected<K>(
    name: &'static str,
    shared: &Shared,
    config: watcher::Config,
    writer: store::Writer<K>,
    whole: bool,
) -> impl futures::Stream<Item = watcher::Result<watcher::Event<K>>> + Send + use<K>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + Send + Sync,
    K: 'static,
    K::Scope: WatchScope,
{
    let (api, pulse) = watched(shared, name, scoped_api::<K>(shared));
    let config = watcher::Config {
        bookmarks: true,
        ..config
    };
    let holding = shared.shard.as_ref().map(Shard::hold);
    let paged = cache::Paged::default();
    let watch = move || cache::watch(api.clone(), config.clone(), paged.clone());
    let store = writer.as_reader();
    let cached = move |kept: u64| store.outside(kept);
    let events = cache::follow(watch, holding.clone(), cache::own_bucket, cached)
        .inspect(move |event| {
            if event.is_err() {
                pulse.failed();
            }
        })
        .modify(cache::projection(whole));
    store::reflect(events, writer, move || {
        if let Some(holding) = &holding {
            holding.listed();
        }
    })
}

/// The `Api` of kind `K` that the controllers of `shared` watch: in the watched namespace, or
/// all of them (cluster-scoped kinds: all).
pub(crate) fn scoped_api<K>(shared: &Shared) -> Api<K>
where
    K: Resource<DynamicType = ()>,
    K::Scope: WatchScope,
{
    <K::Scope as sealed::Scope>::api(shared.client.clone(), shared.watch_namespace.as_deref())
}

/// Starts the watchdog of watch `name` (see `manager/watchdog.rs`): returns `api` on a client
/// whose answers show the watch alive, and the pulse to tell of the watch's errors.
pub(crate) fn watched<K>(shared: &Shared, name: &'static str, api: Api<K>) -> (Api<K>, Arc<Pulse>)
where
    K: Resource<DynamicType = ()>,
    K::Scope: WatchScope,
{
    let pulse = watchdog::start(name, &shared.readiness, &shared.metrics);
    let namespace = api.namespace().map(str::to_owned);
    let client = watchdog::answers_beat(api.into_client(), pulse.clone());
    let api = <K::Scope as sealed::Scope>::api(client, namespace.as_deref());
    (api, pulse)
}

/// The cache of a controller built while its replica waits to lead (see
/// [`Manager::register`](crate::manager::Manager::register)): its watch lists and follows the
/// API server from the start, as the leader's does, so that the replica takes over with its cache
/// synced instead of listing every object again. What changes before it leads is only cached;
/// once it leads, [`Warm::requests`] asks for every cached object once, then each change.
pub(crate) struct Warm<K: Resource<DynamicType = ()> + Clone + 'static> {
    reader: Store<K>,
    changes: tokio::sync::mpsc::UnboundedReceiver<queue::Request>,
}

impl<K> Warm<K>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug + Send + Sync,
    K: 'static,
    K::Scope: WatchScope,
{
    /// Starts watching `api` as [`new`] would, in a task of its own that ends with the manager.
    pub(crate) fn start(
        name: &'static str,
        shared: &Shared,
        config: watcher::Config,
        writer: store::Writer<K>,
        whole: bool,
    ) -> Self {
        let reader = writer.as_reader();
        let (sender, changes) = tokio::sync::mpsc::unbounded_channel();
        let events = reflected(name, shared, config, writer, whole).inspect(move |event| {
            if let Ok(watcher::Event::InitDone) = event {
                tracing::info!(controller = name, "listed; the cache is synced");
            }
        });
        let requests = queue::requests(name, events);
        let (leading, shutdown) = (shared.leading.subscribe(), shared.shutdown.clone());
        tokio::spawn(async move {
            let forward = requests.for_each(|request| {
                // Before this replica leads, the cache is all: its controller reconciles
                // everything it holds when it starts.
                if *leading.borrow() {
                    let _ = sender.send(request);
                }
                std::future::ready(())
            });
            tokio::select! {
                () = forward => {}
                () = shutdown.wait() => {}
            }
        });
        Self { reader, changes }
    }

    /// The requests of the controller over this cache: every object it holds once it has
    /// synced (a takeover: [`Priority::Low`](queue::Priority::Low)), then each change.
    pub(crate) fn requests(self) -> Vec<queue::Requests> {
        let reader = self.reader.clone();
        let synced = futures::stream::once(async move {
            reader.wait_until_ready().await;
        });
        let changes = futures::stream::unfold(self.changes, |mut changes| async move {
            let request = changes.recv().await?;
            Some((request, changes))
        });
        vec![changes.boxed(), queue::everything_on(synced, self.reader)]
    }
}

/// The scope of a kind a controller watches, namespaced or cluster-wide: k8s-openapi's
/// scopes (sealed: what the runtime does with one is its own).
pub trait WatchScope: sealed::Scope {}

impl<S: sealed::Scope> WatchScope for S {}

mod sealed {
    use super::{Api, Client, ClusterResourceScope, NamespaceResourceScope, Resource};

    /// What the runtime needs of a scope: how to make a kind's `Api` in the same namespace on
    /// another client (the watchdog's).
    pub trait Scope: Sized {
        /// The `Api` of `K` on `client`, in `namespace` (or all of them).
        fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
        where
            K: Resource<DynamicType = (), Scope = Self>;
    }

    impl Scope for NamespaceResourceScope {
        fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
        where
            K: Resource<DynamicType = (), Scope = Self>,
        {
            match namespace {
                Some(namespace) => Api::namespaced(client, namespace),
                None => Api::all(client),
            }
        }
    }

    impl Scope for ClusterResourceScope {
        fn api<K>(client: Client, _: Option<&str>) -> Api<K>
        where
            K: Resource<DynamicType = (), Scope = Self>,
        {
            Api::all(client)
        }
    }
}
