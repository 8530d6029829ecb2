//! What every controller shares: the error type, [`Builder`] (kube's `Controller` driven until
//! shutdown), what runs around every reconcile ([`Instruments`]: time limit, tracing span,
//! metrics, retry backoff, status writes), the resync with jitter, status conditions, the cache of owned
//! objects ([`Owned`]), an event [`Recorder`], and the comparison that keeps reconciles free of needless writes
//! ([`stamp`], [`in_sync`]).

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::api::{Api, Patch};
use kube::runtime::Controller as KubeController;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

use crate::manager::{Metrics, Shared};

mod builder;
mod events;
mod owned;
pub use builder::{Builder, Controller, RESYNC, Reconciler, Report};
pub use events::Recorder;
pub use owned::{Observed, Owned};

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

/// Runs `controller` until the manager shuts down: with the manager's settings
/// ([`Shared::controller_config`]), its readiness tracking the controller's cache, and its
/// results logged ([`Controller::run`] calls it).
pub(crate) async fn run<K, Ctx, ReconcileFut>(
    name: &'static str,
    shared: &Shared,
    controller: KubeController<K>,
    reconcile: impl FnMut(Arc<K>, Arc<Ctx>) -> ReconcileFut,
    error_policy: impl Fn(Arc<K>, &Error, Arc<Ctx>) -> Action,
    ctx: Arc<Ctx>,
) -> anyhow::Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    ReconcileFut: Future<Output = Result<Action>> + Send + 'static,
    Ctx: Send + Sync + 'static,
{
    let shutdown = shared.shutdown.clone();
    let controller = controller
        .with_config(shared.controller_config())
        .graceful_shutdown_on(async move { shutdown.wait().await });
    shared.readiness.track(name, controller.store());
    tracing::info!(controller = name, "starting");
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(%object, "reconciled"),
                // error_policy has logged it already.
                Err(kube::runtime::controller::Error::ReconcilerFailed(..)) => {}
                // A change of an object deleted meanwhile: nothing to do.
                Err(kube::runtime::controller::Error::ObjectNotFound(object)) => {
                    tracing::debug!(%object, "gone before its reconcile")
                }
                // The API server failed a list or watch: the cache stays behind (and the
                // manager unready) until it succeeds. Said at each retry, so that a cause the
                // controller cannot fix (a conversion webhook nobody serves, a missing CRD or
                // role) is in the log, not only a quiet controller.
                Err(kube::runtime::controller::Error::QueueError(err)) => tracing::warn!(
                    controller = name,
                    error = %err,
                    "cannot list or watch; retrying"
                ),
                Err(err) => tracing::warn!(controller = name, error = %err, "controller error"),
            }
        })
        .await;
    tracing::info!(controller = name, "stopped");
    Ok(())
}

/// kube's `Controller::new(api, config)`, with the objects' `managedFields` left out of its
/// cache: no reconcile reads them, and they are often the larger part of an object (one entry
/// per writer: the user, the finalizer, the status). At 10,000 objects that is megabytes.
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
    api: Api<K>,
    config: watcher::Config,
) -> KubeController<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::Scope: WatchScope,
{
    let (api, pulse) = shared.watched(name, api);
    let config = watcher::Config {
        bookmarks: true,
        ..config
    };
    let (reader, writer) = reflector::store();
    let objects = watcher(api, config)
        .inspect(move |event| {
            if event.is_err() {
                pulse.failed();
            }
        })
        .modify(|object| object.managed_fields_mut().clear())
        .reflect(writer)
        .applied_objects();
    KubeController::for_stream(objects, reader)
}

/// The scope of a kind a controller watches, namespaced or cluster-wide: how to make its `Api`
/// in the same namespace on another client (the watchdog's). Implemented for
/// k8s-openapi's scopes (sealed).
pub trait WatchScope: sealed::Sealed + Sized {
    /// The `Api` of `K` on `client`, in `namespace` (or all of them).
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>;
}

