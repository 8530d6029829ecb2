//! The controller of one kind, as controller-runtime's builder
//! (`ControllerManagedBy(mgr).For(..).Owns(..).Complete(r)`) gives one:
//! a [`Builder`] says what to watch, a [`Reconciler`] says what the kind needs, and the
//! [`Controller`] it builds does everything around that, the same for every kind:
//!
//! - the watch of the kind and of what it owns, feeding the controller's priority queue (a
//!   change before what nobody changed: see `queue.rs`), whose workers reconcile until shutdown;
//! - around each reconcile ([`Instruments`]): the time limit, a span, the metrics, recovery
//!   from a panic, the per-object backoff of failures with an overall limit;
//! - the finalizer (added on first sight, [`Reconciler::cleanup`] run before deletion);
//! - the status: the conditions a reconcile set in its [`Report`] are written with one
//!   server-side apply, and only when they changed; its events are recorded.
//!
//! ```no_run
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//! # use kube::runtime::controller::Action;
//! # use memop_runtime::controller::{Builder, Reconciler, Report, Result};
//! # use memop_runtime::manager::Shared;
//! struct Context;
//!
//! impl Reconciler for Context {
//!     type Object = ConfigMap;
//!
//!     fn conditions(_: &ConfigMap) -> &[Condition] {
//!         &[]
//!     }
//!
//!     async fn apply(&self, _: &ConfigMap, report: &mut Report) -> Result<Action> {
//!         Ok(report.resync())
//!     }
//! }
//!
//! async fn run(shared: Shared) -> anyhow::Result<()> {
//!     Builder::new("configmaps", &shared).build(Context).run().await
//! }
//! ```

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cache::Key;
use super::instruments::Backoff;
use super::queue::{self, Priority, Requests};
use super::store::{self, Store};
use super::{
    Conditions, Error, Instruments, Recorder, Result, Truth, WatchScope, condition,
    owned_conditions, resync,
};
use crate::operand::Operand;
use crate::rbac::Rules;
use crate::shared::Shared;

/// How often an object is looked at again when nothing changed, unless [`Builder::resync`]
/// says otherwise.
pub const RESYNC: Duration = Duration::from_secs(300);

/// How long a report that can wait ([`Report::hold`]) waits at most while the controller's
/// owned objects are written in bulk: the [`Operand`] brings the object back as soon as the
/// burst ends (`Owned::hold`); this is in case that never comes.
const REPORT_WAIT: Duration = Duration::from_secs(30);

/// What a controller can reconcile: a Kubernetes object of a static kind, namespaced or
/// cluster-wide, that serde reads and writes (every k8s-openapi type, and every type
/// `#[derive(CustomResource)]` makes).
pub trait Kind:
    Resource<DynamicType = (), Scope: WatchScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: Resource<DynamicType = (), Scope: WatchScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// What a kind's controller does that is the kind's own; [`Controller`] does the rest.
///
/// Implement it on the controller's context (what its reconcile works with: a client, the
/// [`Operand`] it keeps, its configuration).
pub trait Reconciler: Send + Sync + Sized + 'static {
    /// The kind reconciled.
    type Object: Kind;

    /// The condition types this controller reports (its status apply holds these only, so
    /// other writers' conditions stay theirs).
    const CONDITIONS: &'static [&'static str] = &[condition::AVAILABLE, condition::DEGRADED];

    /// The top-level fields of the status, besides `conditions`, that this controller writes
    /// ([`Report::status_field`]): every status write holds each of them, as the reconcile
    /// reported it or else as the object has it, so that a write on a path that did not report
    /// one (an early failure) leaves it as it is. None unless said.
    const STATUS_FIELDS: &'static [&'static str] = &[];

    /// The status conditions `object` reports now.
    fn conditions(object: &Self::Object) -> &[Condition];

    /// The kinds this controller's [`Builder`] reconciles, owns and watches, with the verbs the
    /// runtime uses on each ([`Rules`]), for the role `make manifests` writes; it adds the
    /// controller module's `RULES`, the rules of the reconcile's own calls. The controller's
    /// test holds the two to what the built controller does ([`Controller::rules`]). None
    /// unless said: a controller of an older scaffold lists all of its rules in its `RULES`.
    fn rules() -> Rules {
        Rules::default()
    }

    /// Brings what `object` asks for about, and says how that went in `report`: the runtime
    /// then writes the conditions that changed and records the events. Return an error to be
    /// retried with backoff (the report is written first).
    ///
    /// It runs again for every change and every resync, so it should only write what
    /// differs from what it finds.
    fn apply(
        &self,
        object: &Self::Object,
        report: &mut Report,
    ) -> impl Future<Output = Result<Action>> + Send;

    /// Runs before `object` is deleted, when the controller has a finalizer
    /// ([`Builder::finalizer`]); the object stays until it succeeds. Objects it owns through an
    /// owner reference need nothing here: Kubernetes garbage-collects them.
    fn cleanup(
        &self,
        object: &Self::Object,
        report: &mut Report,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = (object, report);
        async { Ok(()) }
    }
}

