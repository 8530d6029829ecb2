//! The watchdog of the manager's watches: a watch whose connection went half-open (a node or
//! load balancer that dropped it without a word) or whose requests hang would leave its cache
//! frozen while `/readyz` stayed green. Each watch the manager runs (a controller's own, see
//! `controller::new`, and each `controller::Owned`) has a [`Pulse`], which every answer of the
//! API server on that watch moves: a page of a list, the opening of a watch, each of its events
//! and bookmarks (asked for: the API server sends one about every minute, so a quiet but
//! healthy watch still shows life, and it reopens the watch every 290 s besides). A watch that
//! has said nothing for longer than the manager's limit ([`WATCH_SILENCE_LIMIT`], 5 minutes)
//! makes `/readyz` fail naming it, and the log says so, until it
//! answers again.
//!
//! The watch itself recovers on its own: kube's watcher gives up on a watch silent for 295 s
//! and opens another, and the manager's client fails a list or a watch opening after 300 s
//! without an answer (see `client.rs`). The watchdog makes the silence visible meanwhile,
//! and for as long as the API server cannot be reached.
//!
//! Each watch also counts its errors (refused or failed lists and watches) in
//! `memop_watch_errors_total{watch}`, and `memop_watch_last_activity_timestamp_seconds{watch}`
//! says when it last heard from the API server.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, ready};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use kube::Client;
use kube::client::Body;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

use super::{Metrics, Readiness};

/// How long a watch may go without a word from the API server before the manager is not
/// ready: 5 minutes, longer than a watch lasts (kube's watcher asks the API server to end it
/// after 290 s, then opens the next), so that even a watch without bookmarks answers within it.
pub(crate) const WATCH_SILENCE_LIMIT: Duration = Duration::from_secs(300);

/// The signs of life of one watch, and its errors. [`Pulse::beat`] is all an answer costs: two
/// atomic stores.
pub(crate) struct Pulse {
    name: &'static str,
    /// When the watch started: `last` counts from here.
    origin: Instant,
    /// Milliseconds from `origin` to the last sign of life.
    last: AtomicU64,
    /// The same as a Unix time, for the metrics.
    last_seen: Gauge<f64, AtomicU64>,
    errors: Counter,
    /// Whether the watchdog has marked the watch silent in `readiness`.
    silent: AtomicBool,
    readiness: Readiness,
}

impl Pulse {
    /// Records a sign of life of the watch.
    pub(crate) fn beat(&self) {
        let since = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(since, Ordering::Relaxed);
        self.last_seen.set(unix_now());
    }

    /// Records that the watch failed to list or watch.
    pub(crate) fn failed(&self) {
        self.errors.inc();
    }

    /// How long the watch has said nothing.
    fn silent_for(&self) -> Duration {
        let last = self.origin + Duration::from_millis(self.last.load(Ordering::Relaxed));
        Instant::now().saturating_duration_since(last)
    }
}

impl Drop for Pulse {
    /// A watch that stopped is no longer silent: it is gone. But one whose task died (the pulse
    /// is dropped while its task unwinds from a panic) leaves its cache frozen: the manager
    /// is not ready from then on, naming it.
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(
                watch = self.name,
                "the task of this watch panicked: its cache no longer follows the API server; \
                 not ready"
            );
            self.readiness.dead(self.name, true);
        }
        if *self.silent.get_mut() {
            self.readiness.silent(self.name, false);
        }
    }
}

/// Starts keeping an eye on watch `name`: the returned [`Pulse`] is to be moved by its answers
/// ([`answers_beat`]) and told of its errors; the watchdog stops when it is dropped. It
/// replaces a watch of that name that died, if any.
pub(crate) fn start(name: &'static str, readiness: &Readiness, metrics: &Metrics) -> Arc<Pulse> {
    readiness.dead(name, false);
    let (errors, last_seen) = metrics.watch(name);
    last_seen.set(unix_now());
    let pulse = Arc::new(Pulse {
        name,
        origin: Instant::now(),
        last: AtomicU64::new(0),
        last_seen,
        errors,
        silent: AtomicBool::new(false),
        readiness: readiness.clone(),
    });
    tokio::spawn(watch_over(
        Arc::downgrade(&pulse),
        readiness.clone(),
        readiness.silence_limit(),
    ));
    pulse
}

/// Marks the watch of `pulse` silent in `readiness` (and says so in the log) once it has said
/// nothing for `limit`, and answering again once it beats; ends with the watch.
async fn watch_over(pulse: Weak<Pulse>, readiness: Readiness, limit: Duration) {
    // How soon a silent watch that answers again is seen to: the kubelet probes every 10 s.
    let recheck = (limit / 10).clamp(Duration::from_millis(100), Duration::from_secs(10));
    loop {
        let Some(pulse) = pulse.upgrade() else {
            return;
        };
        let quiet = pulse.silent_for();
        let silent = pulse.silent.load(Ordering::Relaxed);
        if quiet >= limit && !silent {
            tracing::warn!(
                watch = pulse.name,
                silent_for = ?quiet,
                "no answer from the API server on this watch; not ready until it answers"
            );
            readiness.silent(pulse.name, true);
            pulse.silent.store(true, Ordering::Relaxed);
        } else if quiet < limit && silent {
            tracing::info!(watch = pulse.name, "the watch answers again");
            readiness.silent(pulse.name, false);
            pulse.silent.store(false, Ordering::Relaxed);
        }
        let wait = if quiet >= limit {
            recheck
        } else {
            limit - quiet
        };
        drop(pulse);
        tokio::time::sleep(wait).await;
    }
}