impl WatchScope for NamespaceResourceScope {
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

impl WatchScope for ClusterResourceScope {
    fn api<K>(client: Client, _: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>,
    {
        Api::all(client)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NamespaceResourceScope {}
    impl Sealed for super::ClusterResourceScope {}
}

/// Records an event on `object` with `reason` and `note`, with kubebuilder's action names
/// (`DeleteCR` for a `Deleting` warning, `Reconcile` otherwise). Events are informational: a
/// failure is logged, not returned.
pub async fn publish<K: Resource<DynamicType = ()>>(
    recorder: &Recorder,
    object: &K,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let action = match reason {
        "Deleting" => "DeleteCR",
        _ => "Reconcile",
    };
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: action.into(),
        secondary: None,
    };
    // Without its resourceVersion, which every status write changes, the reference stays the
    // same, so the Recorder turns repeats of an event into one series instead of new Events.
    let mut reference = object.object_ref(&());
    reference.resource_version = None;
    if let Err(err) = recorder.publish(&event, &reference).await {
        tracing::warn!(name = %object.name_any(), error = %err, "could not record an event");
    }
}

/// What runs around every reconcile of a controller, so that its module holds only the logic
/// of its kind: the time limit, a tracing span, the metrics, the retry backoff, and the status
/// writes, with what they left.
pub struct Instruments {
    controller: &'static str,
    metrics: Arc<Metrics>,
    backoff: Backoff,
    timeout: Duration,
    /// Per object: the resourceVersion of this controller's last status write, and when it
    /// was made, until an object at least that new comes to reconcile (or the record is
    /// [`WRITTEN_FOR`] old: the object went away).
    written: Mutex<HashMap<String, (u64, Instant)>>,
}

/// How long the record of a status write is kept at most: the watch brings the written object
/// within moments, unless it was deleted, and then nothing else would remove the record.
const WRITTEN_FOR: Duration = Duration::from_secs(600);

/// When an object older than this controller's own last write of it comes to reconcile, how
/// long to wait for the newer one before reconciling anyway.
const STALE_RECHECK: Duration = Duration::from_secs(5);

impl Instruments {
    /// The instruments of the controller `controller`, registered in the manager's metrics.
    pub fn new(controller: &'static str, shared: &Shared) -> Self {
        shared
            .metrics
            .controller(controller, shared.max_concurrent_reconciles);
        Self {
            controller,
            metrics: shared.metrics.clone(),
            backoff: Backoff::default(),
            timeout: shared.reconcile_timeout,
            written: Mutex::default(),
        }
    }

    /// Runs `reconcile` of `object` within the reconcile timeout ([`Shared::reconcile_timeout`]),
    /// in a span with the object's name, namespace and generation, and counts it; a success
    /// resets the object's backoff.
    ///
    /// An object older than what this controller's last status write returned is not
    /// reconciled: the controller's cache has not caught up with that write yet, whose watch
    /// event brings the object as it is now. (Reconciling the old one would send again what
    /// was already written.)
    pub async fn reconcile<K>(
        &self,
        object: &K,
        reconcile: impl Future<Output = Result<Action>>,
    ) -> Result<Action>
    where
        K: Resource<DynamicType = ()>,
    {
        if self.older_than_written(object) {
            tracing::debug!(controller = self.controller, name = %object.name_any(), "older than this controller's last write; waiting for the newer one");
            return Ok(Action::requeue(STALE_RECHECK));
        }
        let span = tracing::info_span!(
            "reconcile",
            controller = self.controller,
            name = %object.name_any(),
            namespace = object.namespace().unwrap_or_default(),
            generation = object.meta().generation.unwrap_or_default(),
        );
        let started = Instant::now();
        let _work = self.metrics.start(self.controller);
        // A panic is a failure of this object, not of the controller: kube's Controller would
        // end with it, and the manager with the controller (controller-runtime recovers too).
        let reconcile = AssertUnwindSafe(reconcile).catch_unwind();
        let result = match tokio::time::timeout(self.timeout, reconcile)
            .instrument(span.clone())
            .await
        {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => {
                let error = Error::Panicked(panic_message(panic.as_ref()));
                span.in_scope(|| tracing::error!(controller = self.controller, %error));
                Err(error)
            }
            Err(_) => Err(Error::Timeout(self.timeout)),
        };
        self.metrics
            .reconciled(self.controller, result.is_ok(), started.elapsed());
        if result.is_ok() {
            self.backoff.succeeded(&ObjectRef::from_obj(object));
        }
        result
    }

    /// When to retry a failed reconcile of `object`: after its exponential backoff, and never
    /// faster than the controller's overall retry rate allows (see [`Backoff`]).
    pub fn retry<K: Resource<DynamicType = ()>>(&self, object: &K, error: &Error) -> Action {
        tracing::warn!(controller = self.controller, name = %object.name_any(), %error, "reconcile failed; will retry");
        self.metrics.retried(self.controller);
        self.backoff.failed(&ObjectRef::from_obj(object))
    }

    /// Records that a write of this controller left `object` as it is.
    fn wrote<K: Resource<DynamicType = ()>>(&self, object: &K) {
        self.wrote_at(object, Instant::now());
    }

