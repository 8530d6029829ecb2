//! An events.k8s.io/v1 event recorder that stays small at scale.
//!
//! kube's `Recorder` writes the same Events as this one (a new Event the first time, a patch
//! of its `series` for a repeat within six minutes, as client-go's recorder does), but to
//! recognise repeats it keeps every Event it wrote in the last six minutes, whole, in one hash
//! table, and scans that table on every publish. At 10,000 objects, each with one `Created`
//! event, that table is a single allocation of about 21 MiB, a fifth of the manager's peak
//! memory (docs/performance.md). This recorder keeps, per recent event, only what a repeat
//! needs: the Event's name, its namespace and its count, under a 64-bit hash of its identity,
//! and it forgets them in the order they expire instead of scanning everything.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use serde_json::json;

/// How long after its last occurrence an event is still continued as a series (client-go's
/// and kube's six minutes).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Publishes events about objects, as kube's `Recorder` does, with a bounded memory of the
/// recent ones. Cheap to clone: clones share that memory.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    recent: Arc<Mutex<Recent>>,
}

impl Recorder {
    /// A recorder writing as `reporter` (the controller's name, and this replica's).
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            recent: Arc::default(),
        }
    }

    /// Records `event` about the object `regarding` (its namespace is the Event's; a
    /// cluster-scoped object's events go to `default`). A repeat within six minutes of the
    /// last one (same type, action, reason, object and related object) increments the
    /// series of the Event already written instead of writing another.
    ///
    /// # Errors
    ///
    /// The API server's, when it refuses the Event.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = identity(event, regarding);
        let repeat = self
            .recent
            .lock()
            .expect("the recent events are never poisoned")
            .repeat(key, now);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let written = match repeat {
            Some(Repeat { name, count }) => {
                let series = EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                };
                let patch = Patch::Merge(json!({ "series": series }));
                events.patch(&name, &PatchParams::default(), &patch).await?;
                Written { name, count }
            }
            None => {
                let new = self.event(event, regarding, now);
                let created = events.create(&PostParams::default(), &new).await?;
                Written {
                    name: created.metadata.name.unwrap_or_default(),
                    count: 1,
                }
            }
        };
        self.recent
            .lock()
            .expect("the recent events are never poisoned")
            .written(key, written, now);
        Ok(())
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

/// An Event written recently, and how many times it happened.
struct Written {
    name: String,
    count: i32,
}

/// What a repeat of a recent event writes: the next count of that Event's series.
#[derive(Debug, PartialEq)]
struct Repeat {
    name: String,
    count: i32,
}

/// The events written in the last [`SERIES_WINDOW`], by identity, and the order in which they
/// expire.
#[derive(Default)]
struct Recent {
    events: HashMap<u64, (Written, Timestamp)>,
    /// (last occurrence, identity), oldest first. An event that happens again gets a newer
    /// entry; its older ones are skipped when they come up.
    expiry: VecDeque<(Timestamp, u64)>,
}

impl Recent {
    /// The repeat that an event of identity `key` happening at `now` is, if it is one.
    fn repeat(&mut self, key: u64, now: Timestamp) -> Option<Repeat> {
        self.forget_expired(now);
        self.events.get(&key).map(|(written, _)| Repeat {
            name: written.name.clone(),
            count: written.count + 1,
        })
    }

    /// Remembers that the event of identity `key` was written at `now`.
    fn written(&mut self, key: u64, written: Written, now: Timestamp) {
        self.events.insert(key, (written, now));
        self.expiry.push_back((now, key));
    }

    fn forget_expired(&mut self, now: Timestamp) {
        while let Some(&(at, key)) = self.expiry.front() {
            if at + SERIES_WINDOW > now {
                break;
            }
            self.expiry.pop_front();
            // Forget the event only if this was its last occurrence.
            if self.events.get(&key).is_some_and(|(_, last)| *last == at) {
                self.events.remove(&key);
            }
        }
        if self.events.is_empty() {
            // Release what a burst of events (a restart, a fleet-wide change) made them grow to.
            self.events.shrink_to_fit();
            self.expiry.shrink_to_fit();
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

    fn written(name: &str, count: i32) -> Written {
        Written {
            name: name.into(),
            count,
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
    fn a_repeat_within_six_minutes_of_the_last_continues_the_series() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let mut recent = Recent::default();
        assert_eq!(recent.repeat(1, start), None);
        recent.written(1, written("a.1", 1), start);

        let later = start + SignedDuration::from_mins(5);
        let repeat = recent.repeat(1, later);
        assert_eq!(
            repeat,
            Some(Repeat {
                name: "a.1".into(),
                count: 2
            })
        );
        recent.written(1, written("a.1", 2), later);

        // Seven minutes after the first, but two after the last: still the same series, and
        // the first occurrence's expiry did not forget it.
        let again = start + SignedDuration::from_mins(7);
        assert_eq!(recent.repeat(1, again).map(|r| r.count), Some(3));
        assert_eq!(
            recent.expiry.len(),
            1,
            "the first occurrence's expiry was passed"
        );
    }

    #[test]
    fn events_are_forgotten_six_minutes_after_their_last_occurrence() {
        let start = Timestamp::from_second(1_000_000).unwrap();
        let mut recent = Recent::default();
        for key in 0..10_000 {
            recent.written(key, written("x", 1), start);
        }
        recent.written(
            10_000,
            written("y", 1),
            start + SignedDuration::from_mins(3),
        );

        let after = start + SERIES_WINDOW;
        assert_eq!(recent.repeat(0, after), None);
        assert_eq!(recent.events.len(), 1);
        assert_eq!(recent.repeat(10_000, after).map(|r| r.count), Some(2));

        assert_eq!(
            recent.repeat(10_000, after + SignedDuration::from_mins(3)),
            None
        );
        assert!(recent.events.is_empty() && recent.expiry.is_empty());
        assert_eq!(
            recent.events.capacity(),
            0,
            "the burst's table was released"
        );
    }
}
