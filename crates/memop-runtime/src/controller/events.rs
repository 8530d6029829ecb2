//! An events.k8s.io/v1 event recorder that stays small at scale, and writes a repeated event
//! as client-go's does.
//!
//! kube's `Recorder` writes a new Event the first time and a patch of its `series` for every
//! repeat within six minutes, and to recognise repeats it keeps every Event it wrote in the last
//! six minutes, whole, in one hash table, and scans that table on every publish. At 10,000
//! objects, each with one `Created` event, that table is a single allocation of about 21 MiB, a
//! fifth of the manager's peak memory (memop's docs/performance.md); and an event a reconcile repeats
//! every 30 seconds on 10,000 objects is 330 patches a second. This recorder keeps, per recent
//! event, only what a repeat needs (the Event's name, its namespace and counts) under a 64-bit
//! hash of its identity, at most 4,096 of them (client-go's correlator's LRU), and forgets
//! them in the order they expire instead of scanning everything; and it writes as client-go's `events` broadcaster does: the first occurrence
//! (a new Event) and the second (its `series`), then counts later repeats in memory, writing
//! the count when the series ends (six minutes after its last occurrence) and every 30 minutes
//! while it goes on.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use serde_json::json;

/// How long after its last occurrence an event is still continued as a series (client-go's
/// and kube's six minutes); then the series ends, and its count is written.
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);
/// How often a series that goes on has its count written (client-go's 30 minutes).
const SERIES_REFRESH: SignedDuration = SignedDuration::from_mins(30);
/// How often the recorder looks for series to end or refresh.
const FLUSH_EVERY: Duration = Duration::from_secs(60);
/// How many recent events the recorder remembers at most, the oldest forgotten first (as
/// client-go's correlator, whose cache is an LRU of 4,096): a fleet created at once is an event
/// per object, and 30,000 of them would otherwise be held for six minutes. An event forgotten
/// so and repeated starts a new Event, as in client-go.
const REMEMBERED: usize = 4096;

/// Publishes events about objects, as client-go's recorder does, with a bounded memory of the
/// recent ones. Cheap to clone: clones share that memory.
#[derive(Clone)]
pub(crate) struct Recorder {
    client: Client,
    reporter: Reporter,
    recent: Arc<Mutex<Recent>>,
    /// Whether the task that writes the counts of ended and long series runs (started by the
    /// first repeat; it ends with the last clone of the recorder).
    flushing: Arc<std::sync::Once>,
}

impl Recorder {
    /// A recorder writing as `reporter` (the controller's name, and this replica's).
    pub(crate) fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            recent: Arc::default(),
            flushing: Arc::new(std::sync::Once::new()),
        }
    }

    /// Records `event` about the object `regarding` (its namespace is the Event's; a
    /// cluster-scoped object's events go to `default`). A repeat within six minutes of the
    /// last one (same type, action, reason, object and related object) continues the series
    /// of the Event already written: the second occurrence is written at once, later ones are
    /// counted and their count written when the series ends or every 30 minutes.
    ///
    /// # Errors
    ///
    /// The API server's, when it refuses the Event.
    pub(crate) async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = identity(event, regarding);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let repeat = self.recent().repeat(key, namespace, now);
        match repeat {
            Some(Repeat::Counted) => {
                self.start_flushing();
                Ok(())
            }
            Some(Repeat::Write(series)) => {
                let result = self.write_series(&series, now).await;
                self.recent().written_series(key, series.count, now);
                result
            }
            None => {
                let new = self.event(event, regarding, now);
                let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
                let created = events.create(&PostParams::default(), &new).await?;
                let written = Written {
                    name: created.metadata.name.unwrap_or_default(),
                    namespace: namespace.to_string(),
                    count: 1,
                    written: 1,
                    written_at: now,
                };
                self.recent().written(key, written, now);
                Ok(())
            }
        }
    }

    /// Writes the counts of the series that ended by `now` (their last occurrence six minutes
    /// ago) or went on for 30 minutes since their count was last written, as client-go's
    /// broadcaster does with its timers. The recorder calls it every minute once an event
    /// repeated; tests call it with the time they want.
    pub(crate) async fn flush(&self, now: Timestamp) {
        let due = self.recent().due(now);
        for series in due {
            if let Err(err) = self.write_series(&series, now).await {
                tracing::debug!(event = %series.name, error = %err, "could not write an event's count");
            }
        }
    }

    /// Patches the series of an Event with its count.
    async fn write_series(&self, series: &Series, now: Timestamp) -> Result<(), kube::Error> {
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), &series.namespace);
        let patch = Patch::Merge(json!({ "series": EventSeries {
            count: series.count,
            last_observed_time: MicroTime(series.last.unwrap_or(now)),
        } }));
        events
            .patch(&series.name, &PatchParams::default(), &patch)
            .await
            .map(|_| ())
    }

    /// Starts the task that flushes the series every minute, once; it holds the recorder's
    /// memory weakly, and ends when the recorder is dropped.
    fn start_flushing(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.flushing.call_once(|| {
            let (client, reporter) = (self.client.clone(), self.reporter.clone());
            let recent: Weak<Mutex<Recent>> = Arc::downgrade(&self.recent);
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(FLUSH_EVERY).await;
                    let Some(recent) = recent.upgrade() else {
                        return;
                    };
                    let recorder = Self {
                        client: client.clone(),
                        reporter: reporter.clone(),
                        recent,
                        flushing: Arc::new(std::sync::Once::new()),
                    };
                    recorder.flush(Timestamp::now()).await;
                }
            });
        });
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent
            .lock()
            .expect("the recent events are never poisoned")
    }

    /// A new Event for `event` about `regarding`, named as kube and client-go name them: the
    /// object's name and the time in hex nanoseconds.
    fn event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let name = regarding
            .name
            .as_deref()
            .unwrap_or(&self.reporter.controller);
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
            ),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            ..K8sEvent::default()
        }
    }
}

