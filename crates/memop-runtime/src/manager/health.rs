//! The `/healthz` and `/readyz` probes.
//!
//! `/healthz` answers as long as the process serves requests. `/readyz` answers OK only once
//! every controller has listed what it watches (its cache is synced), so a pod is not counted
//! ready before it does its job. A replica waiting for leadership is ready too: it is healthy,
//! and if standbys were never ready a rolling update would wait forever for the new pod, which
//! cannot lead until the old one is gone. So is a manager that serves conversion webhooks, once
//! its webhook server is up: the API server reaches that server through a Service, which routes
//! to ready pods only, and cannot list a converted kind for the controllers' caches before;
//! waiting for those caches would deadlock a single replica (its cache-sync timeout still ends a
//! manager whose caches never sync). Only that first sync is not waited for: a silent watch
//! (below) makes it unready all the same.
//!
//! Once synced, a watch that has not heard from the API server for longer than the silence
//! limit (see `watchdog.rs`) makes `/readyz` fail too, naming it, until it hears again: its
//! cache may be stale. So does a watch whose task died (panicked), for good: its cache is.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use kube::runtime::reflector::{Lookup, Store};

use super::watchdog::WATCH_SILENCE_LIMIT;

/// How often a controller's cache is checked for its first sync.
const POLL: Duration = Duration::from_millis(100);

#[derive(Clone)]
/// Whether the manager is ready (`/readyz`): every controller's cache synced and no watch
/// silent for longer than the silence limit, and this replica either leading or standing by.
pub struct Readiness {
    state: Arc<Mutex<State>>,
    silence_limit: Duration,
}

impl Default for Readiness {
    fn default() -> Self {
        Self::with_silence_limit(WATCH_SILENCE_LIMIT)
    }
}

#[derive(Default)]
struct State {
    standby: bool,
    /// The webhook server serves conversions (see the module's documentation).
    converting: bool,
    /// The manager has started its controllers.
    started: bool,
    /// Controllers that started but have not synced their cache yet.
    syncing: BTreeSet<&'static str>,
    /// Controllers that have synced.
    synced: BTreeSet<&'static str>,
    /// Watches silent for longer than the silence limit, by name, with how many of that name.
    silent: BTreeMap<&'static str, usize>,
    /// Watches whose task died (panicked), by name, with how many of that name: their caches
    /// no longer follow the API server.
    dead: BTreeMap<&'static str, usize>,
}

impl Readiness {
    /// Readiness whose watches may be silent for `limit` (rather than
    /// [`WATCH_SILENCE_LIMIT`]) before the manager is not ready: for tests.
    pub fn with_silence_limit(limit: Duration) -> Self {
        Self {
            state: Arc::default(),
            silence_limit: limit,
        }
    }