    fn wrote_at<K: Resource<DynamicType = ()>>(&self, object: &K, now: Instant) {
        let Some(version) = resource_version(object) else {
            return;
        };
        let key = ObjectRef::from_obj(object).to_string();
        let mut written = self.written.lock().expect("written lock");
        // Records of objects that went away, dropped whenever the map has doubled since.
        if written.len() >= 64 && written.len().is_power_of_two() {
            written.retain(|_, (_, at)| now.duration_since(*at) < WRITTEN_FOR);
        }
        written.insert(key, (version, now));
    }

    /// Forgets what this controller knows of `object`, which is going away (its backoff, its
    /// last status write).
    pub fn forget<K: Resource<DynamicType = ()>>(&self, object: &K) {
        let key = ObjectRef::from_obj(object);
        self.written
            .lock()
            .expect("written lock")
            .remove(&key.to_string());
        self.backoff.succeeded(&key);
    }

    /// Whether `object` is older than this controller's last write of it; an object as new is
    /// proof that the cache caught up, and the record goes.
    fn older_than_written<K: Resource<DynamicType = ()>>(&self, object: &K) -> bool {
        let Some(version) = resource_version(object) else {
            return false;
        };
        let key = ObjectRef::from_obj(object).to_string();
        let mut written = self.written.lock().expect("written lock");
        match written.get(&key) {
            Some(&(last, _)) if version < last => true,
            Some(_) => {
                written.remove(&key);
                false
            }
            None => false,
        }
    }
}

/// An object's resourceVersion as a number (etcd's revision); `None` where the API server
/// hands out opaque versions, and then nothing is compared.
fn resource_version(object: &impl Resource) -> Option<u64> {
    object.meta().resource_version.as_deref()?.parse().ok()
}

/// What a panic said, when it said it with a string (as `panic!` and `expect` do).
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// When to look at `object`, in sync now, again: after `period`, give or take a tenth, the
/// same for the same object. Objects created together then do not all come back in the same
/// second, period after period, as one wave of reconciles.
pub fn resync<K: Resource<DynamicType = ()>>(object: &K, period: Duration) -> Action {
    Action::requeue(jittered(period, &ObjectRef::from_obj(object).to_string()))
}

/// `period`, moved by up to a tenth either way by a hash of `key`.
fn jittered(period: Duration, key: &str) -> Duration {
    // A number in [0, 1) from the key's hash (its bits mixed: FNV-1a's high bits barely
    // differ between keys that differ in their last character), then a factor in [0.9, 1.1).
    let mut bits = fnv1a(key.as_bytes());
    for (shift, multiplier) in [(30, 0xbf58_476d_1ce4_e5b9_u64), (27, 0x94d0_49bb_1331_11eb)] {
        bits = (bits ^ (bits >> shift)).wrapping_mul(multiplier);
    }
    let unit = ((bits ^ (bits >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
    period.mul_f64(0.9 + 0.2 * unit)
}

/// The backoff of failed reconciles, as controller-runtime's default rate limiter: per object,
/// 5 ms doubling on each consecutive failure, at most 5 minutes, a success resetting it; and
/// overall, at most 10 retries a second after a burst of 100, so that a failure of every
/// object at once (the API server down, a webhook gone) does not become a flood of retries.
#[derive(Default)]
pub struct Backoff {
    /// Per object: consecutive failures, and when the last one happened.
    failures: Mutex<HashMap<String, (u32, Instant)>>,
    /// The overall rate, as the time at which the next retry would be on schedule (the
    /// "theoretical arrival time" of a token bucket): retries go out at most [`Self::RATE`]
    /// apart once [`Self::BURST`] of them are waiting.
    schedule: Mutex<Option<Instant>>,
}

impl Backoff {
    const BASE: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(300);
    /// One retry per this, overall...
    const RATE: Duration = Duration::from_millis(100);
    /// ... after this many at once.
    const BURST: u32 = 100;
    /// An object that still fails is retried at least every [`Self::MAX`]; an entry older than
    /// twice that belongs to an object that went away, and is dropped.
    const FORGET_AFTER: Duration = Duration::from_secs(600);

    /// Records a failure of `key` and returns when to retry it.
    pub fn failed<K: kube::Resource<DynamicType = ()>>(&self, key: &ObjectRef<K>) -> Action {
        self.failed_at(key, Instant::now())
    }

    fn failed_at<K: kube::Resource<DynamicType = ()>>(
        &self,
        key: &ObjectRef<K>,
        now: Instant,
    ) -> Action {
        // Entries of objects that went away, looked for whenever the map has doubled (not at
        // every failure: that would walk every failing object per failure).
        let entries = self.failures.lock().expect("backoff lock").len();
        if entries >= 64 && entries.is_power_of_two() {
            self.forget_stale(now);
        }
        let mut failures = self.failures.lock().expect("backoff lock");
        let (count, last) = failures.entry(key.to_string()).or_insert((0, now));
        let delay = Self::BASE
            .saturating_mul(2u32.saturating_pow(*count))
            .min(Self::MAX);
        *count = count.saturating_add(1);
        *last = now;
        drop(failures);
        Action::requeue(delay.max(self.overall(now)))
    }

    /// Takes a place in the overall schedule at `now`: how long that retry must wait, at most
    /// [`Self::MAX`]. (Unbounded, a failure of thousands of objects at once, or failures
    /// faster than the rate for long, would push retries out by hours: the schedule is never
    /// let run further ahead than that.)
    fn overall(&self, now: Instant) -> Duration {
        let mut schedule = self.schedule.lock().expect("backoff lock");
        let horizon = now + Self::RATE * Self::BURST + Self::MAX;
        let next = (schedule.map_or(now, |at| at.max(now)) + Self::RATE).min(horizon);
        *schedule = Some(next);
        next.saturating_duration_since(now + Self::RATE * Self::BURST)
    }

    /// Records a success of `key`: its next failure starts the backoff again.
    pub fn succeeded<K: kube::Resource<DynamicType = ()>>(&self, key: &ObjectRef<K>) {
        self.failures
            .lock()
            .expect("backoff lock")
            .remove(&key.to_string());
    }

    /// Drops the entries whose last failure is [`Self::FORGET_AFTER`] older than `now`.
    fn forget_stale(&self, now: Instant) {
        let mut failures = self.failures.lock().expect("backoff lock");
        failures.retain(|_, (_, last)| now.duration_since(*last) < Self::FORGET_AFTER);
    }
}

/// The condition types and reasons the controllers report, in the vocabulary of kubebuilder's
/// deploy-image controllers, so that users and tools read them the same way.
pub mod condition {
    /// The operand is up: its Deployment rolled out with every replica available.
    pub const AVAILABLE: &str = "Available";
    /// Something needs attention: a failed rollout, a configuration error, a deletion.
    pub const DEGRADED: &str = "Degraded";

    /// Being reconciled, or reconciled and in sync.
    pub const RECONCILING: &str = "Reconciling";
    /// The size changed and the Deployment is being scaled to it.
    pub const RESIZING: &str = "Resizing";
    /// The Deployment's pods are still starting.
    pub const PROGRESSING: &str = "Progressing";
    /// The object is being deleted and its finalizer runs.
    pub const FINALIZING: &str = "Finalizing";
    /// The Deployment did not roll out (`ProgressDeadlineExceeded`, `ReplicaFailure`).
    pub const ROLLOUT_FAILED: &str = "RolloutFailed";
    /// The operator's configuration is missing something (an image variable).
    pub const MISCONFIGURED: &str = "Misconfigured";
    /// A Deployment of that name exists and is controlled by something else.
    pub const NOT_OWNED: &str = "DeploymentNotOwned";
    /// Writing the Deployment failed.
    pub const CREATE_FAILED: &str = "CreateFailed";
    /// Updating the Deployment failed.
    pub const UPDATE_FAILED: &str = "UpdateFailed";
    /// A change of the Deployment waits for other rollouts to complete
    /// (`--max-concurrent-rollouts`).
    pub const ROLLOUT_WAITING: &str = "RolloutWaiting";
}

/// The status of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truth {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known yet.
    Unknown,
}

impl Truth {
    /// As the API server spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Truth {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// The status conditions of one object, being updated for one generation of its spec.
pub struct Conditions<'a> {
    list: &'a mut Vec<Condition>,
    generation: Option<i64>,
}

impl<'a> Conditions<'a> {
    /// The conditions `list` of an object at `generation` (its `metadata.generation`).
    pub fn new(list: &'a mut Vec<Condition>, generation: Option<i64>) -> Self {
        Self { list, generation }
    }

    /// Sets condition `type_`, keeping its `lastTransitionTime` unless its status changes (as
    /// `meta.SetStatusCondition` does in Go), so that setting it again changes nothing.
    pub fn set(&mut self, type_: &str, status: impl Into<Truth>, reason: &str, message: String) {
        let status = status.into().as_str();
        let last_transition_time = match self.list.iter().find(|c| c.type_ == type_) {
            Some(existing) if existing.status == status => existing.last_transition_time.clone(),
            // The API server keeps whole seconds; so do we, so that a re-read compares equal.
            _ => Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_default()),
        };
        let condition = Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message,
            observed_generation: self.generation,
            last_transition_time,
        };
        match self.list.iter_mut().find(|c| c.type_ == type_) {
            Some(existing) => *existing = condition,
            None => self.list.push(condition),
        }
    }

    /// Reports a failure: not [`condition::AVAILABLE`], and [`condition::DEGRADED`], both with
    /// `reason` and `message`.
    pub fn failing(&mut self, reason: &str, message: String) {
        self.set(condition::AVAILABLE, false, reason, message.clone());
        self.set(condition::DEGRADED, true, reason, message);
    }
}

/// The conditions of `list` whose type is one of `types`: what a controller puts in its status
/// apply, so that it owns only its own conditions and leaves other writers' alone.
pub fn owned_conditions(list: &[Condition], types: &[&str]) -> Vec<Condition> {
    list.iter()
        .filter(|c| types.contains(&c.type_.as_str()))
        .cloned()
        .collect()
}

/// `value` as a label value (at most 63 characters of `[A-Za-z0-9._-]`, starting and ending
/// with an alphanumeric one): itself when it is one; otherwise its valid characters, cut to 52,
/// then `-` and 10 hex digits of a hash of the whole value, so that it stays unique and stable.
pub fn label_value(value: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let edge = |c: char| !c.is_ascii_alphanumeric();
    if value.len() <= 63 && value.chars().all(valid) && value.trim_matches(edge) == value {
        return value.to_string();
    }
    let kept: String = value.chars().filter(|&c| valid(c)).take(52).collect();
    let kept = kept.trim_matches(edge);
    let hash = format!("{:010x}", fnv1a(value.as_bytes()) & 0xff_ffff_ffff);
    if kept.is_empty() {
        hash
    } else {
        format!("{kept}-{hash}")
    }
}

/// The 64-bit FNV-1a hash: short, and the same in every build (label values and selectors
/// derived from it must never change; std's hasher makes no such promise).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The annotation in which each applied object carries the hash of what was applied.
pub const APPLIED_HASH: &str = "memop.rs/applied-hash";

/// The annotation in which an applied object carries the [`fingerprint`] of the fields applied
/// to it, when an admission webhook or policy rewrote one of them on the way in: what
/// [`Owned::applied`] keeps in memory, kept for the operator's next process too, which would
/// otherwise take the rewrite for drift and apply again (see [`fingerprint_patch`]). That
/// process believes it only once a dry run of its apply gives the same fields
/// ([`Observed::Claimed`]): anyone who may patch the object can write the annotation, and the
/// webhook that rewrote may be gone.
pub const APPLIED_FINGERPRINT: &str = "memop.rs/applied-fingerprint";

/// `object` with its [`APPLIED_HASH`] annotation: the hash of everything else in it.
pub fn stamp<K: Resource + Serialize>(mut object: K) -> K {
    let hash = hash(&serde_json::to_value(&object).unwrap_or_default());
    object
        .annotations_mut()
        .insert(APPLIED_HASH.to_string(), hash);
    object
}

/// Whether `observed` needs no apply of `desired` (both stamped with [`stamp`]), which keeps
/// reconciles in steady state free of writes while still letting server-side apply prune:
/// - a different hash means the desired object changed (say, a new operator version dropped a
///   field): apply, and the API server removes what is no longer sent;
/// - otherwise it is in sync if it [`contains`] every field we set, or if our fields look
///   exactly as they did right after this process's last apply (`applied`, the [`fingerprint`]
///   of its result), which is what an admission webhook that rewrites one of them leaves.
pub fn in_sync<K: Resource + Serialize>(
    observed: &K,
    desired: &K,
    applied: Option<&String>,
) -> bool {
    if observed.annotations().get(APPLIED_HASH) != desired.annotations().get(APPLIED_HASH) {
        return false;
    }
    let observed = serde_json::to_value(observed).unwrap_or_default();
    let wanted = serde_json::to_value(desired).unwrap_or_default();
    contains(&observed, &wanted)
        || applied.is_some_and(|seen| *seen == hash(&project(&observed, &wanted)))
}

/// Whether `observed`, stamped as `desired` is, carries in [`APPLIED_FINGERPRINT`] the
/// [`fingerprint`] of its fields: what an earlier process recorded after an apply that admission
/// rewrote (or what anyone who may patch it wrote there): to be checked with a dry run.
pub fn claims_fingerprint<K: Resource + Serialize>(observed: &K, desired: &K) -> bool {
    observed.annotations().get(APPLIED_HASH) == desired.annotations().get(APPLIED_HASH)
        && observed
            .annotations()
            .get(APPLIED_FINGERPRINT)
            .is_some_and(|claimed| *claimed == fingerprint(observed, desired))
}

/// The merge patch that records in `applied`, what an apply of `desired` returned, the
/// [`fingerprint`] of its fields ([`APPLIED_FINGERPRINT`]), when an admission webhook or policy
/// rewrote one of them; `None` when it [`contains`] every field of `desired`, or already
/// carries that fingerprint. Send it with the field manager of the applies: one more write, once
/// per change of the desired object, spares an apply at every restart of the operator.
pub fn fingerprint_patch<K: Resource + Serialize>(
    applied: &K,
    desired: &K,
) -> Option<Patch<Value>> {
    let observed = serde_json::to_value(applied).ok()?;
    let wanted = serde_json::to_value(desired).ok()?;
    if contains(&observed, &wanted) {
        return None;
    }
    let fingerprint = hash(&project(&observed, &wanted));
    if applied.annotations().get(APPLIED_FINGERPRINT) == Some(&fingerprint) {
        return None;
    }
    Some(Patch::Merge(serde_json::json!({
        "metadata": { "annotations": { APPLIED_FINGERPRINT: fingerprint } },
    })))
}

/// The hash of the fields of `observed` that `desired` sets: compared by [`in_sync`].
pub fn fingerprint<K: Serialize>(observed: &K, desired: &K) -> String {
    let observed = serde_json::to_value(observed).unwrap_or_default();
    let wanted = serde_json::to_value(desired).unwrap_or_default();
    hash(&project(&observed, &wanted))
}

/// The parts of `observed` at the paths that `desired` sets (whole lists at list paths).
fn project(observed: &Value, desired: &Value) -> Value {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d
            .iter()
            .map(|(k, v)| (k.clone(), o.get(k).map_or(Value::Null, |ov| project(ov, v))))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        _ => observed.clone(),
    }
}

/// A stable hash of a JSON value, as 16 hex digits.
fn hash(value: &Value) -> String {
    format!("{:016x}", fnv1a(value.to_string().as_bytes()))
}

/// True when every field set in `desired` has the same value in `observed`.
///
/// The API server fills in defaults (a container's `terminationMessagePath`, a port's
/// `protocol`, …), so an object it returns never equals the one we sent; what matters is that
/// everything we asked for is there.
pub fn contains(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d
            .iter()
            .all(|(k, v)| o.get(k).is_some_and(|ov| contains(ov, v))),
        // A list of objects is usually a map keyed by a field (containers by name, ports by
        // number) that other field managers may add to: each wanted element must be there.
        (Value::Array(o), Value::Array(d)) if d.iter().all(Value::is_object) => {
            d.iter().all(|dv| o.iter().any(|ov| contains(ov, dv)))
        }
        // A list of scalars (a command, capabilities) is atomic: it must be equal.
        (Value::Array(o), Value::Array(d)) => o == d,
        _ => observed == desired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn contains_ignores_server_defaults_but_not_changes() {
        let desired = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 80}]}});
        let observed = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 80, "protocol": "TCP"}], "paused": false}});
        assert!(contains(&observed, &desired));
        let scaled = json!({"spec": {"replicas": 1, "ports": [{"containerPort": 80}]}});
        assert!(!contains(&scaled, &desired));
        let extra_port = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 81}, {"containerPort": 80}]}});
        assert!(
            contains(&extra_port, &desired),
            "another manager's port is not drift"
        );
        let command = json!({"command": ["memcached", "-v"]});
        assert!(!contains(
            &json!({"command": ["memcached", "-v", "-x"]}),
            &command
        ));
    }

    #[test]
    fn label_values_are_valid_stable_and_distinct() {
        assert_eq!(label_value("memcached-sample"), "memcached-sample");
        let long = "a".repeat(253);
        let value = label_value(&long);
        assert_eq!(value.len(), 63);
        assert_eq!(value, label_value(&long), "stable");
        assert_ne!(value, label_value(&"a".repeat(252)), "distinct");
        assert!(value.starts_with(&"a".repeat(52)));
        for odd in ["_1.6", ".x", "-", "a/b", "1.6_"] {
            let value = label_value(odd);
            assert!(value.len() <= 63, "{value}");
            assert!(
                value.starts_with(|c: char| c.is_ascii_alphanumeric()),
                "{value}"
            );
            assert!(
                value.ends_with(|c: char| c.is_ascii_alphanumeric()),
                "{value}"
            );
        }
        assert_eq!(label_value("_1.6").split('-').next(), Some("1.6"));
    }

    #[test]
    fn only_owned_conditions_are_kept() {
        let condition = |type_: &str| Condition {
            type_: type_.into(),
            status: "True".into(),
            reason: "R".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        };
        let list = [
            condition("Available"),
            condition("Backup"),
            condition("Degraded"),
        ];
        let owned = owned_conditions(&list, &[condition::AVAILABLE, condition::DEGRADED]);
        let types: Vec<_> = owned.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Available", "Degraded"]);
    }

    #[test]
    fn in_sync_until_the_desired_object_or_our_fields_change() {
        let object = |data: serde_json::Value| -> ConfigMap {
            serde_json::from_value(json!({ "metadata": { "name": "a" }, "data": data })).unwrap()
        };
        let desired = stamp(object(json!({ "size": "2" })));
        // What the server returns: ours, plus what others (or defaults) added.
        let mut observed = desired.clone();
        observed
            .data
            .as_mut()
            .unwrap()
            .insert("other".into(), "x".into());
        assert!(in_sync(&observed, &desired, None));

        // A new desired object (one field dropped): the hash differs, so apply and prune.
        let newer = stamp(object(json!({})));
        assert!(!in_sync(&observed, &newer, None));

        // Someone changed one of our fields: drift.
        let mut drifted = observed.clone();
        drifted
            .data
            .as_mut()
            .unwrap()
            .insert("size".into(), "5".into());
        assert!(!in_sync(&drifted, &desired, None));
        // ... unless that is how our own last apply came back (an admission webhook's rewrite).
        let applied = fingerprint(&drifted, &desired);
        assert!(in_sync(&drifted, &desired, Some(&applied)));
        let mut again = drifted.clone();
        again
            .data
            .as_mut()
            .unwrap()
            .insert("size".into(), "6".into());
        assert!(!in_sync(&again, &desired, Some(&applied)));

        // The same, for a process that did not make that apply: the object carries it.
        assert_eq!(
            fingerprint_patch(&observed, &desired),
            None,
            "nothing rewritten"
        );
        let Some(Patch::Merge(patch)) = fingerprint_patch(&drifted, &desired) else {
            panic!("a rewrite to record")
        };
        let mut recorded = drifted.clone();
        let fingerprint = &patch["metadata"]["annotations"][APPLIED_FINGERPRINT];
        recorded.annotations_mut().insert(
            APPLIED_FINGERPRINT.into(),
            fingerprint.as_str().unwrap().into(),
        );
        // A fingerprint on the object is a claim to check, not proof.
        assert!(!in_sync(&recorded, &desired, None));
        assert!(claims_fingerprint(&recorded, &desired));
        assert_eq!(
            fingerprint_patch(&recorded, &desired),
            None,
            "recorded already"
        );
        let mut changed = recorded.clone();
        changed
            .data
            .as_mut()
            .unwrap()
            .insert("size".into(), "6".into());
        assert!(
            !claims_fingerprint(&changed, &desired),
            "a later change is drift"
        );
    }

    #[test]
    fn backoff_doubles_and_resets() {
        let backoff = Backoff::default();
        let key = ObjectRef::<ConfigMap>::new("a").within("ns");
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_millis(5))
        );
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_millis(10))
        );
        for _ in 0..30 {
            backoff.failed(&key);
        }
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_secs(300))
        );
        backoff.succeeded(&key);
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_millis(5))
        );
    }

    #[test]
    fn retries_of_many_objects_are_spread_out_after_a_burst() {
        let backoff = Backoff::default();
        let now = Instant::now();
        let delays: Vec<_> = (0..120)
            .map(|i| {
                backoff.failed_at(
                    &ObjectRef::<ConfigMap>::new(&format!("o{i}")).within("ns"),
                    now,
                )
            })
            .collect();
        // The first hundred at their own (first) backoff; then 100 ms apart.
        let first = Action::requeue(Duration::from_millis(5));
        assert!(delays[..100].iter().all(|d| *d == first));
        assert_eq!(delays[100], Action::requeue(Duration::from_millis(100)));
        assert_eq!(delays[119], Action::requeue(Duration::from_millis(2000)));
        // Later, the schedule has room again.
        let later = now + Duration::from_secs(60);
        let key = ObjectRef::<ConfigMap>::new("late").within("ns");
        assert_eq!(backoff.failed_at(&key, later), first);
    }

    #[test]
    fn the_overall_retry_delay_is_never_longer_than_the_backoff_limit() {
        let backoff = Backoff::default();
        let now = Instant::now();
        let key = |i: usize| ObjectRef::<ConfigMap>::new(&format!("o{i}")).within("ns");
        // Ten thousand objects failing at once (the API server down, say).
        let delays: Vec<_> = (0..10_000)
            .map(|i| backoff.failed_at(&key(i), now))
            .collect();
        let limit = Action::requeue(Backoff::MAX);
        assert_eq!(delays.last(), Some(&limit));
        // And failures faster than the overall rate for an hour.
        for second in 0..3_600 {
            let at = now + Duration::from_secs(second);
            for i in 0..20 {
                backoff.failed_at(&key(i), at);
            }
        }
        let last = now + Duration::from_secs(3_599);
        assert_eq!(backoff.failed_at(&key(99_999), last), limit);
    }

    #[test]
    fn records_of_status_writes_do_not_outlive_their_objects() {
        let written: Mutex<HashMap<String, (u64, Instant)>> = Mutex::default();
        let instruments = Instruments {
            controller: "test",
            metrics: Arc::default(),
            backoff: Backoff::default(),
            timeout: Duration::from_secs(1),
            written,
        };
        let object = |i: usize| -> ConfigMap {
            serde_json::from_value(serde_json::json!({ "metadata": {
                "name": format!("o{i}"), "namespace": "ns", "resourceVersion": "7" } }))
            .unwrap()
        };
        let start = Instant::now();
        // A thousand objects written and deleted (the watch never brings them back).
        for i in 0..1_000 {
            instruments.wrote_at(&object(i), start);
        }
        let later = start + WRITTEN_FOR;
        for i in 1_000..2_100 {
            instruments.wrote_at(&object(i), later);
        }
        let left = instruments.written.lock().unwrap().len();
        assert!(
            left <= 1_100,
            "{left} records of 2,100 objects, 1,000 of them gone"
        );
        // An object whose cleanup ran is forgotten at once.
        instruments.forget(&object(2_000));
        assert!(
            !instruments
                .written
                .lock()
                .unwrap()
                .contains_key("ConfigMap.v1./o2000.ns")
        );
    }

    #[test]
    fn resyncs_are_spread_within_a_tenth_and_stable() {
        let period = Duration::from_secs(300);
        let delays: Vec<_> = (0..200)
            .map(|i| jittered(period, &format!("ns/o{i}")))
            .collect();
        assert!(
            delays
                .iter()
                .all(|d| *d >= period.mul_f64(0.9) && *d < period.mul_f64(1.1))
        );
        let early = delays.iter().filter(|d| **d < period).count();
        assert!(
            (60..140).contains(&early),
            "spread both ways: {early} of 200 early"
        );
        assert_eq!(
            jittered(period, "ns/o7"),
            delays[7],
            "the same for the same object"
        );
    }

    #[test]
    fn backoff_forgets_objects_that_stopped_failing_long_ago() {
        let backoff = Backoff::default();
        let key = ObjectRef::<ConfigMap>::new("gone").within("ns");
        backoff.failed(&key);
        backoff.forget_stale(Instant::now() + Duration::from_secs(60));
        assert_eq!(
            backoff.failures.lock().unwrap().len(),
            1,
            "a recent failure stays"
        );
        // Later than any retry of a live object can come: the object is gone.
        backoff.forget_stale(Instant::now() + Backoff::FORGET_AFTER);
        assert!(backoff.failures.lock().unwrap().is_empty());
    }

    #[test]
    fn setting_a_condition_again_keeps_its_transition_time() {
        let long_ago = Time(Timestamp::from_second(946_684_800).unwrap()); // 2000-01-01
        let mut list = vec![Condition {
            type_: "Available".into(),
            status: "True".into(),
            reason: "Reconciling".into(),
            message: "ok".into(),
            observed_generation: Some(1),
            last_transition_time: long_ago.clone(),
        }];
        Conditions::new(&mut list, Some(2)).set("Available", true, "Reconciling", "still".into());
        assert_eq!(list.len(), 1);
        assert_eq!(
            list[0].last_transition_time, long_ago,
            "same status: time kept"
        );
        assert_eq!(list[0].message, "still");
        assert_eq!(list[0].observed_generation, Some(2));
        Conditions::new(&mut list, Some(2)).set("Available", false, "Failed", "down".into());
        assert_ne!(
            list[0].last_transition_time, long_ago,
            "status changed: time moves"
        );
        Conditions::new(&mut list, Some(2)).set("Degraded", false, "Reconciling", "fine".into());
        assert_eq!(list.len(), 2);
    }
}
