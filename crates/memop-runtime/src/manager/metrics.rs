//! Prometheus metrics with controller-runtime's names and labels, so that its dashboards
//! (`grafana/`) and alerts carry over:
//!
//! - reconciles: `controller_runtime_reconcile_total{controller, result}` (`success` or
//!   `error`), `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_time_seconds`,
//!   `controller_runtime_max_concurrent_reconciles` and `controller_runtime_active_workers`;
//! - work in progress, as client-go's workqueue reports it (`{name, controller}`):
//!   `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
//!   `workqueue_longest_running_processor_seconds` and `workqueue_retries_total` (failed
//!   reconciles requeued with backoff);
//! - the API client: `rest_client_requests_total{code, method, host}`;
//! - leadership: `leader_election_master_status{name}`;
//! - each watch of the controllers (memop's own: controller-runtime has none):
//!   `memop_watch_errors_total{watch}` (lists and watches that failed) and
//!   `memop_watch_last_activity_timestamp_seconds{watch}` (when the API server last answered
//!   on it, bookmarks included; see `watchdog.rs`);
//! - webhooks (with `memop create webhook`), by the path a webhook is served at:
//!   `controller_runtime_webhook_requests_total{webhook, code}`,
//!   `controller_runtime_webhook_requests_in_flight{webhook}` and
//!   `controller_runtime_webhook_latency_seconds{webhook}`;
//! - the process: `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//!   `process_open_fds`, `process_start_time_seconds` and the rest of Prometheus' standard set.
//!
//! - each controller's queue (memop's priority queue, `controller/queue.rs`), as client-go's
//!   workqueue reports it: `workqueue_depth`, `workqueue_adds_total` and
//!   `workqueue_queue_duration_seconds` (`{name, controller}`);

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use futures::future::BoxFuture;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, EncodeMetric,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: Outcome,
}

/// client-go names a workqueue after its controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: &'static str,
    controller: &'static str,
}

impl QueueLabels {
    fn of(controller: &'static str) -> Self {
        Self {
            name: controller,
            controller,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WatchLabels {
    watch: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    webhook: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MigrationLabels {
    crd: String,
    method: &'static str,
    result: Outcome,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // label values are lowercase, as controller-runtime's
enum Outcome {
    success,
    error,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The manager's metrics, with controller-runtime's names and labels: every controller's
/// reconciles and work in progress, the API client's requests, leadership, the webhooks and the
/// process.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    reconcile_time: Histograms<ControllerLabels>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    work_duration: Histograms<QueueLabels>,
    retries: Family<QueueLabels, Counter>,
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    queue_duration: Histograms<QueueLabels>,
    in_flight: Arc<InFlight>,
    requests: Family<RequestLabels, Counter>,
    leader: Family<LeaseLabels, Gauge>,
    watch_errors: Family<WatchLabels, Counter>,
    watch_activity: Family<WatchLabels, Gauge<f64, AtomicU64>>,
    webhook_requests: Family<WebhookCodeLabels, Counter>,
    storage_migrations: Family<MigrationLabels, Counter>,
    webhook_in_flight: Family<WebhookLabels, Gauge>,
    webhook_latency: Histograms<WebhookLabels>,
    shard_buckets: Gauge,
    shard_members: Gauge,
}

impl Default for Metrics {
    // Over 80 lines on purpose: one registration per metric family, in the order `/metrics`
    // lists them, each with its help text; split up, the list would no longer read as one.
    fn default() -> Self {
        // controller-runtime's buckets: 5 ms to 60 s for a reconcile; client-go's workqueue
        // uses powers of ten from 10 ns.
        fn reconcile_buckets() -> Histogram {
            Histogram::new(exponential_buckets(0.005, 2.0, 14))
        }
        fn work_buckets() -> Histogram {
            Histogram::new(exponential_buckets(1e-8, 10.0, 12))
        }
        // Prometheus' default buckets, which controller-runtime's webhook latency uses.
        fn webhook_buckets() -> Histogram {
            Histogram::new([
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ])
        }
        let mut metrics = Self {
            registry: Registry::default(),
            reconciles: Family::default(),
            errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_buckets),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            work_duration: Family::new_with_constructor(work_buckets),
            retries: Family::default(),
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(work_buckets),
            in_flight: Arc::default(),
            requests: Family::default(),
            leader: Family::default(),
            watch_errors: Family::default(),
            watch_activity: Family::default(),
            webhook_requests: Family::default(),
            storage_migrations: Family::default(),
            webhook_in_flight: Family::default(),
            webhook_latency: Family::new_with_constructor(webhook_buckets),
            shard_buckets: Gauge::default(),
            shard_members: Gauge::default(),
        };
        let registry = &mut metrics.registry;
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            metrics.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            metrics.errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            metrics.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            metrics.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            metrics.active_workers.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            metrics.work_duration.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            metrics.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            metrics.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            metrics.queue_duration.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            metrics.retries.clone(),
        );
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            metrics.requests.clone(),
        );
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
            metrics.leader.clone(),
        );
        registry.register(
            "memop_shard_active_buckets",
            "Buckets (of 64) whose objects this replica reconciles, with --sharding",
            metrics.shard_buckets.clone(),
        );
        registry.register(
            "memop_shard_members",
            "Live replicas of the shard ring as this replica last read it, with --sharding",
            metrics.shard_members.clone(),
        );
        registry.register(
            "memop_watch_errors",
            "Total number of failed lists and watches per watch of the controllers",
            metrics.watch_errors.clone(),
        );
        registry.register(
            "memop_watch_last_activity_timestamp_seconds",
            "When the API server last answered on each watch of the controllers (a list page, an event, a bookmark), in seconds since the Unix epoch",
            metrics.watch_activity.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            metrics.webhook_requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            metrics.webhook_in_flight.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            metrics.webhook_latency.clone(),
        );
        registry.register(
            "memop_storage_migrations",
            "Total number of migrations of a CRD's stored objects to its storage version, by method (storageversionmigration or rewrite) and result",
            metrics.storage_migrations.clone(),
        );
        registry.register_collector(Box::new(metrics.in_flight.clone()));
        registry.register_collector(Box::new(Process));
        metrics
    }
}

impl Metrics {
    /// Declares `controller`, which reconciles at most `max` objects at once: its families
    /// show from the first scrape, before any reconcile.
    pub(crate) fn controller(&self, controller: &'static str, max: u16) {
        let labels = ControllerLabels { controller };
        self.max_concurrent.get_or_create(&labels).set(max.into());
        // Creating a series is enough: it starts at 0.
        let _ = self.active_workers.get_or_create(&labels);
        let _ = self.errors.get_or_create(&labels);
        let _ = self.retries.get_or_create(&QueueLabels::of(controller));
        let _ = self.queue(controller);
        self.in_flight.work().entry(controller).or_default();
    }

