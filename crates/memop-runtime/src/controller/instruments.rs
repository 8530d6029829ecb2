//! What runs around every reconcile ([`Instruments`]: time limit, tracing span, metrics, panic
//! recovery, retry backoff, the record of status writes), the resync with jitter, and events.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use tracing::Instrument;

use super::drift::fnv1a;
use super::{Error, Recorder, Result};
use crate::manager::metrics::Metrics;
use crate::shared::Shared;

/// Records an event on `object` with `reason` and `note`, with kubebuilder's action names
/// (`DeleteCR` for a `Deleting` warning, `Reconcile` otherwise). Events are informational: a
/// failure is logged, not returned.
pub(crate) async fn publish<K: Resource<DynamicType = ()>>(
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
pub(crate) struct Instruments {
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

    /// These instruments, retrying failures with `backoff` (the controller's own rate limit).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
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
        // A panic is a failure of this object, not of the controller: it is reported and
        // retried as any failure (controller-runtime recovers too).
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
    pub(super) fn wrote<K: Resource<DynamicType = ()>>(&self, object: &K) {
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
pub(super) fn resource_version(object: &impl Resource) -> Option<u64> {
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
/// overall, at most 10 retries a second after a burst of 100 (or the controller's own limit,
/// [`Builder::rate_limit`](super::Builder::rate_limit)), so that a failure of every
/// object at once (the API server down, a webhook gone) does not become a flood of retries.
/// A delay clamped at the 5 minutes is moved by up to a tenth either way, by the object (as
/// the resync is), so that the retries the clamp holds do not all come back in one second.
pub(crate) struct Backoff {
    /// Per object: consecutive failures, and when the last one happened.
    failures: Mutex<HashMap<String, (u32, Instant)>>,
    /// The overall rate, as the time at which the next retry would be on schedule (the
    /// "theoretical arrival time" of a token bucket): retries go out at most `rate` apart
    /// once `burst` of them are waiting.
    schedule: Mutex<Option<Instant>>,
    /// One retry per this, overall...
    rate: Duration,
    /// ... after this many at once.
    burst: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::limited(Self::RATE, Self::BURST)
    }
}

impl Backoff {
    const BASE: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(300);
    /// One retry per this, overall, unless the controller says otherwise...
    const RATE: Duration = Duration::from_millis(100);
    /// ... after this many at once.
    const BURST: u32 = 100;
    /// An object that still fails is retried at least every [`Self::MAX`]; an entry older than
    /// twice that belongs to an object that went away, and is dropped.
    const FORGET_AFTER: Duration = Duration::from_secs(600);

    /// A backoff whose retries go out at most one per `rate` overall, after a burst of
    /// `burst`.
    pub fn limited(rate: Duration, burst: u32) -> Self {
        Self {
            failures: Mutex::default(),
            schedule: Mutex::default(),
            rate,
            burst,
        }
    }

    /// Records a failure of `key` and returns when to retry it.
    pub fn failed<K: kube::Resource<DynamicType = ()>>(&self, key: &ObjectRef<K>) -> Action {
        self.failed_at(key, Instant::now())
    }

    fn failed_at<K: kube::Resource<DynamicType = ()>>(
        &self,
        key: &ObjectRef<K>,
        now: Instant,
    ) -> Action {
        Action::requeue(self.delay_at(key, now))
    }

    /// Records a failure of `key` at `now`, and returns how long to wait before retrying it.
    fn delay_at<K: kube::Resource<DynamicType = ()>>(
        &self,
        key: &ObjectRef<K>,
        now: Instant,
    ) -> Duration {
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
        let delay = delay.max(self.overall(now));
        if delay >= Self::MAX {
            // Clamped: give or take a tenth, by the object, so that objects that failed
            // together (ten thousand when the API server went down) do not come back in one
            // second, every five minutes.
            jittered(Self::MAX, &key.to_string())
        } else {
            delay
        }
    }

    /// Takes a place in the overall schedule at `now`: how long that retry must wait, at most
    /// [`Self::MAX`]. (Unbounded, a failure of thousands of objects at once, or failures
    /// faster than the rate for long, would push retries out by hours: the schedule is never
    /// let run further ahead than that.)
    fn overall(&self, now: Instant) -> Duration {
        let mut schedule = self.schedule.lock().expect("backoff lock");
        let horizon = now + self.rate * self.burst + Self::MAX;
        let next = (schedule.map_or(now, |at| at.max(now)) + self.rate).min(horizon);
        *schedule = Some(next);
        next.saturating_duration_since(now + self.rate * self.burst)
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

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
        // At the limit, give or take a tenth, by the object.
        let clamped = jittered(Duration::from_secs(300), &key.to_string());
        assert_eq!(backoff.failed(&key), Action::requeue(clamped));
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
    fn a_controllers_own_rate_spreads_its_retries_at_that_rate() {
        // Two a second after a burst of three.
        let backoff = Backoff::limited(Duration::from_millis(500), 3);
        let now = Instant::now();
        let delays: Vec<_> = (0..6)
            .map(|i| backoff.failed_at(&ObjectRef::<ConfigMap>::new(&format!("o{i}")), now))
            .collect();
        let first = Action::requeue(Duration::from_millis(5));
        assert_eq!(delays[..3], [first.clone(), first.clone(), first]);
        assert_eq!(delays[3], Action::requeue(Duration::from_millis(500)));
        assert_eq!(delays[5], Action::requeue(Duration::from_millis(1500)));
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
        let limit = |i: usize| Action::requeue(jittered(Backoff::MAX, &key(i).to_string()));
        assert_eq!(delays.last(), Some(&limit(9_999)));
        // And failures faster than the overall rate for an hour.
        for second in 0..3_600 {
            let at = now + Duration::from_secs(second);
            for i in 0..20 {
                backoff.failed_at(&key(i), at);
            }
        }
        let last = now + Duration::from_secs(3_599);
        assert_eq!(backoff.failed_at(&key(99_999), last), limit(99_999));
    }

    /// Ten thousand objects failing at once (the API server down): the retries the clamp
    /// holds at the backoff limit are spread over a fifth of it, not sent back as one herd in
    /// the second they failed in, period after period.
    #[test]
    fn clamped_retries_come_back_spread_out_not_as_a_herd() {
        let backoff = Backoff::default();
        let now = Instant::now();
        let key = |i: usize| ObjectRef::<ConfigMap>::new(&format!("o{i}")).within("ns");
        let delays: Vec<Duration> = (0..10_000)
            .map(|i| backoff.delay_at(&key(i), now))
            .collect();
        let mut per_second: HashMap<u64, usize> = HashMap::new();
        for delay in &delays {
            *per_second.entry(delay.as_secs()).or_default() += 1;
        }
        let (second, most) = per_second.iter().max_by_key(|(_, n)| **n).unwrap();
        println!("at most {most} of 10,000 retries in one second (the second {second} s after)");
        assert!(
            *most <= 200,
            "{most} of 10,000 retries in the second {second} s after the failure"
        );
        // Within a tenth of the limit either way, and the same object at the same place.
        let (low, high) = (Backoff::MAX.mul_f64(0.9), Backoff::MAX.mul_f64(1.1));
        assert!(
            delays.iter().all(|d| *d <= high),
            "a retry later than {high:?}"
        );
        let clamped = delays.iter().filter(|d| **d >= low).count();
        assert!(clamped > 6_000, "{clamped}");
        let again = Backoff::default();
        for i in 0..10_000 {
            again.failed_at(&key(i), now);
        }
        assert_eq!(
            again.delay_at(&key(9_999), now),
            backoff.delay_at(&key(9_999), now)
        );
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
}