/// What else brings an object of kind `K` to its reconcile, besides a change of its own: the
/// objects it owns ([`Builder::owns`]) or is related to ([`Builder::watches`]). Each gives its
/// requests, from the controller's cache, when the controller runs.
type Trigger<K> = Box<dyn FnOnce(&Store<K>) -> Requests + Send + Sync>;

/// Says what a controller watches and how; [`Builder::build`] gives the [`Controller`].
pub struct Builder<K: Kind> {
    name: &'static str,
    shared: Shared,
    watch: watcher::Config,
    last_applied: bool,
    finalizer: Option<&'static str>,
    field_manager: Option<String>,
    resync: Duration,
    status: bool,
    triggers: Vec<Trigger<K>>,
    /// The overall retry rate, per second, and its burst ([`Builder::rate_limit`]).
    rate_limit: Option<(u32, u32)>,
    /// The API access of what it was told to do, but the status writes ([`Controller::rules`]).
    rules: Rules,
}

impl<K: Kind> Builder<K> {
    /// The controller `name` (in logs, metrics and readiness) of the manager's `shared`
    /// things. It watches every object of its kind in the manager's namespace (or all),
    /// reacting to changes of their spec and metadata, not of their status.
    pub fn new(name: &'static str, shared: &Shared) -> Self {
        Self {
            name,
            shared: shared.clone(),
            watch: watcher::Config::default().any_semantic(),
            last_applied: false,
            finalizer: None,
            field_manager: None,
            resync: RESYNC,
            status: true,
            triggers: Vec::new(),
            rate_limit: None,
            rules: Rules::reconciles::<K>(),
        }
    }

    /// Watches the objects `config` selects instead (a label selector, say).
    pub fn watching(mut self, config: watcher::Config) -> Self {
        self.watch = config;
        self
    }

    /// Keeps each object's `kubectl apply` record (the annotation
    /// `kubectl.kubernetes.io/last-applied-configuration`) in the controller's cache, for a
    /// reconciler that reads it. Without this the cache leaves it out as it decodes an object (it
    /// holds the whole object again, and only `kubectl apply` reads it), as it leaves out
    /// `managedFields` always: the reconciler gets the object without them.
    pub fn keeps_last_applied(mut self) -> Self {
        self.last_applied = true;
        self
    }

    /// Adds `finalizer` to every object on first sight, so that its deletion waits for
    /// [`Reconciler::cleanup`].
    pub fn finalizer(mut self, finalizer: &'static str) -> Self {
        self.finalizer = Some(finalizer);
        self.rules = self.rules.finalizer();
        self
    }

    /// The field manager of the status writes (the operator's name, unless said here).
    pub fn field_manager(mut self, field_manager: &str) -> Self {
        self.field_manager = Some(field_manager.to_string());
        self
    }

    /// Looks at an object in sync again after `period` ([`RESYNC`] unless said), give or take
    /// a tenth: [`Report::resync`].
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Reconciles at most `max` objects at once, instead of the manager's
    /// `--max-concurrent-reconciles` (controller-runtime's per-controller
    /// `MaxConcurrentReconciles`): say, 1 for a controller whose reconciles share something
    /// that must not be changed by two at once, or more for one that waits on slow calls. 0
    /// means no limit.
    pub fn max_concurrent_reconciles(mut self, max: u16) -> Self {
        self.shared.max_concurrent_reconciles = max;
        self
    }