    /// The handles on the queue metrics of `controller` (see `controller/queue.rs`), whose
    /// series show from the next scrape.
    pub(crate) fn queue(&self, controller: &'static str) -> QueueMetrics {
        let labels = QueueLabels::of(controller);
        QueueMetrics {
            depth: self.depth.get_or_create(&labels).clone(),
            adds: self.adds.get_or_create(&labels).clone(),
            queue_duration: self.queue_duration.get_or_create(&labels).clone(),
        }
    }

    /// Starts one reconcile of `controller`; it counts as work in progress until the returned
    /// guard is dropped (a reconcile cancelled at shutdown included).
    pub(crate) fn start(&self, controller: &'static str) -> Work<'_> {
        let id = self.in_flight.next.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        self.in_flight
            .work()
            .entry(controller)
            .or_default()
            .insert(id, started);
        self.active_workers
            .get_or_create(&ControllerLabels { controller })
            .inc();
        Work {
            metrics: self,
            controller,
            id,
            started,
        }
    }

    /// Records one reconcile of `controller`.
    pub(crate) fn reconciled(&self, controller: &'static str, ok: bool, took: Duration) {
        let result = if ok { Outcome::success } else { Outcome::error };
        self.reconciles
            .get_or_create(&ResultLabels { controller, result })
            .inc();
        if !ok {
            self.errors
                .get_or_create(&ControllerLabels { controller })
                .inc();
        }
        self.reconcile_time
            .get_or_create(&ControllerLabels { controller })
            .observe(took.as_secs_f64());
    }

    /// Records that a failed reconcile of `controller` was requeued with backoff.
    pub(crate) fn retried(&self, controller: &'static str) {
        self.retries
            .get_or_create(&QueueLabels::of(controller))
            .inc();
    }

    /// Records whether this replica holds the leader election Lease `name`.
    pub(crate) fn leading(&self, name: &str, leading: bool) {
        let labels = LeaseLabels {
            name: name.to_string(),
        };
        self.leader.get_or_create(&labels).set(leading.into());
    }

    /// Records this replica's share with `--sharding`: its active buckets and the live
    /// members of its ring.
    pub(crate) fn shard(&self, active_buckets: u32, members: usize) {
        self.shard_buckets.set(active_buckets.into());
        self.shard_members
            .set(i64::try_from(members).unwrap_or(i64::MAX));
    }

    /// The error count and the time of the last answer of watch `name` (see `watchdog.rs`):
    /// handles on its series, which show from the next scrape.
    pub(crate) fn watch(&self, name: &'static str) -> (Counter, Gauge<f64, AtomicU64>) {
        let labels = WatchLabels { watch: name };
        let errors = self.watch_errors.get_or_create(&labels).clone();
        let activity = self.watch_activity.get_or_create(&labels).clone();
        (errors, activity)
    }

    /// Records one migration of the stored objects of CRD `crd` ([`crate::migration`]).
    pub(crate) fn storage_migration(&self, crd: &str, method: &'static str, ok: bool) {
        let labels = MigrationLabels {
            crd: crd.to_string(),
            method,
            result: if ok { Outcome::success } else { Outcome::error },
        };
        self.storage_migrations.get_or_create(&labels).inc();
    }

    /// A layer for the manager's API client that counts its requests by status code, method
    /// and `host` (the API server's `host:port`, which the requests this layer sees do not
    /// carry yet: kube adds it further down).
    pub(crate) fn count_requests(&self, host: String) -> CountRequests {
        CountRequests {
            requests: self.requests.clone(),
            host,
        }
    }

    /// Starts one request to the webhook served at `path`: in flight until the returned
    /// guard is dropped, counted and timed by `WebhookRequest::answered`.
    pub(crate) fn webhook(&self, path: &str) -> WebhookRequest<'_> {
        let labels = WebhookLabels {
            webhook: path.to_string(),
        };
        self.webhook_in_flight.get_or_create(&labels).inc();
        WebhookRequest {
            metrics: self,
            labels,
            started: Instant::now(),
        }
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// What a controller's queue reports: the items ready and not taken yet, the items that
/// became ready, and how long each waited to be taken (client-go's workqueue metrics).
#[derive(Clone, Debug)]
pub(crate) struct QueueMetrics {
    pub(crate) depth: Gauge,
    pub(crate) adds: Counter,
    pub(crate) queue_duration: Histogram,
}

/// One reconcile in progress (see [`Metrics::start`]).
pub struct Work<'a> {
    metrics: &'a Metrics,
    controller: &'static str,
    id: u64,
    started: Instant,
}

impl Drop for Work<'_> {
    fn drop(&mut self) {
        let metrics = self.metrics;
        if let Some(work) = metrics.in_flight.work().get_mut(self.controller) {
            work.remove(&self.id);
        }
        metrics
            .active_workers
            .get_or_create(&ControllerLabels {
                controller: self.controller,
            })
            .dec();
        metrics
            .work_duration
            .get_or_create(&QueueLabels::of(self.controller))
            .observe(self.started.elapsed().as_secs_f64());
    }
}

/// One webhook request in progress (see [`Metrics::webhook`]).
pub struct WebhookRequest<'a> {
    metrics: &'a Metrics,
    labels: WebhookLabels,
    started: Instant,
}