    /// `None` when ready; otherwise why not.
    pub fn check(&self) -> Option<String> {
        let state = self.state.lock().expect("readiness lock");
        if state.standby {
            return None;
        }
        let mut why = Vec::new();
        // Serving conversions, it does not wait for its caches' first sync (see the module's
        // documentation), but a watch gone silent still makes it unready.
        if !state.converting {
            why.extend(Self::not_synced(&state));
        }
        if !state.silent.is_empty() {
            let silent: Vec<_> = state.silent.keys().copied().collect();
            why.push(format!(
                "no answer from the API server for more than {:?} on watches: {}",
                self.silence_limit,
                silent.join(", ")
            ));
        }
        if !state.dead.is_empty() {
            let dead: Vec<_> = state.dead.keys().copied().collect();
            why.push(format!(
                "watches whose task died (their caches no longer follow the API server; restart \
                 the manager): {}",
                dead.join(", ")
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Which controllers have not synced yet, if any (or that none has started).
    pub(crate) fn unsynced(&self) -> Option<String> {
        Self::not_synced(&self.state.lock().expect("readiness lock"))
    }

    fn not_synced(state: &State) -> Option<String> {
        if !state.started {
            return Some("controllers have not started yet".to_string());
        }
        if state.syncing.is_empty() {
            return None;
        }
        let waiting: Vec<_> = state.syncing.iter().copied().collect();
        Some(format!(
            "waiting for controllers to sync: {}",
            waiting.join(", ")
        ))
    }

    /// Resolves, saying which controllers are still syncing, if they have not all synced
    /// within `timeout`; never resolves once they have.
    pub async fn not_synced_within(&self, timeout: Duration) -> String {
        tokio::time::sleep(timeout).await;
        match self.unsynced() {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }

    /// How long a watch may go without an answer before the manager is not ready.
    pub(crate) fn silence_limit(&self) -> Duration {
        self.silence_limit
    }

    /// Records that a watch named `name` has gone without an answer for longer than the limit,
    /// or (`false`) that one that had answers again or stopped.
    pub(crate) fn silent(&self, name: &'static str, silent: bool) {
        let mut state = self.state.lock().expect("readiness lock");
        let count = state.silent.entry(name).or_default();
        if silent {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.silent.remove(name);
            }
        }
    }

    /// Records that a watch named `name` died (its task panicked), or (`false`) that a new
    /// watch of that name replaces one that did.
    pub(crate) fn dead(&self, name: &'static str, dead: bool) {
        let mut state = self.state.lock().expect("readiness lock");
        if dead {
            *state.dead.entry(name).or_default() += 1;
        } else if let Some(count) = state.dead.get_mut(name) {
            *count -= 1;
            if *count == 0 {
                state.dead.remove(name);
            }
        }
    }

    pub(crate) fn set_standby(&self, standby: bool) {
        self.state.lock().expect("readiness lock").standby = standby;
    }

    /// Records that this manager's webhook server is up and converts objects of some kind:
    /// from now on it is ready whether or not the caches have synced.
    pub fn serving_conversions(&self) {
        self.state.lock().expect("readiness lock").converting = true;
    }

    pub(crate) fn set_started(&self) {
        self.state.lock().expect("readiness lock").started = true;
    }

    /// Records that controller `name` runs and is not ready until it has synced.
    pub(crate) fn expect(&self, name: &'static str) {
        let mut state = self.state.lock().expect("readiness lock");
        state.started = true;
        if !state.synced.contains(name) {
            state.syncing.insert(name);
        }
    }

    pub(crate) fn synced(&self, name: &'static str) {
        let mut state = self.state.lock().expect("readiness lock");
        state.syncing.remove(name);
        state.synced.insert(name);
    }

    /// Marks controller `name` ready once `store` (its controller's cache) has synced.
    pub fn track<K>(&self, name: &'static str, store: Store<K>)
    where
        K: Lookup + Clone + Send + Sync + 'static,
        K::DynamicType: Eq + Hash + Clone + Send + Sync,
    {
        self.expect(name);
        let readiness = self.clone();
        tokio::spawn(async move {
            // The Controller waits for the same store, and kube's readiness signal wakes only
            // the last of several waiters: ask again every 100 ms instead of waiting to be woken.
            loop {
                let ready = tokio::time::timeout(POLL, store.wait_until_ready()).await;
                match ready {
                    Ok(Ok(())) => {
                        tracing::info!(controller = name, "cache synced");
                        readiness.synced(name);
                        return;
                    }
                    // The controller stopped before it synced.
                    Ok(Err(_)) => return,
                    Err(_) => continue,
                }
            }
        });
    }
}

pub fn router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let readiness = readiness.clone();
                async move {
                    match readiness.check() {
                        None => (StatusCode::OK, "ok".to_string()),
                        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
                    }
                }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_controller_synced_or_standing_by() {
        let readiness = Readiness::default();
        assert!(readiness.check().unwrap().contains("not started"));
        readiness.set_started();
        assert_eq!(readiness.check(), None);
        readiness.expect("memcached");
        assert!(readiness.check().unwrap().contains("memcached"));
        readiness.set_standby(true);
        assert_eq!(readiness.check(), None);
        readiness.set_standby(false);
        readiness.synced("memcached");
        assert_eq!(readiness.check(), None);
    }

    #[test]
    fn a_manager_serving_conversions_is_ready_before_its_caches_sync() {
        let readiness = Readiness::default();
        readiness.expect("memcached");
        assert!(readiness.check().is_some());
        // The only way the API server can list Memcacheds of another version for that cache.
        readiness.serving_conversions();
        assert_eq!(readiness.check(), None);
    }

    #[test]
    fn a_manager_serving_conversions_is_unready_while_a_watch_is_silent() {
        let readiness = Readiness::default();
        readiness.expect("memcached");
        readiness.serving_conversions();
        readiness.synced("memcached");
        assert_eq!(readiness.check(), None);
        readiness.silent("memcached", true);
        let why = readiness.check().expect("a silent watch: not ready");
        assert!(why.contains("memcached"), "{why}");
        readiness.silent("memcached", false);
        assert_eq!(readiness.check(), None);
    }
}
