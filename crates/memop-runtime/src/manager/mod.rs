//! The manager runs the controllers and everything around them, like controller-runtime's
//! manager does for Go operators: the health and metrics endpoints, leader election, and a
//! graceful shutdown on SIGTERM/SIGINT.

mod auth;
mod client;
mod flags;
mod health;
pub mod http;
mod leader;
mod metrics;
pub mod sharding;
mod shutdown;
pub mod telemetry;
pub mod tls;
mod watchdog;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use kube::runtime::events::Reporter;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::task::JoinSet;

use crate::Operator;

pub use flags::{Flags, LogFormat, parse_bind_address};
pub use health::Readiness;
pub use metrics::Metrics;
pub(crate) use metrics::QueueMetrics;
pub use shutdown::Shutdown;
use watchdog::Pulse;
pub use watchdog::WATCH_SILENCE_LIMIT;

/// What every controller gets from the manager: the client, the watched namespace, the metrics,
/// readiness and shutdown signal, and the settings of its flags. Read them with the accessors;
/// tests change a setting with the `with_*` methods (`Shared::new(..).with_reconcile_timeout(..)`).
#[derive(Clone)]
pub struct Shared {
    /// The client every controller and the webhook server use.
    pub(crate) client: Client,
    /// The only namespace the controllers watch, or `None` for all of them (`WATCH_NAMESPACE`).
    pub(crate) watch_namespace: Option<String>,
    /// The manager's metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// What `/readyz` reports.
    pub(crate) readiness: Readiness,
    /// The signal every task of the manager stops on.
    pub(crate) shutdown: Shutdown,
    /// Who the events this operator records come from.
    pub(crate) reporter: Reporter,
    /// How many objects each controller reconciles at once (`--max-concurrent-reconciles`).
    pub(crate) max_concurrent_reconciles: u16,
    /// How many rollouts each operand controller lets run at once, across the operator's
    /// replicas (`--max-concurrent-rollouts`; 0: no limit).
    pub(crate) max_concurrent_rollouts: usize,
    /// How long one reconcile may take, its API calls included: a call that hangs (on a
    /// half-open connection, say) fails the reconcile instead of blocking its object for ever.
    pub(crate) reconcile_timeout: Duration,
    /// Whether this replica leads (always, without leader election): a controller built
    /// before it does fills its caches while it waits, and reconciles once it leads.
    pub(crate) leading: Arc<tokio::sync::watch::Sender<bool>>,
    /// This replica's share of the objects, with `--sharding`: controllers reconcile only the
    /// objects of its active buckets.
    pub(crate) shard: Option<sharding::Shard>,
}

impl Shared {
    /// Everything a controller of `operator` needs, around `client`, for tests and tools.
    pub fn new(operator: &Operator, client: Client, watch_namespace: Option<String>) -> Self {
        Self {
            client,
            watch_namespace,
            metrics: Arc::new(Metrics::default()),
            readiness: Readiness::default(),
            shutdown: Shutdown::default(),
            reporter: Reporter {
                controller: operator.name.into(),
                instance: std::env::var("POD_NAME").ok(),
            },
            max_concurrent_reconciles: 10,
            max_concurrent_rollouts: 10,
            reconcile_timeout: Duration::from_secs(60),
            leading: Arc::new(tokio::sync::watch::Sender::new(true)),
            shard: None,
        }
    }

