//! A controller's work queue and the workers that take from it: controller-runtime's priority
//! queue (the default since its 0.23) in place of kube-runtime's scheduler, which is first in,
//! first out.
//!
//! After a restart at 30,000 objects, every object comes from the initial list at once; in
//! kube-runtime's scheduler a user's edit made a second later waits behind all of them. Here
//! what nobody changed (the initial list, a relist's unchanged objects, a resync or any other
//! requeue of a reconcile that succeeded, the cache a standby takes over with, the objects of
//! a bucket a shard takes) is queued at [`Priority::Low`], and a change the watches bring at
//! [`Priority::Normal`], which is taken first: as controller-runtime's
//! `handler.WithLowPriorityWhenUnchanged` decides.
//!
//! The queue holds each object once (a second request raises its priority and brings its time
//! forward, never the other way), holds requests for later (a requeue's delay), and never hands
//! out an object that is being reconciled: a change that comes meanwhile waits until that
//! reconcile ends, so that one object is never reconciled twice at once. Among objects of one
//! priority, the first queued goes first. Its depth, adds and the time items wait are exported
//! with client-go's workqueue metric names ([`QueueMetrics`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::Action;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::Store;
use super::cache::Key;
use crate::manager::metrics::QueueMetrics;
use crate::shared::Shared;

/// How soon a request to reconcile an object should be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Nothing changed: the initial list, a relist's unchanged objects, a resync, a takeover.
    /// controller-runtime's `handler.LowPriority`.
    Low,
    /// A change of the object, or of one it owns or watches: served before any `Low`.
    Normal,
}

/// A request to reconcile the object of the key, with its priority: a key, not kube's
/// `ObjectRef`, all the way from the watch to the queue's maps, so that a takeover's or a
/// relist's request for every object makes one key each, not a reference and then a key.
pub(crate) type Request = (Key, Priority);

/// A stream of requests that feeds a controller's queue.
pub(crate) type Requests = BoxStream<'static, Request>;

/// The requests a watch's events make: an object as listed, the first time or again unchanged
/// (`InitApply`), at [`Priority::Low`]; one that changed (`Apply`) at [`Priority::Normal`]. A
/// deletion asks for nothing (an object with a finalizer is changed, not deleted, first), nor
/// does an error, which is logged as `name`'s; the watch is retried with backoff.
pub(crate) fn requests<K>(
    name: &'static str,
    events: impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
) -> Requests
where
    K: Resource<DynamicType = ()> + Send + 'static,
{
    events
        .default_backoff()
        .filter_map(move |event| {
            let request = match event {
                Ok(watcher::Event::InitApply(object)) => Some((Key::of(&object), Priority::Low)),
                Ok(watcher::Event::Apply(object)) => Some((Key::of(&object), Priority::Normal)),
                Ok(_) => None,
                // The API server failed a list or watch: the cache stays behind (and the
                // manager unready) until it succeeds. Said at each retry, so that a cause the
                // controller cannot fix (a conversion webhook nobody serves, a missing CRD or
                // role) is in the log, not only a quiet controller.
                Err(err) => {
                    tracing::warn!(controller = name, error = %err, "cannot list or watch; retrying");
                    None
                }
            };
            std::future::ready(request)
        })
        .boxed()
}

/// Every object `store` holds, at [`Priority::Low`], each time `ticks` ticks: a takeover's
/// (or a shard's new buckets') look at what may have changed while this replica did not act.
pub(crate) fn everything_on<K>(
    ticks: impl Stream<Item = ()> + Send + 'static,
    store: Store<K>,
) -> Requests
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    ticks
        .flat_map(move |()| {
            let all = store.keys().into_iter();
            futures::stream::iter(all.map(|key| (key, Priority::Low)))
        })
        .boxed()
}

/// The queue: each object at most once, waiting or ready, and the objects being reconciled.
pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    /// Told of every request and every reconcile done: the next item may be ready.
    changed: Notify,
    metrics: Option<QueueMetrics>,
}

struct State<T> {
    queued: HashMap<T, Entry>,
    /// The ready items, by priority and then by when they were first queued.
    ready: BTreeMap<(Reverse<Priority>, u64), T>,
    /// The items held for later, by when they are due.
    later: BTreeMap<(Instant, u64), T>,
    /// The items handed out and not done yet.
    running: HashSet<T>,
    /// The order of the next new item.
    next: u64,
}

#[derive(Clone, Copy)]
struct Entry {
    priority: Priority,
    order: u64,
    /// When it is due, while it is held for later.
    due: Option<Instant>,
    /// When it became ready (for the time it waits).
    since: Instant,
}