/// What makes two events the same event for a series (client-go's key, without the
/// reporter, which is the recorder's own): type, action, reason, the object (by API version,
/// kind, namespace, name and uid) and the related one. Hashed to 64 bits: a collision, about
/// one in 10^11 with 10,000 recent events, would only add a count to another object's Event.
fn identity(event: &Event, regarding: &ObjectReference) -> u64 {
    fn reference(reference: &ObjectReference, hasher: &mut DefaultHasher) {
        reference.api_version.hash(hasher);
        reference.kind.hash(hasher);
        reference.namespace.hash(hasher);
        reference.name.hash(hasher);
        reference.uid.hash(hasher);
    }
    let mut hasher = DefaultHasher::new();
    event.type_.hash(&mut hasher);
    event.action.hash(&mut hasher);
    event.reason.hash(&mut hasher);
    reference(regarding, &mut hasher);
    if let Some(related) = &event.secondary {
        reference(related, &mut hasher);
    }
    hasher.finish()
}

/// An Event written recently: how many times it happened, and how many its series on the API
/// server says.
struct Written {
    name: String,
    namespace: String,
    count: i32,
    written: i32,
    written_at: Timestamp,
}

/// A series' count to write.
#[derive(Debug, PartialEq)]
struct Series {
    name: String,
    namespace: String,
    count: i32,
    /// When it last happened (`None`: now).
    last: Option<Timestamp>,
}

/// What a repeat of a recent event does.
#[derive(Debug, PartialEq)]
enum Repeat {
    /// The second occurrence: its series is written at once.
    Write(Series),
    /// A later one: counted, written later.
    Counted,
}

/// The events written in the last [`SERIES_WINDOW`], by identity, and the order in which they
/// expire.
#[derive(Default)]
struct Recent {
    events: HashMap<u64, (Written, Timestamp)>,
    /// (last occurrence, identity), oldest first. An event that happens again gets a newer
    /// entry; its older ones are skipped when they come up.
    expiry: VecDeque<(Timestamp, u64)>,
    /// The counts of series that ended before they were written, to write.
    ended: Vec<Series>,
}

impl Recent {
    /// The repeat that an event of identity `key` happening at `now` is, if it is one.
    fn repeat(&mut self, key: u64, namespace: &str, now: Timestamp) -> Option<Repeat> {
        self.forget_expired(now);
        let (written, last) = self.events.get_mut(&key)?;
        written.count += 1;
        *last = now;
        self.expiry.push_back((now, key));
        if written.written > 1 {
            return Some(Repeat::Counted);
        }
        Some(Repeat::Write(Series {
            name: written.name.clone(),
            namespace: namespace.to_string(),
            count: written.count,
            last: Some(now),
        }))
    }

    /// Remembers that the event of identity `key` was written at `now`.
    fn written(&mut self, key: u64, written: Written, now: Timestamp) {
        self.events.insert(key, (written, now));
        self.expiry.push_back((now, key));
        while self.events.len() > REMEMBERED
            && let Some((at, key)) = self.expiry.pop_front()
        {
            self.forget(at, key);
        }
    }