    /// These settings with `shard` as this replica's share: the controllers built on them
    /// reconcile only the objects of its active buckets (see [`sharding`]).
    pub fn with_shard(mut self, shard: sharding::Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// This replica's share of the objects, with `--sharding`.
    pub fn shard(&self) -> Option<&sharding::Shard> {
        self.shard.as_ref()
    }

    /// Whether this replica leads now (always, without leader election).
    pub fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// Resolves once this replica leads (at once without leader election): a task that writes
    /// waits for it.
    pub async fn leading(&self) {
        // The sender lives as long as `self`.
        let _ = self.leading.subscribe().wait_for(|leading| *leading).await;
    }

    /// The client every controller and the webhook server use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The only namespace the controllers watch, or `None` for all of them (`WATCH_NAMESPACE`).
    pub fn watch_namespace(&self) -> Option<&str> {
        self.watch_namespace.as_deref()
    }

    /// The manager's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// What `/readyz` reports.
    pub fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// The signal every task of the manager stops on.
    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Who the events this operator records come from.
    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// How many rollouts of the operator's own making each operand lets run at once
    /// (`--max-concurrent-rollouts`; 0: no limit).
    pub fn max_concurrent_rollouts(&self) -> usize {
        self.max_concurrent_rollouts
    }

    /// How long one reconcile may take, its API calls included.
    pub fn reconcile_timeout(&self) -> Duration {
        self.reconcile_timeout
    }

    /// These settings with at most `max` rollouts at once (`--max-concurrent-rollouts`).
    pub fn with_max_concurrent_rollouts(mut self, max: usize) -> Self {
        self.max_concurrent_rollouts = max;
        self
    }

    /// These settings with reconciles limited to `timeout`.
    pub fn with_reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = timeout;
        self
    }

    /// These settings with `readiness` as what `/readyz` reports (a test's own silence limit,
    /// say: [`Readiness::with_silence_limit`]).
    pub fn with_readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = readiness;
        self
    }

    /// Starts the watchdog of watch `name` (see `watchdog.rs`): returns `api` on a client whose
    /// answers show the watch alive, and the pulse to tell of the watch's errors.
    pub(crate) fn watched<K>(&self, name: &'static str, api: Api<K>) -> (Api<K>, Arc<Pulse>)
    where
        K: Resource<DynamicType = ()>,
        K::Scope: crate::controller::WatchScope,
    {
        let pulse = watchdog::start(name, &self.readiness, &self.metrics);
        let namespace = api.namespace().map(str::to_owned);
        let client = watchdog::answers_beat(api.into_client(), pulse.clone());
        let api = <K::Scope as crate::controller::WatchScope>::api(client, namespace.as_deref());
        (api, pulse)
    }

    /// The API of a namespaced kind, limited to the watched namespace when there is one.
    pub fn namespaced_api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
        K: Clone + DeserializeOwned + std::fmt::Debug,
    {
        match &self.watch_namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }
}

/// How long each cleanup at shutdown may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What the manager runs once this replica leads ([`Manager::register`]): a controller
/// ([`Controller`](crate::controller::Controller)), or any task as `(name, future)`.
pub trait Runnable: Send + 'static {
    /// Its name in logs and readiness (a controller's, as its `Builder` was given it).
    fn name(&self) -> &'static str;
    /// Runs it until the manager shuts down.
    fn run(self) -> BoxFuture<'static, anyhow::Result<()>>;
}

impl<F> Runnable for (&'static str, F)
where
    F: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    fn name(&self) -> &'static str {
        self.0
    }

    fn run(self) -> BoxFuture<'static, anyhow::Result<()>> {
        Box::pin(self.1)
    }
}

/// A registered runnable, built when the manager runs: its name, and what runs it.
type ControllerFn =
    Box<dyn FnOnce(Shared) -> (&'static str, BoxFuture<'static, anyhow::Result<()>>) + Send>;

/// A running manager with its registered controllers, which start once this replica leads.
pub struct Manager {
    shared: Shared,
    leader_election: Option<leader::Config>,
    sharding: Option<sharding::Config>,
    controllers: Vec<ControllerFn>,
    cache_sync_timeout: Duration,
    graceful_shutdown_timeout: Duration,
}

impl Manager {
    /// Connects to the cluster and starts the health and metrics endpoints of `operator`.
    /// Its requests name it in their User-Agent, without a version: see
    /// [`Manager::start_with_version`].
    pub async fn start(operator: &Operator, flags: &Flags) -> anyhow::Result<Self> {
        Self::start_as(operator, None, flags).await
    }

    /// [`Manager::start`], with the operator's version in the User-Agent of its requests
    /// (`<name>/<version> memop-runtime/<version>`): pass `env!("CARGO_PKG_VERSION")`.
    pub async fn start_with_version(
        operator: &Operator,
        version: &str,
        flags: &Flags,
    ) -> anyhow::Result<Self> {
        Self::start_as(operator, Some(version), flags).await
    }