impl WebhookRequest<'_> {
    /// Records that the request was answered with the HTTP status `code`.
    pub fn answered(self, code: u16) {
        let labels = WebhookCodeLabels {
            webhook: self.labels.webhook.clone(),
            code: code.to_string(),
        };
        self.metrics.webhook_requests.get_or_create(&labels).inc();
        self.metrics
            .webhook_latency
            .get_or_create(&self.labels)
            .observe(self.started.elapsed().as_secs_f64());
    }
}

impl Drop for WebhookRequest<'_> {
    fn drop(&mut self) {
        self.metrics
            .webhook_in_flight
            .get_or_create(&self.labels)
            .dec();
    }
}

/// The reconciles in progress, per controller, by when they started: read at each scrape.
#[derive(Debug, Default)]
struct InFlight {
    next: AtomicU64,
    started: Mutex<BTreeMap<&'static str, HashMap<u64, Instant>>>,
}

impl InFlight {
    fn work(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, HashMap<u64, Instant>>> {
        // Nothing panics while holding the lock; recover its data if something did.
        self.started
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Collector for InFlight {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let ages: Vec<(&'static str, Vec<f64>)> = self
            .work()
            .iter()
            .map(|(controller, started)| {
                let ages = started.values().map(|s| (now - *s).as_secs_f64()).collect();
                (*controller, ages)
            })
            .collect();
        type Aggregate = (&'static str, &'static str, fn(&[f64]) -> f64);
        let gauges: [Aggregate; 2] = [
            (
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
                |ages| ages.iter().sum(),
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                |ages| ages.iter().copied().fold(0.0, f64::max),
            ),
        ];
        for (name, help, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (controller, ages) in &ages {
                let labels = QueueLabels::of(controller);
                ConstGauge::new(value(ages)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// Prometheus' standard process metrics, read at each scrape (by metrics-process, which reads
/// them as the Go client does, on Linux from /proc).
#[derive(Debug)]
struct Process;

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let process = metrics_process::collector::collect();
        if let Some(seconds) = process.cpu_seconds_total {
            let help = "Total user and system CPU time spent in seconds.";
            let counter = ConstCounter::new(seconds);
            let family = encoder.encode_descriptor(
                "process_cpu_seconds",
                help,
                None,
                MetricType::Counter,
            )?;
            counter.encode(family)?;
        }
        let gauges = [
            (
                "process_open_fds",
                "Number of open file descriptors.",
                process.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                process.max_fds,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                process.virtual_memory_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                process.virtual_memory_max_bytes,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                process.resident_memory_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                process.start_time_seconds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                process.threads,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                // Exact up to 2^53: far beyond any of these.
                let gauge = ConstGauge::new(value as f64);
                gauge.encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
            }
        }
        Ok(())
    }
}

/// See [`Metrics::count_requests`].
#[derive(Clone)]
pub struct CountRequests {
    requests: Family<RequestLabels, Counter>,
    host: String,
}

impl<S> tower::Layer<S> for CountRequests {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counter: self.clone(),
        }
    }
}

/// The API client's transport, counting what goes through it.
#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    counter: CountRequests,
}

impl<S, B, R> tower::Service<http::Request<B>> for Counted<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = request.method().to_string();
        let CountRequests { requests, host } = self.counter.clone();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            let code = match &response {
                Ok(response) => response.status().as_str().to_string(),
                // As client-go labels a request that got no response.
                Err(_) => "<error>".to_string(),
            };
            requests
                .get_or_create(&RequestLabels { code, method, host })
                .inc();
            response
        })
    }
}