    /// Fails a reconcile that takes longer than `timeout` (its API calls included), instead of
    /// the manager's `--reconcile-timeout` (controller-runtime's per-controller
    /// `ReconciliationTimeout`): longer for a controller whose reconciles wait on slow calls,
    /// shorter for one that must never hold an object long. The object is retried with
    /// backoff, as after any failure.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.shared.reconcile_timeout = timeout;
        self
    }

    /// Retries failed reconciles at most `per_second` a second overall once `burst` of them
    /// are waiting, instead of 10 a second after 100 (controller-runtime's per-controller
    /// `RateLimiter`; each object's own backoff, 5 ms doubling up to 5 minutes, stays): lower
    /// for a controller whose failures cost an expensive call, higher for one with many objects
    /// that fail and recover together.
    pub fn rate_limit(mut self, per_second: u32, burst: u32) -> Self {
        self.rate_limit = Some((per_second.max(1), burst));
        self
    }

    /// Whether the controller writes the conditions its reconciles report into the objects'
    /// status (yes unless said). Say no for a kind whose status is another controller's (a
    /// kind of Kubernetes' own, another operator's): a force-applied `status.conditions` would
    /// replace that controller's conditions, or take the types over from it, and the two would
    /// fight. The report's events are still recorded.
    pub fn writes_status(mut self, writes: bool) -> Self {
        self.status = writes;
        self
    }

    /// Reconciles the owner of every object of `operand` that changes, as kube's
    /// `Controller::owns` and controller-runtime's `Owns()` do; fed by the operand's own
    /// cache, so that the kind is watched once. Call it once for each kind the controller owns.
    pub fn owns<O>(mut self, operand: &Operand<O>) -> Self
    where
        O: Kind + Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let operand = operand.clone();
        self.triggers
            .push(Box::new(move |_| operand.cache().owned_by::<K>().boxed()));
        self.rules = self.rules.owns::<O>();
        self
    }

    /// Reconciles the objects that `map` names whenever an object of kind `W` that `config`
    /// selects changes (is created, changed or deleted): controller-runtime's
    /// `Watches(&W{}, handler.EnqueueRequestsFromMapFunc(map))`, for objects that are related
    /// to the controller's without being owned by them (a Secret that an object names, say).
    ///
    /// `W` is watched in the manager's namespace (or all), from when the controller runs; the
    /// watch is kept an eye on as the controller's own is (`/readyz` names it `name` while it
    /// goes without an answer, and `memop_watch_errors_total{watch="<name>"}` counts its
    /// errors), and retried with backoff. Nothing of it is cached: `map` gets each object as
    /// it changes, with the controller's cache of its own objects ([`Store`]), and names the
    /// objects to reconcile (say, those in the cache that refer to it).
    pub fn watches<W, I>(
        mut self,
        name: &'static str,
        config: watcher::Config,
        map: impl Fn(W, &Store<K>) -> I + Send + Sync + 'static,
    ) -> Self
    where
        W: Kind,
        I: IntoIterator<Item = ObjectRef<K>> + 'static,
        I::IntoIter: Send,
    {
        self.rules = self.rules.watches::<W>();
        let shared = self.shared.clone();
        self.triggers.push(Box::new(move |objects| {
            let (api, pulse) = super::watched(&shared, name, super::scoped_api::<W>(&shared));
            let config = watcher::Config {
                bookmarks: true,
                ..config
            };
            let objects = objects.clone();
            super::cache::watch(api, config, super::cache::Paged::default())
                .default_backoff()
                .filter_map(move |event| {
                    // Listed (the first time, or again): low; changed or deleted: normal.
                    let (object, priority) = match event {
                        Ok(watcher::Event::InitApply(object)) => (object, Priority::Low),
                        Ok(watcher::Event::Apply(object) | watcher::Event::Delete(object)) => {
                            (object, Priority::Normal)
                        }
                        Ok(watcher::Event::Init | watcher::Event::InitDone) => {
                            return std::future::ready(None);
                        }
                        Err(err) => {
                            pulse.failed();
                            tracing::warn!(watch = name, error = %err, "cannot list or watch; retrying");
                            return std::future::ready(None);
                        }
                    };
                    let named = (map(object, &objects).into_iter()).map(move |key| (Key::from(&key), priority));
                    std::future::ready(Some(futures::stream::iter(named)))
                })
                .flatten()
                .boxed()
        }));
        self
    }

    /// The controller, reconciling with `reconciler`.
    pub fn build<R: Reconciler<Object = K>>(self, reconciler: R) -> Controller<R> {
        let field_manager = self
            .field_manager
            .unwrap_or_else(|| self.shared.reporter.controller.clone());
        // The status is written only where there is something of it to write.
        let writes_status =
            self.status && !(R::CONDITIONS.is_empty() && R::STATUS_FIELDS.is_empty());
        let rules = if writes_status {
            self.rules.writes_status()
        } else {
            self.rules
        };
        let (store, writer) = store::new();
        // Built while this replica waits to lead: its cache starts now (a warm standby).
        let cache = if self.shared.is_leading() {
            Cache::Cold(writer)
        } else {
            let warm = super::Warm::start(
                self.name,
                &self.shared,
                self.watch.clone(),
                writer,
                self.last_applied,
            );
            Cache::Warm(warm)
        };
        Controller {
            cache: Some(cache),
            store,
            instruments: match self.rate_limit {
                Some((per_second, burst)) => Instruments::new(self.name, &self.shared)
                    .with_backoff(Backoff::limited(Duration::from_secs(1) / per_second, burst)),
                None => Instruments::new(self.name, &self.shared),
            },
            recorder: Recorder::new(self.shared.client.clone(), self.shared.reporter.clone()),
            name: self.name,
            shared: self.shared,
            watch: self.watch,
            last_applied: self.last_applied,
            finalizer: self.finalizer,
            field_manager,
            resync: self.resync,
            status: self.status,
            triggers: self.triggers,
            rules,
            reconciler,
        }
    }
}