    async fn start_as(
        operator: &Operator,
        version: Option<&str>,
        flags: &Flags,
    ) -> anyhow::Result<Self> {
        let metrics = Arc::new(Metrics::default());
        let config = kube::Config::infer()
            .await
            .context("connecting to Kubernetes: set KUBECONFIG, or run in a cluster")?;
        let client = client::build(
            config,
            &client::user_agent(operator, version),
            client::READ_TIMEOUT,
            &metrics,
        )
        .context("configuring the Kubernetes client")?;
        let mut shared = Shared::new(
            operator,
            client,
            flags.watch_namespace.clone().filter(|ns| !ns.is_empty()),
        );
        shared.metrics = metrics;
        shared.max_concurrent_reconciles = flags.max_concurrent_reconciles;
        shared.max_concurrent_rollouts = flags.max_concurrent_rollouts;
        match &shared.watch_namespace {
            Some(ns) => tracing::info!(namespace = %ns, "watching one namespace"),
            None => tracing::info!("watching all namespaces"),
        }
        shutdown::listen_for_signals(shared.shutdown.clone());
        // The HTTP servers stop last, once `run` has stopped everything else.
        shared.shutdown.hold_servers();
        let probes = health::router(shared.readiness.clone());
        if let Some(addr) = flags::parse_bind_address(&flags.health_probe_bind_address)? {
            http::spawn(
                "health probes",
                addr,
                probes,
                None,
                flags.enable_http2,
                shared.shutdown.clone(),
            )
            .await?;
        }
        if let Some(addr) = flags::parse_bind_address(&flags.metrics_bind_address)? {
            serve_metrics(flags, addr, &shared).await?;
        }
        // Sharded, every replica reconciles: there is no leader to elect.
        if flags.sharding && flags.leader_elect {
            tracing::info!("sharding: --leader-elect does not apply");
        }
        let leader_election = (flags.leader_elect && !flags.sharding)
            .then(|| leader::Config::from_flags(operator, flags));
        let sharding = flags
            .sharding
            .then(|| sharding::Config::from_flags(operator, flags));
        Ok(Self {
            shared,
            leader_election,
            sharding,
            controllers: Vec::new(),
            cache_sync_timeout: flags.cache_sync_timeout,
            graceful_shutdown_timeout: flags.graceful_shutdown_timeout,
        })
    }

    /// What the controllers and the webhook server share: the client, the metrics, readiness,
    /// the shutdown signal.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Registers a controller: [`Manager::run`] calls `build` as it starts, and runs what it
    /// returns (a [`Controller`](crate::controller::Controller), under the name its `Builder`
    /// was given) once this replica leads. With leader election, `build` is called on every
    /// replica before it leads, so that the controller fills its caches while waiting (a warm
    /// standby); keep writes in what runs.
    pub fn register<F, R>(&mut self, build: F)
    where
        F: FnOnce(Shared) -> R + Send + 'static,
        R: Runnable,
    {
        self.controllers.push(Box::new(move |shared| {
            let runnable = build(shared);
            (runnable.name(), runnable.run())
        }));
    }

    /// Migrates the objects of `migration`'s CRDs to their storage versions, and prunes their
    /// `storedVersions`, once this replica leads (see [`crate::migration`]); the controllers do
    /// not wait for it, and readiness does not depend on it.
    pub fn migrate_storage(&mut self, migration: crate::migration::StorageMigration) {
        self.register(move |shared| {
            let run = async move {
                shared.readiness.synced(crate::migration::NAME);
                migration.run(&shared).await;
                Ok(())
            };
            (crate::migration::NAME, run)
        });
    }

    /// Runs the controllers until a shutdown signal, or until this replica loses leadership;
    /// then what was deferred at shutdown ([`Shutdown::defer`]); then stops the HTTP servers,
    /// which serve until then.
    pub async fn run(&mut self) -> anyhow::Result<()> {
        let outcome = self.run_controllers().await;
        self.shared.shutdown.trigger();
        self.shared.shutdown.run_deferred(CLEANUP_TIMEOUT).await;
        self.shared.shutdown.release_servers();
        outcome
    }

