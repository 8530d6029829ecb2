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
//! limit (see `watchdog.rs`) makes `/readyz` fail too, until it hears again: its cache may be
//! stale. So does a watch whose task died (panicked), for good: its cache is. The answer names
//! the check that fails, never the watch nor why: the probe port has no authentication (see
//! [`router`]); the reason is logged.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::routing::get;

use super::watchdog::WATCH_SILENCE_LIMIT;

/// The names of the checks of `/readyz`, which its answer lists (`[-]name failed: reason
/// withheld`) without saying why: the controllers' caches have synced, their watches hear from
/// the API server, and their watches' tasks run.
const SYNCED: &str = "caches-synced";
const ANSWERING: &str = "watches-answering";
const RUNNING: &str = "watches-running";

#[derive(Clone)]
/// Whether the manager is ready (`/readyz`): every controller's cache synced and no watch
/// silent for longer than the silence limit, and this replica either leading or standing by.
pub(crate) struct Readiness {
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
    /// `WATCH_SILENCE_LIMIT`) before the manager is not ready: for tests.
    pub(crate) fn with_silence_limit(limit: Duration) -> Self {
        Self {
            state: Arc::default(),
            silence_limit: limit,
        }
    }

    /// `None` when ready; otherwise why not.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Option<String> {
        let why: Vec<String> = (self.checks().into_iter())
            .filter_map(|(_, failed)| failed)
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Each check of readiness, by a fixed name that says nothing of the manager's watches,
    /// with why it fails, if it does (all pass on a standby).
    fn checks(&self) -> [(&'static str, Option<String>); 3] {
        let state = self.state.lock().expect("readiness lock");
        if state.standby {
            return [(SYNCED, None), (ANSWERING, None), (RUNNING, None)];
        }
        // Serving conversions, it does not wait for its caches' first sync (see the module's
        // documentation), but a watch gone silent still makes it unready.
        let synced = match state.converting {
            true => None,
            false => Self::not_synced(&state),
        };
        let answering = (!state.silent.is_empty()).then(|| {
            let silent: Vec<_> = state.silent.keys().copied().collect();
            format!(
                "no answer from the API server for more than {:?} on watches: {}",
                self.silence_limit,
                silent.join(", ")
            )
        });
        let running = (!state.dead.is_empty()).then(|| {
            let dead: Vec<_> = state.dead.keys().copied().collect();
            format!(
                "watches whose task died (their caches no longer follow the API server; restart \
                 the manager): {}",
                dead.join(", ")
            )
        });
        [(SYNCED, synced), (ANSWERING, answering), (RUNNING, running)]
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
    pub(crate) async fn not_synced_within(&self, timeout: Duration) -> String {
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
    pub(crate) fn serving_conversions(&self) {
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

    /// Marks controller `name` ready once `synced` (its cache's sync) gives `true`. (A future,
    /// not the cache: the manager knows no controller's types.)
    pub(crate) fn track(
        &self,
        name: &'static str,
        synced: impl Future<Output = bool> + Send + 'static,
    ) {
        self.expect(name);
        let readiness = self.clone();
        tokio::spawn(async move {
            // `false`: the controller stopped before it synced.
            if synced.await {
                tracing::info!(controller = name, "cache synced");
                readiness.synced(name);
            }
        });
    }
}

/// The probes' routes: `/healthz` and `/readyz`.
///
/// They are served without authentication (the kubelet calls them), so, as controller-runtime's
/// `healthz` handler does, an answer names only the checks (fixed names), never why one fails,
/// which would name the manager's controllers and watches: `ok` when ready; otherwise 503 and a
/// line per check, `[+]caches-synced ok` or `[-]watches-answering failed: reason withheld`; the
/// same lines on success with `?verbose`. Why a check fails is logged (once per change), where
/// only those who may read the manager's logs see it.
pub fn router(readiness: Readiness) -> Router {
    let logged = Arc::new(Mutex::new(None::<String>));
    Router::new()
        .route(
            "/healthz",
            get(|query: RawQuery| async move {
                match verbose(&query) {
                    true => "[+]ping ok\nhealthz check passed\n",
                    false => "ok",
                }
            }),
        )
        .route(
            "/readyz",
            get(move |query: RawQuery| {
                let (readiness, logged) = (readiness.clone(), logged.clone());
                async move {
                    let checks = readiness.checks();
                    let why: Vec<&str> = (checks.iter())
                        .filter_map(|(_, failed)| failed.as_deref())
                        .collect();
                    let why = (!why.is_empty()).then(|| why.join("; "));
                    {
                        let mut logged = logged.lock().expect("readiness log lock");
                        if *logged != why {
                            match &why {
                                Some(why) => tracing::info!(%why, "readyz check failed"),
                                None => tracing::info!("readyz check passed"),
                            }
                            *logged = why.clone();
                        }
                    }
                    let failed = why.is_some();
                    let status = match failed {
                        true => StatusCode::SERVICE_UNAVAILABLE,
                        false => StatusCode::OK,
                    };
                    if !failed && !verbose(&query) {
                        return (status, "ok".to_string());
                    }
                    let mut text = String::new();
                    for (name, failed) in checks {
                        match failed {
                            None => text.push_str(&format!("[+]{name} ok\n")),
                            Some(_) => {
                                text.push_str(&format!("[-]{name} failed: reason withheld\n"))
                            }
                        }
                    }
                    text.push_str(match failed {
                        true => "readyz check failed\n",
                        false => "readyz check passed\n",
                    });
                    (status, text)
                }
            }),
        )
}

/// Whether a probe's query asks for every check (`?verbose`, with or without a value).
fn verbose(query: &RawQuery) -> bool {
    (query.0.as_deref().unwrap_or_default().split('&'))
        .any(|pair| pair.split('=').next() == Some("verbose"))
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

    /// Gets `path` from the probes' router: its status and body.
    async fn probe(readiness: &Readiness, path: &str) -> (u16, String) {
        use tower::ServiceExt as _;
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router(readiness.clone()).oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readyz_names_its_checks_but_not_the_watches_nor_why_they_fail() {
        let readiness = Readiness::default();
        readiness.expect("memcached");
        readiness.synced("memcached");
        assert_eq!(probe(&readiness, "/readyz").await, (200, "ok".into()));
        assert_eq!(
            probe(&readiness, "/readyz?verbose").await,
            (
                200,
                "[+]caches-synced ok\n[+]watches-answering ok\n[+]watches-running ok\n\
                 readyz check passed\n"
                    .into()
            )
        );
        readiness.silent("memcached", true);
        readiness.dead("secret-watch", true);
        for path in ["/readyz", "/readyz?verbose=1"] {
            let (status, body) = probe(&readiness, path).await;
            assert_eq!(status, 503);
            assert_eq!(
                body,
                "[+]caches-synced ok\n[-]watches-answering failed: reason withheld\n\
                 [-]watches-running failed: reason withheld\nreadyz check failed\n"
            );
        }
        // The reasons are still there for the log and the manager.
        let why = readiness.check().unwrap();
        assert!(
            why.contains("memcached") && why.contains("secret-watch"),
            "{why}"
        );
        assert_eq!(probe(&readiness, "/healthz").await, (200, "ok".into()));
        assert_eq!(
            probe(&readiness, "/healthz?verbose").await,
            (200, "[+]ping ok\nhealthz check passed\n".into())
        );
    }
}