/// Where a controller's cache stands before it runs.
enum Cache<K: Resource<DynamicType = ()> + Clone + 'static> {
    /// Watching already: built on a standby.
    Warm(super::Warm<K>),
    /// Its watch starts when the controller runs.
    Cold(store::Writer<K>),
}

/// A kind's controller: its [`Reconciler`] with everything around it (see the module).
pub struct Controller<R: Reconciler> {
    name: &'static str,
    /// Taken when it runs.
    cache: Option<Cache<R::Object>>,
    store: Store<R::Object>,
    shared: Shared,
    watch: watcher::Config,
    /// Whether the cache keeps `kubectl apply`'s record ([`Builder::keeps_last_applied`]).
    last_applied: bool,
    finalizer: Option<&'static str>,
    field_manager: String,
    resync: Duration,
    /// Whether it writes the reported conditions ([`Builder::writes_status`]).
    status: bool,
    /// Taken when it runs.
    triggers: Vec<Trigger<R::Object>>,
    /// The API access of what it does ([`Controller::rules`]).
    rules: Rules,
    instruments: Instruments,
    recorder: Recorder,
    reconciler: R,
}

impl<R: Reconciler> crate::manager::run::Run for Controller<R> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(self) -> futures::future::BoxFuture<'static, anyhow::Result<()>> {
        Box::pin(Controller::run(self))
    }
}

impl<R: Reconciler> Controller<R> {
    /// The reconciler.
    pub fn reconciler(&self) -> &R {
        &self.reconciler
    }

    /// The controller's cache of its objects (a reader: clones see the same objects), filled
    /// once it runs (or at once on a standby). Sharded, it holds the objects of this replica's
    /// claimed buckets only.
    #[cfg(test)]
    pub(crate) fn store(&self) -> Store<R::Object> {
        self.store.clone()
    }

    /// The API access the runtime needs for what this controller was built to do: its kind
    /// listed and watched (and patched for a finalizer), its status written, events recorded,
    /// the kinds it owns and watches. [`Reconciler::rules`] and the module's `RULES` must grant
    /// all of it, and the controller's test says so:
    /// `R::rules().with(RULES).missing(&controller.rules())` is empty.
    pub fn rules(&self) -> Rules {
        self.rules.clone()
    }