/// `client`, whose successful answers (their headers and every frame of their bodies) move
/// `pulse`: the client of one watch.
pub(crate) fn answers_beat(client: Client, pulse: Arc<Pulse>) -> Client {
    let namespace = client.default_namespace().to_string();
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let (client, pulse) = (client.clone(), pulse.clone());
        async move {
            let response = client.send(request).await?;
            // An error answer (a refused list, say) is no sign that the watch works.
            let pulse = response.status().is_success().then_some(pulse);
            if let Some(pulse) = &pulse {
                pulse.beat();
            }
            Ok::<_, kube::Error>(response.map(|body| Beating { body, pulse }))
        }
    });
    Client::new(service, namespace)
}

/// A response body whose frames beat `pulse`.
struct Beating {
    body: Body,
    pulse: Option<Arc<Pulse>>,
}

impl HttpBody for Beating {
    type Data = Bytes;
    type Error = <Body as HttpBody>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let frame = ready!(Pin::new(&mut self.body).poll_frame(cx));
        if let (Some(Ok(_)), Some(pulse)) = (&frame, &self.pulse) {
            pulse.beat();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Now, in seconds since the Unix epoch.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(60);

    fn started() -> (Readiness, Metrics) {
        let readiness = Readiness::with_silence_limit(LIMIT);
        readiness.set_started();
        (readiness, Metrics::default())
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_watch_is_unready_by_name_until_it_answers_again() {
        let (readiness, metrics) = started();
        let pulse = start("memcached deployments", &readiness, &metrics);
        let other = start("memcached", &readiness, &metrics);

        // Answering within the limit, for longer than the limit.
        for _ in 0..3 {
            tokio::time::sleep(LIMIT - Duration::from_secs(1)).await;
            assert_eq!(readiness.check(), None, "within the limit");
            pulse.beat();
            other.beat();
        }
        tokio::time::sleep(LIMIT - Duration::from_secs(1)).await;
        other.beat();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let why = readiness
            .check()
            .expect("unready once silent past the limit");
        assert!(why.contains("memcached deployments"), "{why}");
        assert!(!why.contains("memcached,"), "the other one answered: {why}");

        pulse.beat();
        tokio::time::sleep(LIMIT / 10).await;
        assert_eq!(readiness.check(), None, "answering again");

        // Silent again, then gone: a watch that stopped is not waited for, but another of the
        // same name (a controller's context made again, say) still is.
        tokio::time::sleep(LIMIT * 2).await;
        let again = start("memcached deployments", &readiness, &metrics);
        tokio::time::sleep(LIMIT + Duration::from_secs(1)).await;
        drop((pulse, other));
        let why = readiness
            .check()
            .expect("the other watch of that name is silent");
        assert!(why.contains("memcached deployments"), "{why}");
        drop(again);
        assert_eq!(readiness.check(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_whose_task_dies_leaves_the_manager_unready() {
        let (readiness, metrics) = started();
        // A healthy watch whose task panics (a poisoned lock, say), and a silent one.
        for silent in [false, true] {
            let pulse = start("memcached deployments", &readiness, &metrics);
            if silent {
                tokio::time::sleep(LIMIT + Duration::from_secs(1)).await;
                assert!(readiness.check().is_some(), "silent");
            }
            let task = tokio::spawn(async move {
                let _pulse = pulse;
                panic!("the cache lock is poisoned");
            });
            assert!(task.await.unwrap_err().is_panic());
            let why = readiness.check().expect("a dead watch: not ready");
            assert!(why.contains("memcached deployments"), "{why}");
            assert!(why.contains("died"), "{why}");
            tokio::time::sleep(LIMIT * 3).await;
            assert!(readiness.check().is_some(), "for good");
            // A new watch of that name replaces it.
            let again = start("memcached deployments", &readiness, &metrics);
            assert_eq!(readiness.check(), None);
            again.beat();
            drop(again);
        }
        // A watch that stops without dying (at shutdown) is not waited for.
        drop(start("memcached", &readiness, &metrics));
        assert_eq!(readiness.check(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn errors_and_the_last_answer_are_in_the_metrics() {
        let (readiness, metrics) = started();
        let pulse = start("memcached", &readiness, &metrics);
        pulse.failed();
        pulse.failed();
        let text = metrics.encode();
        assert!(
            text.contains(r#"memop_watch_errors_total{watch="memcached"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"memop_watch_last_activity_timestamp_seconds{watch="memcached"} "#),
            "{text}"
        );
    }
}