    async fn run_controllers(&mut self) -> anyhow::Result<()> {
        // With leader election, the controllers are built while this replica waits to lead: a
        // warm standby, whose caches list and follow the API server as the leader's do, so that
        // it takes over without listing everything again (controller-runtime's informers, too, run on every
        // replica). They
        // reconcile once it leads.
        if self.leader_election.is_some() {
            self.shared.leading.send_replace(false);
        }
        // Sharded, every replica runs its controllers at once, each reconcile gated by the
        // replica's share, which grows as the ring takes it in.
        let shard = self.sharding.clone().map(|config| {
            let shard = sharding::Shard::start(self.shared.client.clone(), config);
            self.shared.shard = Some(shard.clone());
            tokio::spawn(report_shard(shard.clone(), self.shared.metrics.clone()));
            shard
        });
        let controllers: Vec<_> = self
            .controllers
            .drain(..)
            .map(|build| build(self.shared.clone()))
            .collect();
        let mut lease = match &self.leader_election {
            Some(config) => {
                self.shared.readiness.set_standby(true);
                self.shared.metrics.leading(config.lease_name(), false);
                let lease =
                    leader::acquire(self.shared.client.clone(), config, &self.shared.shutdown)
                        .await;
                self.shared.readiness.set_standby(false);
                match lease {
                    Some(lease) => {
                        self.shared.metrics.leading(config.lease_name(), true);
                        self.shared.leading.send_replace(true);
                        Some(lease)
                    }
                    // Shut down while waiting to lead: nothing ran, nothing to stop.
                    None => return Ok(()),
                }
            }
            None => None,
        };
        let mut running = JoinSet::new();
        for (name, run) in controllers {
            self.shared.readiness.expect(name);
            running.spawn(async move { (name, run.await) });
        }
        self.shared.readiness.set_started();
        tracing::info!(controllers = running.len(), "started controllers");
        let shutdown = self.shared.shutdown.clone();
        let mut lost_leadership = false;
        let mut lost_shard = false;
        let outcome = tokio::select! {
            () = lost(&lease) => {
                lost_leadership = true;
                Ok(())
            }
            () = shard_lost(&shard) => {
                lost_shard = true;
                Ok(())
            }
            () = shutdown.wait() => Ok(()),
            why = self.shared.readiness.not_synced_within(self.cache_sync_timeout) => Err(anyhow::anyhow!(
                "{why} after {:?}: check that the CRDs are installed (make install) and that the \
                 manager's role allows list and watch (make manifests)",
                self.cache_sync_timeout
            )),
            // Controllers only end on shutdown, unless one fails.
            result = wait_all(&mut running), if !running.is_empty() => result,
        };
        if lost_leadership {
            // Another replica may lead now: stop at once, without finishing what is in flight
            // (as controller-runtime does), and do not touch the Lease.
            running.abort_all();
            self.abandon(lease);
            anyhow::bail!("lost leadership; exiting so that another replica takes over");
        }
        if lost_shard {
            // Another process of this replica's name holds its Lease (a replica that merely
            // failed to renew stops acting and rejoins without exiting): stop at once.
            running.abort_all();
            anyhow::bail!(
                "another process holds this replica's shard lease; exiting so that one process acts for it"
            );
        }
        // Whatever ended the run, stop everything else and give it a bounded time to finish.
        self.shared.shutdown.trigger();
        let rest = if let Some(why) = self.shared.readiness.unsynced() {
            // Nothing was reconciled yet: stop at once.
            tracing::info!(%why, "stopping controllers that never synced");
            running.abort_all();
            Ok(())
        } else {
            let drained =
                tokio::time::timeout(self.graceful_shutdown_timeout, wait_all(&mut running));
            tokio::select! {
                drained = drained => drained.unwrap_or_else(|_| {
                    running.abort_all();
                    tracing::warn!(timeout = ?self.graceful_shutdown_timeout, "controllers did not stop in time; stopped them");
                    Ok(())
                }),
                // The lease keeps being renewed while the controllers finish, and they stop at
                // once if it is lost meanwhile, as they would before the shutdown.
                () = lost(&lease) => {
                    running.abort_all();
                    tracing::warn!("lost leadership while stopping; stopped the controllers");
                    self.abandon(lease.take());
                    Ok(())
                }
            }
        };
        if let (Some(lease), Some(config)) = (lease, &self.leader_election) {
            lease.release().await;
            self.shared.metrics.leading(config.lease_name(), false);
        }
        // The controllers have finished (or were stopped): nothing is in flight to drain.
        if let Some(shard) = shard {
            shard.release(Duration::ZERO).await;
        }
        outcome.and(rest)
    }