    /// Runs the controller until the manager shuts down: what the manager runs once this
    /// replica leads.
    pub async fn run(mut self) -> anyhow::Result<()> {
        let mut requests = match self.cache.take() {
            Some(Cache::Warm(warm)) => warm.requests(),
            Some(Cache::Cold(writer)) => vec![super::new(
                self.name,
                &self.shared,
                self.watch.clone(),
                writer,
                self.last_applied,
            )],
            None => unreachable!("a controller runs once: run takes it"),
        };
        for trigger in std::mem::take(&mut self.triggers) {
            requests.push(trigger(&self.store));
        }
        // Sharded: the objects of buckets that become this replica's were skipped until then,
        // and may have changed meanwhile; every cached object is looked at again (those of
        // other buckets are skipped at once).
        if let Some(shard) = &self.shared.shard {
            let activations = futures::stream::unfold(shard.activations(), |mut rx| async {
                rx.changed().await.ok()?;
                Some(((), rx))
            });
            requests.push(queue::everything_on(activations, self.store.clone()));
        }
        let (name, shared, store) = (self.name, self.shared.clone(), self.store.clone());
        let cache = store.clone();
        let synced = async move { cache.wait_until_ready().await };
        shared.readiness.track(name, synced);
        let this = Arc::new(self);
        queue::run(name, &shared, store, requests, move |object| {
            let this = this.clone();
            async move {
                match this.reconcile(object.clone()).await {
                    Ok(action) => {
                        tracing::debug!(controller = this.name, name = %object.name_any(), "reconciled");
                        Ok(action)
                    }
                    Err(error) => Err(this.error_policy(&object, &error)),
                }
            }
        })
        .await;
        Ok(())
    }

    /// Reconciles `object` once, as the running controller would: what [`Self::run`] calls
    /// for each change (and tests call directly).
    ///
    /// Sharded (`--sharding`), an object outside this replica's active buckets is
    /// left alone (`await_change`: it comes back when its bucket becomes this replica's), and
    /// a reconcile under way is dropped the moment the replica loses its Lease, as a leader's
    /// are when it loses leadership.
    pub async fn reconcile(&self, object: Arc<R::Object>) -> Result<Action> {
        let Some(shard) = &self.shared.shard else {
            let work = self.dispatch(object.clone());
            return self.instruments.reconcile(object.as_ref(), work).await;
        };
        let Some(_turn) = shard.enter(object.meta()) else {
            return Ok(Action::await_change());
        };
        let work = self.dispatch(object.clone());
        tokio::select! {
            result = self.instruments.reconcile(object.as_ref(), work) => result,
            () = shard.lost() => Ok(Action::await_change()),
        }
    }

    /// When to retry a failed reconcile of `object`: after its backoff, as controller-runtime's
    /// default rate limiter (5 ms doubling per consecutive failure, at most 5 minutes; overall
    /// at most 10 retries a second after a burst of 100), the error logged and counted.
    pub(crate) fn error_policy(&self, object: &R::Object, error: &Error) -> Action {
        self.instruments.retry(object, error)
    }

    /// The finalizer's dispatch: apply, or cleanup before deletion.
    async fn dispatch(&self, object: Arc<R::Object>) -> Result<Action> {
        let Some(name) = self.finalizer else {
            return self.apply(&object).await;
        };
        let api = self.api(&object);
        let result = finalizer(&api, name, object, |event| async move {
            match event {
                finalizer::Event::Apply(object) => self.apply(&object).await,
                finalizer::Event::Cleanup(object) => self.cleanup(&object).await,
            }
        })
        .await;
        match result {
            // Deleted before its finalizer went on: there is nothing to do.
            Err(finalizer::Error::AddFinalizer(kube::Error::Api(status)))
                if status.is_not_found() =>
            {
                Ok(Action::await_change())
            }
            result => result.map_err(|err| Error::Finalizer(Box::new(err))),
        }
    }

    async fn apply(&self, object: &R::Object) -> Result<Action> {
        let mut report = self.report_for(object);
        let result = self.reconciler.apply(object, &mut report).await;
        self.publish(object, &mut report).await;
        match result {
            // While owned objects are written in bulk, they come first: a report of progress
            // waits (a failure is reported at once).
            Ok(_)
                if self.status
                    && report.held
                    && report.changes(R::conditions(object), R::CONDITIONS) =>
            {
                Ok(Action::requeue(REPORT_WAIT))
            }
            Ok(action) => {
                self.write_status(object, &report).await?;
                Ok(action)
            }
            Err(err) => {
                if let Err(status_err) = self.write_status(object, &report).await {
                    tracing::warn!(name = %object.name_any(), error = %status_err, "could not record the failure in the status");
                }
                Err(err)
            }
        }
    }