impl<T: Clone + Eq + Hash> Queue<T> {
    pub(crate) fn new(metrics: Option<QueueMetrics>) -> Self {
        Self {
            state: Mutex::new(State {
                queued: HashMap::new(),
                ready: BTreeMap::new(),
                later: BTreeMap::new(),
                running: HashSet::new(),
                next: 0,
            }),
            changed: Notify::new(),
            metrics,
        }
    }

    /// Queues `key` at `priority`, `after` from now (at once if zero). A key queued already
    /// keeps the higher of the two priorities and the sooner of the two times, and its place
    /// among the items of its priority.
    pub(crate) fn add(&self, key: T, priority: Priority, after: Duration) {
        let now = Instant::now();
        let due = (!after.is_zero()).then(|| now + after);
        let mut state = self.lock();
        // A key queued already stays the one queued (an `Arc` is then shared, not copied).
        let (key, queued) = match state.queued.get_key_value(&key) {
            Some((queued, entry)) => (queued.clone(), Some(*entry)),
            None => (key, None),
        };
        let entry = match queued {
            Some(mut entry) => {
                state.unindex(&entry);
                entry.priority = entry.priority.max(priority);
                entry.due = match (entry.due, due) {
                    (Some(_), None) => {
                        self.became_ready();
                        entry.since = now;
                        None
                    }
                    (Some(was), Some(due)) => Some(was.min(due)),
                    (None, _) => None,
                };
                entry
            }
            None => {
                let order = state.next;
                state.next += 1;
                if due.is_none() {
                    self.became_ready();
                }
                Entry {
                    priority,
                    order,
                    due,
                    since: now,
                }
            }
        };
        state.index(key.clone(), entry);
        state.queued.insert(key, entry);
        state.promote(now, self);
        drop(state);
        self.changed.notify_one();
    }