/// Serves `GET /metrics`.
pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            async move {
                (
                    [(
                        CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    metrics.encode(),
                )
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|value| value.parse().ok())
    }

    #[test]
    fn counts_reconciles_by_controller_and_result() {
        let metrics = Metrics::default();
        metrics.reconciled("memcached", true, Duration::from_millis(3));
        metrics.reconciled("memcached", false, Duration::from_millis(3));
        let text = metrics.encode();
        let series = [
            r#"controller_runtime_reconcile_total{controller="memcached",result="success"}"#,
            r#"controller_runtime_reconcile_total{controller="memcached",result="error"}"#,
            r#"controller_runtime_reconcile_errors_total{controller="memcached"}"#,
        ];
        for series in series {
            assert_eq!(sample(&text, series), Some(1.0), "{series} in\n{text}");
        }
        let count = r#"controller_runtime_reconcile_time_seconds_count{controller="memcached"}"#;
        assert_eq!(sample(&text, count), Some(2.0), "{text}");
    }

    #[test]
    fn a_declared_controller_shows_before_its_first_reconcile() {
        let metrics = Metrics::default();
        metrics.controller("memcached", 10);
        let text = metrics.encode();
        let series = [
            (
                r#"controller_runtime_max_concurrent_reconciles{controller="memcached"}"#,
                10.0,
            ),
            (
                r#"controller_runtime_active_workers{controller="memcached"}"#,
                0.0,
            ),
            (
                r#"controller_runtime_reconcile_errors_total{controller="memcached"}"#,
                0.0,
            ),
            (
                r#"workqueue_retries_total{name="memcached",controller="memcached"}"#,
                0.0,
            ),
            (
                r#"workqueue_unfinished_work_seconds{name="memcached",controller="memcached"}"#,
                0.0,
            ),
        ];
        for (series, value) in series {
            assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
        }
    }

    #[test]
    fn work_in_progress_counts_until_its_guard_drops() {
        let metrics = Metrics::default();
        let first = metrics.start("memcached");
        let second = metrics.start("memcached");
        std::thread::sleep(Duration::from_millis(20));
        let text = metrics.encode();
        let active = r#"controller_runtime_active_workers{controller="memcached"}"#;
        assert_eq!(sample(&text, active), Some(2.0), "{text}");
        let longest = r#"workqueue_longest_running_processor_seconds{name="memcached",controller="memcached"}"#;
        let unfinished =
            r#"workqueue_unfinished_work_seconds{name="memcached",controller="memcached"}"#;
        let longest = |text: &str| sample(text, longest).unwrap();
        let unfinished = |text: &str| sample(text, unfinished).unwrap();
        assert!(longest(&text) >= 0.02, "{text}");
        assert!(
            unfinished(&text) >= 2.0 * 0.02,
            "two reconciles of 20 ms: {text}"
        );

        drop(first);
        drop(second);
        let text = metrics.encode();
        assert_eq!(sample(&text, active), Some(0.0), "{text}");
        assert_eq!(longest(&text), 0.0, "{text}");
        assert_eq!(unfinished(&text), 0.0, "{text}");
        let work =
            r#"workqueue_work_duration_seconds_count{name="memcached",controller="memcached"}"#;
        assert_eq!(sample(&text, work), Some(2.0), "{text}");
    }

    #[test]
    fn webhook_requests_are_counted_by_code_timed_and_in_flight_until_answered() {
        let metrics = Metrics::default();
        let path = "/validate-example";
        let in_flight =
            r#"controller_runtime_webhook_requests_in_flight{webhook="/validate-example"}"#;
        let request = metrics.webhook(path);
        assert_eq!(sample(&metrics.encode(), in_flight), Some(1.0));
        request.answered(200);
        metrics.webhook(path).answered(500);
        // A request whose connection closed before an answer is in flight no more, uncounted.
        drop(metrics.webhook(path));
        let text = metrics.encode();
        assert_eq!(sample(&text, in_flight), Some(0.0), "{text}");
        let ok =
            r#"controller_runtime_webhook_requests_total{webhook="/validate-example",code="200"}"#;
        let failed =
            r#"controller_runtime_webhook_requests_total{webhook="/validate-example",code="500"}"#;
        assert_eq!(
            (sample(&text, ok), sample(&text, failed)),
            (Some(1.0), Some(1.0)),
            "{text}"
        );
        let latency =
            r#"controller_runtime_webhook_latency_seconds_count{webhook="/validate-example"}"#;
        assert_eq!(sample(&text, latency), Some(2.0), "{text}");
    }

    #[test]
    fn leadership_and_process_metrics() {
        let metrics = Metrics::default();
        metrics.leading("example-lease", true);
        let text = metrics.encode();
        let leader = r#"leader_election_master_status{name="example-lease"}"#;
        assert_eq!(sample(&text, leader), Some(1.0), "{text}");
        metrics.leading("example-lease", false);
        assert_eq!(sample(&metrics.encode(), leader), Some(0.0));

        let resident = sample(&text, "process_resident_memory_bytes").expect("resident memory");
        assert!(
            resident > 1e6,
            "a process takes more than a megabyte: {resident}"
        );
        let started = sample(&text, "process_start_time_seconds").expect("start time");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            started <= now && started > now - 3600.0,
            "started {started}, now {now}"
        );
        assert!(
            sample(&text, "process_cpu_seconds_total").is_some(),
            "{text}"
        );
        assert!(sample(&text, "process_open_fds").unwrap() >= 3.0, "{text}");
    }

    #[tokio::test]
    async fn counts_api_requests_by_code_method_and_host() {
        use tower::{Layer, ServiceExt};
        let metrics = Metrics::default();
        let api = tower::service_fn(|request: http::Request<()>| async move {
            let status = if request.uri().path() == "/missing" {
                404
            } else {
                200
            };
            Ok::<_, std::convert::Infallible>(
                http::Response::builder().status(status).body(()).unwrap(),
            )
        });
        let counted = metrics.count_requests("10.0.0.1:6443".into()).layer(api);
        for path in ["/api", "/api", "/missing"] {
            let request = http::Request::get(path).body(()).unwrap();
            counted.clone().oneshot(request).await.unwrap();
        }
        let text = metrics.encode();
        let ok = r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"}"#;
        let missing = r#"rest_client_requests_total{code="404",method="GET",host="10.0.0.1:6443"}"#;
        assert_eq!(sample(&text, ok), Some(2.0), "{text}");
        assert_eq!(sample(&text, missing), Some(1.0), "{text}");
    }
}