    async fn cleanup(&self, object: &R::Object) -> Result<Action> {
        let mut report = self.report_for(object);
        let result = self.reconciler.cleanup(object, &mut report).await;
        self.publish(object, &mut report).await;
        self.write_status(object, &report).await?;
        result?;
        // The finalizer goes next, and the object with it: nothing to remember of it.
        self.instruments.forget(object);
        Ok(Action::await_change())
    }

    fn report_for(&self, object: &R::Object) -> Report {
        Report::new(object, R::conditions(object), self.resync)
    }

    /// Records the events of `report`.
    async fn publish(&self, object: &R::Object, report: &mut Report) {
        for (type_, reason, note) in report.events.drain(..) {
            super::publish(&self.recorder, object, type_, &reason, note).await;
        }
    }

    async fn write_status(&self, object: &R::Object, report: &Report) -> Result<()> {
        if !self.status {
            return Ok(());
        }
        self.instruments
            .write_conditions(
                &self.api(object),
                object,
                &self.field_manager,
                R::CONDITIONS,
                R::conditions(object),
                &report.conditions,
                (R::STATUS_FIELDS, &report.fields),
            )
            .await
    }

    /// The API of `object`'s kind in its namespace (or cluster-wide).
    fn api(&self, object: &R::Object) -> Api<R::Object> {
        <<R::Object as Resource>::Scope as super::sealed::Scope>::api(
            self.shared.client.clone(),
            object.namespace().as_deref(),
        )
    }
}

/// What a reconcile says about its object: the status conditions it reports (as the runtime
/// writes them, once, after the reconcile), the events it records, and when to come back.
pub struct Report {
    conditions: Vec<Condition>,
    generation: Option<i64>,
    /// Events to record: type, reason, note.
    events: Vec<(EventType, String, String)>,
    held: bool,
    resync: Action,
    name: String,
    /// The status fields besides the conditions that the reconcile reported
    /// ([`Report::status_field`]); null for one that is to be absent.
    fields: serde_json::Map<String, serde_json::Value>,
}

impl Report {
    pub(crate) fn new<K: Resource<DynamicType = ()>>(
        object: &K,
        conditions: &[Condition],
        period: Duration,
    ) -> Self {
        let generation = object.meta().generation;
        Self {
            conditions: conditions.to_vec(),
            generation,
            events: Vec::new(),
            held: false,
            resync: resync(object, period),
            name: object.name_any(),
            fields: serde_json::Map::new(),
        }
    }

    /// Reports status field `field` (one of [`Reconciler::STATUS_FIELDS`]) as `value`, or as
    /// absent when `value` serializes to null (`None`): the runtime writes it with the
    /// conditions, in the one status write after the reconcile, made when either differs from
    /// what the object's status holds. The book's CronJob rebuilds `status.active` and
    /// `status.lastScheduleTime` from its Jobs on every reconcile so.
    pub fn status_field(&mut self, field: &str, value: impl Serialize) {
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self.fields.insert(field.to_string(), value);
    }

    /// Sets condition `type_` (its `lastTransitionTime` kept unless its status changes).
    pub fn set(&mut self, type_: &str, status: impl Into<Truth>, reason: &str, message: String) {
        Conditions::new(&mut self.conditions, self.generation).set(type_, status, reason, message);
    }

    /// Reports a failure: not [`condition::AVAILABLE`], and [`condition::DEGRADED`], both
    /// with `reason` and `message`.
    pub fn failing(&mut self, reason: &str, message: String) {
        Conditions::new(&mut self.conditions, self.generation).failing(reason, message);
    }

    /// Reports a problem the reconcile cannot get past by itself (see [`Self::failing`]), with
    /// a Warning event and an error in the log: return the error it gives, and the object is
    /// retried with backoff until someone fixes the cause. A retry that finds the status
    /// already saying so records no event again and logs only the retry (as a warning).
    pub fn stuck(&mut self, reason: &str, message: String) -> Error {
        let known = self.condition(condition::DEGRADED).is_some_and(|c| {
            c.status == "True"
                && c.reason == reason
                && c.message == message
                && c.observed_generation == self.generation
        });
        self.failing(reason, message.clone());
        if !known {
            tracing::error!(name = %self.name, "{message}");
            self.event(EventType::Warning, reason, message.clone());
        }
        Error::Invalid(message)
    }