    /// Remembers that the series of `key` was written with `count` at `now`.
    fn written_series(&mut self, key: u64, count: i32, now: Timestamp) {
        if let Some((written, _)) = self.events.get_mut(&key) {
            written.written = written.written.max(count);
            written.written_at = now;
        }
    }

    /// The series to write at `now`: those that ended with a count not yet written, and
    /// those whose count was last written 30 minutes ago or more and has grown since.
    fn due(&mut self, now: Timestamp) -> Vec<Series> {
        self.forget_expired(now);
        let mut due = std::mem::take(&mut self.ended);
        for (written, last) in self.events.values_mut() {
            if written.count > written.written && written.written_at + SERIES_REFRESH <= now {
                due.push(Series {
                    name: written.name.clone(),
                    namespace: written.namespace.clone(),
                    count: written.count,
                    last: Some(*last),
                });
                written.written = written.count;
                written.written_at = now;
            }
        }
        due
    }

    fn forget_expired(&mut self, now: Timestamp) {
        while let Some(&(at, key)) = self.expiry.front() {
            if at + SERIES_WINDOW > now {
                break;
            }
            self.expiry.pop_front();
            self.forget(at, key);
        }
        if self.events.is_empty() {
            // Release what a burst of events (a restart, a fleet-wide change) made them grow to.
            self.events.shrink_to_fit();
            self.expiry.shrink_to_fit();
        }
    }

    /// Forgets the event `key` whose occurrence at `at` left the expiry queue, if that was its
    /// last occurrence; a series whose last counts were not written yet gets them written.
    fn forget(&mut self, at: Timestamp, key: u64) {
        if self.events.get(&key).is_some_and(|(_, last)| *last == at)
            && let Some((written, last)) = self.events.remove(&key)
            && written.count > written.written
        {
            self.ended.push(Series {
                name: written.name,
                namespace: written.namespace,
                count: written.count,
                last: Some(last),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("cache.example.com/v1alpha1".into()),
            kind: Some("Memcached".into()),
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    fn written(name: &str, at: Timestamp) -> Written {
        Written {
            name: name.into(),
            namespace: "default".into(),
            count: 1,
            written: 1,
            written_at: at,
        }
    }

    #[test]
    fn an_event_is_the_same_whatever_its_note_or_resource_version() {
        let mut other_version = reference("a");
        other_version.resource_version = Some("42".into());
        assert_eq!(
            identity(&event("Created", "one"), &reference("a")),
            identity(&event("Created", "two"), &other_version)
        );
        assert_ne!(
            identity(&event("Created", "one"), &reference("a")),
            identity(&event("Created", "one"), &reference("b"))
        );
        assert_ne!(
            identity(&event("Created", "one"), &reference("a")),
            identity(&event("Updated", "one"), &reference("a"))
        );
        let mut warning = event("Created", "one");
        warning.type_ = EventType::Warning;
        assert_ne!(
            identity(&event("Created", "one"), &reference("a")),
            identity(&warning, &reference("a"))
        );
    }

    #[test]
    fn the_second_occurrence_is_written_later_ones_counted_and_written_when_the_series_ends() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let mut recent = Recent::default();
        assert_eq!(recent.repeat(1, "default", start), None);
        recent.written(1, written("a.1", start), start);

        let minute = |n: i64| start + SignedDuration::from_mins(n);
        let second = recent.repeat(1, "default", minute(1));
        let series = |count, at| Series {
            name: "a.1".into(),
            namespace: "default".into(),
            count,
            last: Some(at),
        };
        assert_eq!(second, Some(Repeat::Write(series(2, minute(1)))));
        recent.written_series(1, 2, minute(1));
        // Every repeat after that, each within six minutes of the one before: counted only.
        for n in 2..=20 {
            assert_eq!(
                recent.repeat(1, "default", minute(n)),
                Some(Repeat::Counted)
            );
            assert!(recent.due(minute(n)).is_empty(), "minute {n}");
        }
        // Nothing for six minutes: the series ended, and its count is written once.
        assert_eq!(recent.due(minute(26)), vec![series(21, minute(20))]);
        assert!(recent.due(minute(27)).is_empty());
        assert!(recent.events.is_empty());
    }

    #[test]
    fn a_series_that_goes_on_has_its_count_written_every_thirty_minutes() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let minute = |n: i64| start + SignedDuration::from_mins(n);
        let mut recent = Recent::default();
        recent.written(1, written("a.1", start), start);
        recent.repeat(1, "default", minute(1));
        recent.written_series(1, 2, minute(1));
        let mut writes = Vec::new();
        for n in 2..=70 {
            recent.repeat(1, "default", minute(n));
            writes.extend(recent.due(minute(n)).into_iter().map(|s| (n, s.count)));
        }
        // At minute n it happened n + 1 times: at 0, then every minute.
        assert_eq!(writes, [(31, 32), (61, 62)]);
    }

    #[test]
    fn a_repeat_within_six_minutes_of_the_last_continues_the_series() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let mut recent = Recent::default();
        recent.written(1, written("a.1", start), start);
        let later = start + SignedDuration::from_mins(5);
        assert!(matches!(
            recent.repeat(1, "default", later),
            Some(Repeat::Write(_))
        ));
        recent.written_series(1, 2, later);

        // Seven minutes after the first, but two after the last: still the same series, and
        // the first occurrence's expiry did not forget it.
        let again = start + SignedDuration::from_mins(7);
        assert_eq!(recent.repeat(1, "default", again), Some(Repeat::Counted));
        assert_eq!(recent.events[&1].0.count, 3);
    }

    #[test]
    fn events_are_forgotten_six_minutes_after_their_last_occurrence() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let mut recent = Recent::default();
        for key in 0..10_000 {
            recent.written(key, written("x", start), start);
        }
        let three = start + SignedDuration::from_mins(3);
        recent.written(10_000, written("y", three), three);

        let after = start + SERIES_WINDOW;
        assert_eq!(recent.repeat(0, "default", after), None);
        assert_eq!(recent.events.len(), 1);
        assert!(matches!(
            recent.repeat(10_000, "default", after),
            Some(Repeat::Write(_))
        ));
        recent.written_series(10_000, 2, after);

        assert_eq!(
            recent.repeat(10_000, "default", after + SERIES_WINDOW),
            None
        );
        assert!(recent.events.is_empty() && recent.expiry.is_empty());
        assert_eq!(
            recent.events.capacity(),
            0,
            "the burst's table was released"
        );
        assert!(recent.ended.is_empty(), "every count was written");
    }