    /// Lets go of a lost lease without touching it.
    fn abandon(&self, lease: Option<leader::Lease>) {
        if let (Some(lease), Some(config)) = (lease, &self.leader_election) {
            lease.abandon();
            self.shared.metrics.leading(config.lease_name(), false);
        }
    }
}

/// Resolves when this replica has lost its shard Lease for good (another process holds it);
/// never without sharding. An API server out of reach only stops it acting until it renews.
async fn shard_lost(shard: &Option<sharding::Shard>) {
    match shard {
        Some(shard) => shard.gone().await,
        None => std::future::pending().await,
    }
}

/// Resolves when this replica must stop leading; never without leader election.
async fn lost(lease: &Option<leader::Lease>) {
    match lease {
        Some(lease) => lease.lost().await,
        None => std::future::pending().await,
    }
}

/// Serves `/metrics` on `addr`: over HTTPS to the callers the API server authenticates and
/// authorizes (see [`auth`]), unless `--metrics-secure=false`.
async fn serve_metrics(
    flags: &Flags,
    addr: std::net::SocketAddr,
    shared: &Shared,
) -> anyhow::Result<()> {
    let router = metrics::router(shared.metrics.clone());
    if !flags.metrics_secure {
        tracing::warn!(
            "serving metrics over plain HTTP to anyone who can reach {addr} (--metrics-secure=false)"
        );
        return http::spawn(
            "metrics",
            addr,
            router,
            None,
            flags.enable_http2,
            shared.shutdown.clone(),
        )
        .await;
    }
    let certificate = match &flags.metrics_cert_path {
        Some(dir) => {
            let certificate = tls::Certificate::from_files(
                dir,
                &flags.metrics_cert_name,
                &flags.metrics_cert_key,
            )
            .await
            .context("the metrics certificate (--metrics-cert-path)")?;
            let certificate = Arc::new(certificate);
            certificate.watch(shared.shutdown.clone());
            certificate
        }
        None => {
            tracing::info!(
                "serving metrics with a self-signed certificate; for production, mount one with --metrics-cert-path (see config/default/cert_metrics_manager_patch.yaml)"
            );
            Arc::new(tls::Certificate::self_signed()?)
        }
    };
    let authorizer = Arc::new(auth::Authorizer::new(shared.client.clone()));
    let router = auth::protect(router, authorizer);
    let tls = certificate.acceptor(flags.enable_http2)?;
    http::spawn(
        "metrics",
        addr,
        router,
        Some(tls),
        flags.enable_http2,
        shared.shutdown.clone(),
    )
    .await
}

/// Waits for every controller task; the first failure is the result.
async fn wait_all(running: &mut JoinSet<(&'static str, anyhow::Result<()>)>) -> anyhow::Result<()> {
    while let Some(joined) = running.join_next().await {
        let (name, result) = joined.context("a controller task panicked")?;
        result.with_context(|| format!("controller {name} failed"))?;
    }
    Ok(())
}

/// Keeps the shard gauges of `metrics` current: at each change of the replica's active buckets,
/// and every few seconds for the ring's members, until the shard stops.
async fn report_shard(shard: sharding::Shard, metrics: Arc<Metrics>) {
    let mut activations = shard.activations();
    loop {
        metrics.shard(shard.active().count_ones(), shard.members().len());
        tokio::select! {
            changed = activations.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(Duration::from_secs(2)) => {
                if shard.is_lost() {
                    return;
                }
            }
        }
    }
}