    /// The reasons of the events recorded so far.
    #[cfg(test)]
    pub(crate) fn recorded(&self) -> Vec<&str> {
        self.events
            .iter()
            .map(|(_, reason, _)| reason.as_str())
            .collect()
    }

    /// Condition `type_` as the report has it now.
    pub(crate) fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// The generation of the object's spec that this report is about.
    pub(crate) fn generation(&self) -> Option<i64> {
        self.generation
    }

    /// Records an event on the object, with `reason` and `note` (repeats of one become a
    /// series).
    pub fn event(&mut self, type_: EventType, reason: &str, note: String) {
        self.events.push((type_, reason.to_string(), note));
    }

    /// Lets the status write wait while the controller writes its owned objects in bulk (a
    /// fleet resized at once): a report of progress, never one of failure.
    pub fn hold(&mut self) {
        self.held = true;
    }

    /// Come back after the controller's resync period, give or take a tenth (the same for the
    /// same object), so that objects made together do not all come back together.
    pub fn resync(&self) -> Action {
        self.resync.clone()
    }

    /// Whether the conditions of the types in `owned` differ from `current`'s.
    fn changes(&self, current: &[Condition], owned: &[&str]) -> bool {
        owned_conditions(current, owned) != owned_conditions(&self.conditions, owned)
    }
}

impl Instruments {
    /// Writes `conditions`, of the types in `owned` (the ones this controller reports), into
    /// the status of `object`, unless they are what `current` (its status conditions as read)
    /// already holds: a server-side apply of the status subresource as `field_manager`, with
    /// only those types, so that other writers' conditions stay theirs (`conditions` is a list
    /// keyed by type). An object deleted meanwhile is no error: there is nothing left to
    /// report on. Any other failure is one, a 404 from a missing status subresource included.
    ///
    /// The status fields the controller writes (`fields`: those it declares, and those the
    /// reconcile reported, [`Report::status_field`]) go in the same write, which is made when
    /// a reported one differs from the object's too. Each declared field is in every write, as
    /// reported or else as the object has it: a server-side apply removes what its manager
    /// set before and leaves out.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn write_conditions<K>(
        &self,
        api: &Api<K>,
        object: &K,
        field_manager: &str,
        owned: &[&str],
        current: &[Condition],
        conditions: &[Condition],
        (fields, reported): (&[&str], &serde_json::Map<String, serde_json::Value>),
    ) -> Result<()>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    {
        let ours = owned_conditions(conditions, owned);
        let null = serde_json::Value::Null;
        let status = if fields.is_empty() && reported.is_empty() {
            null.clone()
        } else {
            serde_json::to_value(object)
                .ok()
                .and_then(|object| object.get("status").cloned())
                .unwrap_or_default()
        };
        let fields_differ = reported
            .iter()
            .any(|(field, value)| status.get(field).unwrap_or(&null) != value);
        if owned_conditions(current, owned) == ours && !fields_differ {
            return Ok(());
        }
        let name = object.name_any();
        let mut written = serde_json::Map::new();
        if !owned.is_empty() {
            written.insert("conditions".into(), serde_json::json!(ours));
        }
        let declared = fields.iter().map(|field| field.to_string());
        for field in declared.chain(reported.keys().cloned()) {
            let value = reported
                .get(&field)
                .or_else(|| status.get(&field))
                .unwrap_or(&null);
            if !value.is_null() {
                written.insert(field, value.clone());
            }
        }
        let status = written;
        let patch = Patch::Apply(serde_json::json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": status,
        }));
        let params = PatchParams::apply(field_manager).force();
        match api.patch_status(&name, &params, &patch).await {
            Ok(written) => {
                self.wrote(&written);
                Ok(())
            }
            // The object itself is gone: the API server names it in the details. (A 404
            // without them means the status subresource or the version is not served.)
            Err(kube::Error::Api(err))
                if err.is_not_found() && err.details.as_ref().is_some_and(|d| d.name == name) =>
            {
                tracing::debug!(%name, "gone before its status was written");
                Ok(())
            }
            Err(err) => Err(err.into()),
        }
    }
}