    /// The next ready item not being reconciled, of the highest priority, once there is one;
    /// it counts as running until [`Self::done`].
    pub(crate) async fn next(&self) -> (T, Priority) {
        loop {
            // Made before looking, so that a change while looking is not missed.
            let changed = self.changed.notified();
            let due = {
                let now = Instant::now();
                let mut state = self.lock();
                state.promote(now, self);
                if let Some((key, entry)) = state.take() {
                    if let Some(metrics) = &self.metrics {
                        metrics.depth.dec();
                        let waited = now.saturating_duration_since(entry.since);
                        metrics.queue_duration.observe(waited.as_secs_f64());
                    }
                    return (key, entry.priority);
                }
                state.later.keys().next().map(|(due, _)| *due)
            };
            match due {
                Some(due) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(due) => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Says that the reconcile of `key` ended: a request for it that came meanwhile can be
    /// taken now.
    pub(crate) fn done(&self, key: &T) {
        let mut state = self.lock();
        state.running.remove(key);
        state.promote(Instant::now(), self);
        drop(state);
        self.changed.notify_one();
    }

    fn became_ready(&self) {
        if let Some(metrics) = &self.metrics {
            metrics.depth.inc();
            metrics.adds.inc();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        // Nothing panics while holding the lock; recover its data if something did.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Clone + Eq + Hash> State<T> {
    fn index(&mut self, key: T, entry: Entry) {
        match entry.due {
            Some(due) => self.later.insert((due, entry.order), key),
            None => self
                .ready
                .insert((Reverse(entry.priority), entry.order), key),
        };
    }

    fn unindex(&mut self, entry: &Entry) {
        match entry.due {
            Some(due) => self.later.remove(&(due, entry.order)),
            None => self.ready.remove(&(Reverse(entry.priority), entry.order)),
        };
    }

    /// Makes the items due by `now` ready.
    fn promote(&mut self, now: Instant, queue: &Queue<T>) {
        while let Some(entry) = self.later.first_entry() {
            let (due, _) = *entry.key();
            if due > now {
                break;
            }
            let key = entry.remove();
            let Some(entry) = self.queued.get_mut(&key) else {
                continue;
            };
            entry.due = None;
            entry.since = due;
            let entry = *entry;
            queue.became_ready();
            self.index(key, entry);
        }
    }

    /// Takes the first ready item whose key is not running. (The ready items of running keys
    /// skipped on the way are at most one per running reconcile.)
    fn take(&mut self) -> Option<(T, Entry)> {
        let place = *self
            .ready
            .iter()
            .find(|(_, key)| !self.running.contains(*key))?
            .0;
        let key = self.ready.remove(&place)?;
        let entry = self.queued.remove(&key)?;
        self.running.insert(key.clone());
        Some((key, entry))
    }
}

/// Runs the controller `name` until the manager shuts down: `requests` feed its queue, and
/// once `store` has listed, its workers take objects from it, at most the controller's
/// `--max-concurrent-reconciles` at once (0: no limit), each reconciled by `work`, which says
/// when to come back: `Ok` after a success (a resync, a wait: requeued at
/// [`Priority::Low`], since nothing changed), `Err` after a failure (retried at the priority
/// it was taken with, as controller-runtime does, so that a failed change stays ahead of the
/// backlog). A request for an object no longer in `store` is dropped. At shutdown, no
/// reconcile starts and those under way finish.
pub(crate) async fn run<K, Work>(
    name: &'static str,
    shared: &Shared,
    store: Store<K>,
    requests: Vec<Requests>,
    work: impl Fn(Arc<K>) -> Work + Send + Sync + 'static,
) where
    K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
    Work: Future<Output = Result<Action, Action>> + Send + 'static,
{
    let queue = Arc::new(Queue::new(Some(shared.metrics.queue(name))));
    let feed = {
        let queue = queue.clone();
        futures::stream::select_all(requests).for_each(move |(key, priority)| {
            // One copy of the key, shared by the queue's maps (it holds every object, each
            // waiting for its resync).
            queue.add(key, priority, Duration::ZERO);
            std::future::ready(())
        })
    };
    let max = match shared.max_concurrent_reconciles {
        0 => Semaphore::MAX_PERMITS,
        max => usize::from(max),
    };
    let slots = Arc::new(Semaphore::new(max));
    let work = Arc::new(work);
    let mut reconciles = JoinSet::new();
    let workers = async {
        // As kube's controller: nothing is reconciled from a cache that has not listed yet.
        if !store.wait_until_ready().await {
            return;
        }
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let (key, priority) = queue.next().await;
            let Some(object) = store.read(&key) else {
                tracing::debug!(object = %key, "gone before its reconcile");
                queue.done(&key);
                continue;
            };
            let taken = Taken {
                queue: queue.clone(),
                key,
            };
            let work = work.clone();
            reconciles.spawn(async move {
                let (action, priority) = match work(object).await {
                    Ok(action) => (action, Priority::Low),
                    Err(retry) => (retry, priority),
                };
                if let Some(after) = requeue_after(&action) {
                    taken.queue.add(taken.key.clone(), priority, after);
                }
                drop((taken, slot));
            });
            // Reap the reconciles that ended, so that the set holds only those under way.
            while let Some(ended) = reconciles.try_join_next() {
                if let Err(err) = ended {
                    tracing::error!(controller = name, error = %err, "a reconcile task failed");
                }
            }
        }
    };
    tracing::info!(controller = name, "starting");
    tokio::select! {
        () = feed => {}
        () = workers => {}
        () = shared.shutdown.wait() => {}
    }
    // Graceful: what is under way finishes (a reconcile is bounded by its timeout).
    while reconciles.join_next().await.is_some() {}
    tracing::info!(controller = name, "stopped");
}

/// An object handed out by the queue: done when dropped, however its reconcile ends (a panic
/// outside the reconcile's own recovery included), so that its next change is not held for
/// ever.
struct Taken<T: Clone + Eq + Hash> {
    queue: Arc<Queue<T>>,
    key: T,
}

impl<T: Clone + Eq + Hash> Drop for Taken<T> {
    fn drop(&mut self) {
        self.queue.done(&self.key);
    }
}

/// When `action` asks to come back. kube's `Action` keeps its delay to itself (its runner
/// alone reads it), and says it only in its `Debug` text, which prints a `Duration` exactly
/// (`300s`, `1.5ms`, `250.000001µs`, `0ns`): read from there.
fn requeue_after(action: &Action) -> Option<Duration> {
    let text = format!("{action:?}");
    let inner = text.split_once("Some(")?.1.split_once(')')?.0;
    let unit_at = inner.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (number, unit) = inner.split_at(unit_at);
    let scale: u128 = match unit {
        "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "µs" => 1_000,
        "ns" => 1,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let mut nanos = whole.parse::<u128>().ok()? * scale;
    let mut place = scale;
    for digit in fraction.chars() {
        place /= 10;
        nanos += u128::from(digit.to_digit(10)?) * place;
    }
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(queue: &Queue<&'static str>) -> Option<(&'static str, Priority)> {
        let mut state = queue.lock();
        let now = Instant::now();
        state.promote(now, queue);
        state.take().map(|(key, entry)| (key, entry.priority))
    }

    /// The initial list of many objects, then a user's edit of one: the edit goes first, then
    /// the list in its order.
    #[test]
    fn a_change_goes_before_the_backlog_of_the_initial_list() {
        let queue = Queue::new(None);
        for key in ["a", "b", "c", "d"] {
            queue.add(key, Priority::Low, Duration::ZERO);
        }
        queue.add("edited", Priority::Normal, Duration::ZERO);
        // An object of the backlog edited too: raised, keeping its place (queued before the
        // other edit), as controller-runtime's queue keeps an item's.
        queue.add("c", Priority::Normal, Duration::ZERO);
        let order: Vec<_> = std::iter::from_fn(|| taken(&queue)).collect();
        use Priority::*;
        assert_eq!(
            order,
            [
                ("c", Normal),
                ("edited", Normal),
                ("a", Low),
                ("b", Low),
                ("d", Low)
            ]
        );
    }

    #[test]
    fn the_delay_of_an_action_is_read_exactly() {
        assert_eq!(requeue_after(&Action::await_change()), None);
        let delays = [
            Duration::ZERO,
            Duration::from_nanos(7),
            Duration::from_micros(250) + Duration::from_nanos(1),
            Duration::from_millis(5),
            Duration::from_secs_f64(1.5),
            Duration::new(299, 123_456_789),
            Duration::from_secs(300),
            Duration::from_secs(u64::MAX / 4),
        ];
        for delay in delays {
            assert_eq!(requeue_after(&Action::requeue(delay)), Some(delay));
        }
    }

    #[test]
    fn an_object_is_queued_once_and_never_lowered() {
        let queue = Queue::new(None);
        queue.add("a", Priority::Normal, Duration::ZERO);
        queue.add("a", Priority::Low, Duration::ZERO);
        queue.add("a", Priority::Low, Duration::from_secs(60));
        assert_eq!(taken(&queue), Some(("a", Priority::Normal)));
        assert_eq!(taken(&queue), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_requeue_waits_its_delay_unless_a_change_brings_it_forward() {
        let queue = Queue::new(None);
        queue.add("later", Priority::Low, Duration::from_secs(300));
        queue.add("resync", Priority::Low, Duration::from_secs(10));
        assert_eq!(taken(&queue), None);
        // A change of the one held for 300 s: served now.
        queue.add("later", Priority::Normal, Duration::ZERO);
        assert_eq!(queue.next().await, ("later", Priority::Normal));
        queue.done(&"later");
        // The other when it is due, and not before.
        let started = Instant::now();
        assert_eq!(queue.next().await, ("resync", Priority::Low));
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    /// client-go's workqueue metrics: the depth counts the ready items not taken yet (a held
    /// one once it is due), the adds each time an item becomes ready, the queue duration each
    /// wait from ready to taken.
    #[tokio::test(start_paused = true)]
    async fn the_queue_reports_its_depth_adds_and_waits() {
        let metrics = crate::manager::metrics::Metrics::default();
        let queue = Queue::new(Some(metrics.queue("things")));
        let value = |series: &str| -> String {
            let text = metrics.encode();
            let prefix = format!(r#"{series}{{name="things",controller="things"}} "#);
            let line = text.lines().find_map(|line| line.strip_prefix(&prefix));
            line.unwrap_or_else(|| panic!("no {series} in\n{text}"))
                .to_string()
        };
        queue.add("a", Priority::Low, Duration::ZERO);
        queue.add("b", Priority::Low, Duration::ZERO);
        queue.add("a", Priority::Normal, Duration::ZERO);
        queue.add("c", Priority::Low, Duration::from_secs(5));
        assert_eq!(value("workqueue_depth"), "2");
        assert_eq!(value("workqueue_adds_total"), "2");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(queue.next().await, ("a", Priority::Normal));
        assert_eq!(value("workqueue_depth"), "1");
        assert_eq!(value("workqueue_queue_duration_seconds_count"), "1");
        assert_eq!(value("workqueue_queue_duration_seconds_sum"), "2.0");
        // The held one, once due, is ready: counted as an add and in the depth.
        tokio::time::advance(Duration::from_secs(4)).await;
        queue.done(&"a");
        assert_eq!(value("workqueue_depth"), "2");
        assert_eq!(value("workqueue_adds_total"), "3");
    }

    #[test]
    fn an_object_being_reconciled_is_not_handed_out_again_until_done() {
        let queue = Queue::new(None);
        queue.add("a", Priority::Low, Duration::ZERO);
        queue.add("b", Priority::Low, Duration::ZERO);
        assert_eq!(taken(&queue), Some(("a", Priority::Low)));
        // Changed while its reconcile runs: queued, not handed out.
        queue.add("a", Priority::Normal, Duration::ZERO);
        assert_eq!(taken(&queue), Some(("b", Priority::Low)));
        assert_eq!(taken(&queue), None);
        queue.done(&"a");
        assert_eq!(taken(&queue), Some(("a", Priority::Normal)));
    }
}