    #[test]
    fn at_most_4096_recent_events_are_remembered_the_oldest_forgotten_first() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let mut recent = Recent::default();
        recent.written(0, written("counted", start), start);
        let second = start + SignedDuration::from_secs(1);
        recent.repeat(0, "default", second);
        recent.repeat(0, "default", second);
        for key in 1..30_000 {
            recent.written(key, written("x", second), second);
        }
        assert_eq!(recent.events.len(), REMEMBERED);
        assert!(recent.events.contains_key(&29_999));
        assert!(!recent.events.contains_key(&1));
        // The count of the series forgotten is written still.
        assert_eq!(recent.due(second).len(), 1);
        // A repeat of a forgotten event starts anew.
        assert_eq!(recent.repeat(1, "default", second), None);
    }

    /// On the in-memory API server: an event a reconcile repeats every 30 seconds costs two
    /// writes, not one a repeat, and the series' count is written when it ends.
    #[tokio::test]
    async fn a_repeated_event_is_written_twice_then_once_more_when_its_series_ends() {
        use k8s_openapi::api::events::v1::Event as K8sEvent;
        let env = memop_test::TestEnv::in_memory();
        let reporter = Reporter {
            controller: "memcached".into(),
            instance: None,
        };
        let recorder = Recorder::new(env.operator.clone(), reporter);
        let waiting = event("RolloutWaiting", "An update of Deployment a waits");
        for _ in 0..20 {
            recorder.publish(&waiting, &reference("a")).await.unwrap();
        }
        assert_eq!(env.requests.writes("events"), 2, "the Event and its series");
        let events = Api::<K8sEvent>::namespaced(env.admin.clone(), "default");
        let written = events.list(&Default::default()).await.unwrap().items;
        assert_eq!(written.len(), 1);
        assert_eq!(written[0].series.as_ref().map(|s| s.count), Some(2));

        // Six minutes after the last repeat, the series has ended: its count is written.
        recorder.flush(Timestamp::now() + SERIES_WINDOW).await;
        assert_eq!(env.requests.writes("events"), 3);
        let written = events.list(&Default::default()).await.unwrap().items;
        assert_eq!(written[0].series.as_ref().map(|s| s.count), Some(20));
        recorder.flush(Timestamp::now() + SERIES_WINDOW * 2).await;
        assert_eq!(env.requests.writes("events"), 3, "written once");
    }
}
