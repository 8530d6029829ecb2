//! The manager runs the controllers and everything around them, like controller-runtime's
//! manager does for Go operators: the health and metrics endpoints, leader election, and a
//! graceful shutdown on SIGTERM/SIGINT.

mod auth;
mod client;
mod flags;
pub(crate) mod health;
pub(crate) mod http;
mod leader;
pub(crate) mod metrics;
pub mod sharding;
pub(crate) mod shutdown;
pub mod telemetry;
pub(crate) mod tls;
pub(crate) mod watchdog;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use tokio::task::JoinSet;

use crate::Operator;
pub use crate::shared::Shared;

pub use flags::Flags;
pub(crate) use flags::parse_bind_address;
pub(crate) use health::Readiness;
pub use http::serve_https;
pub use metrics::Metrics;
pub use shutdown::Shutdown;

/// How long each cleanup at shutdown may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What the manager runs once this replica leads ([`Manager::register`]): a controller
/// ([`Controller`](crate::controller::Controller)), or any task as `(name, future)`. Sealed:
/// how the manager runs one is its own.
pub trait Runnable: run::Run {}

impl<R: run::Run> Runnable for R {}

pub(crate) mod run {
    use futures::future::BoxFuture;

    /// What the manager needs of a [`Runnable`](super::Runnable).
    pub trait Run: Send + 'static {
        /// Its name in logs and readiness (a controller's, as its `Builder` was given it).
        fn name(&self) -> &'static str;
        /// Runs it until the manager shuts down.
        fn run(self) -> BoxFuture<'static, anyhow::Result<()>>;
    }
}

impl<F> run::Run for (&'static str, F)
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

/// A registered runnable, built: its name, and what runs it.
type Built = (&'static str, BoxFuture<'static, anyhow::Result<()>>);

/// A registered runnable, built when the manager runs (`Send` but not `Sync`, so the manager's
/// steps that wait take `&mut self`).
type ControllerFn = Box<dyn FnOnce(Shared) -> Built + Send>;

/// What ended a run of the controllers.
enum Ended {
    /// Another replica may lead now.
    LostLeadership,
    /// Another process holds this replica's shard Lease.
    LostShard,
    /// A shutdown signal (`Ok`), caches that did not sync, or a controller that failed.
    Done(anyhow::Result<()>),
}

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
    /// Connects to the cluster and starts the health and metrics endpoints of `operator`, whose
    /// requests name it and its `version` in their User-Agent (`<name>/<version>
    /// memop-runtime/<version>`): pass `env!("CARGO_PKG_VERSION")`.
    pub async fn start_with_version(
        operator: &Operator,
        version: &str,
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

    /// Runs the controllers until a shutdown signal, or until this replica loses leadership;
    /// then what was deferred at shutdown (`Shutdown::defer`); then stops the HTTP servers,
    /// which serve until then.
    pub async fn run(&mut self) -> anyhow::Result<()> {
        let outcome = self.run_controllers().await;
        self.shared.shutdown.trigger();
        self.shared.shutdown.run_deferred(CLEANUP_TIMEOUT).await;
        self.shared.shutdown.release_servers();
        outcome
    }

    async fn run_controllers(&mut self) -> anyhow::Result<()> {
        let (controllers, shard) = self.build_controllers();
        let Some(mut lease) = self.lead().await else {
            // Shut down while waiting to lead: nothing ran, nothing to stop.
            return Ok(());
        };
        let mut running = JoinSet::new();
        for (name, run) in controllers {
            self.shared.readiness.expect(name);
            running.spawn(async move { (name, run.await) });
        }
        self.shared.readiness.set_started();
        tracing::info!(controllers = running.len(), "started controllers");
        let outcome = match self.wait(&mut running, &lease, &shard).await {
            Ended::Done(outcome) => outcome,
            Ended::LostLeadership => {
                // Another replica may lead now: stop at once, without finishing what is in
                // flight (as controller-runtime does), and do not touch the Lease.
                running.abort_all();
                self.abandon(lease);
                anyhow::bail!("lost leadership; exiting so that another replica takes over");
            }
            Ended::LostShard => {
                // Another process of this replica's name holds its Lease (a replica that merely
                // failed to renew stops acting and rejoins without exiting): stop at once.
                running.abort_all();
                anyhow::bail!(
                    "another process holds this replica's shard lease; exiting so that one process acts for it"
                );
            }
        };
        // Whatever ended the run, stop everything else and give it a bounded time to finish.
        self.shared.shutdown.trigger();
        let rest = self.stop(&mut running, &mut lease).await;
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

    /// Builds the registered controllers, and starts this replica's shard with `--sharding`.
    ///
    /// With leader election, the controllers are built while this replica waits to lead: a
    /// warm standby, whose caches list and follow the API server as the leader's do, so that it
    /// takes over without listing everything again (controller-runtime's informers, too, run
    /// on every replica). They reconcile once it leads. Sharded, every replica runs its
    /// controllers at once, each reconcile gated by the replica's share, which grows as the
    /// ring takes it in.
    fn build_controllers(&mut self) -> (Vec<Built>, Option<sharding::Shard>) {
        if self.leader_election.is_some() {
            self.shared.leading.send_replace(false);
        }
        let shard = self.sharding.clone().map(|config| {
            let shard = sharding::Shard::start(self.shared.client.clone(), config);
            self.shared.shard = Some(shard.clone());
            tokio::spawn(report_shard(shard.clone(), self.shared.metrics.clone()));
            shard
        });
        let controllers = self
            .controllers
            .drain(..)
            .map(|build| build(self.shared.clone()))
            .collect();
        (controllers, shard)
    }

    /// Waits until this replica leads, with leader election: `Some` of its lease (`None`
    /// without leader election), or `None` if the manager shut down first.
    async fn lead(&mut self) -> Option<Option<leader::Lease>> {
        let Some(config) = &self.leader_election else {
            return Some(None);
        };
        self.shared.readiness.set_standby(true);
        self.shared.metrics.leading(config.lease_name(), false);
        let lease =
            leader::acquire(self.shared.client.clone(), config, &self.shared.shutdown).await;
        self.shared.readiness.set_standby(false);
        let lease = lease?;
        self.shared.metrics.leading(config.lease_name(), true);
        self.shared.leading.send_replace(true);
        Some(Some(lease))
    }

    /// Waits for what ends the run: a shutdown signal, a lost lease or shard, caches that do
    /// not sync in time, or a controller that fails (controllers only end on shutdown).
    async fn wait(
        &mut self,
        running: &mut JoinSet<(&'static str, anyhow::Result<()>)>,
        lease: &Option<leader::Lease>,
        shard: &Option<sharding::Shard>,
    ) -> Ended {
        tokio::select! {
            () = lost(lease) => Ended::LostLeadership,
            () = shard_lost(shard) => Ended::LostShard,
            () = self.shared.shutdown.wait() => Ended::Done(Ok(())),
            why = self.shared.readiness.not_synced_within(self.cache_sync_timeout) => Ended::Done(Err(anyhow::anyhow!(
                "{why} after {:?}: check that the CRDs are installed (make install) and that the \
                 manager's role allows list and watch (make manifests)",
                self.cache_sync_timeout
            ))),
            result = wait_all(running), if !running.is_empty() => Ended::Done(result),
        }
    }

    /// Stops the running controllers: at once if nothing was reconciled yet, else within the
    /// graceful shutdown timeout, and at once if the lease is lost meanwhile (it keeps being
    /// renewed while they finish, as before the shutdown).
    async fn stop(
        &mut self,
        running: &mut JoinSet<(&'static str, anyhow::Result<()>)>,
        lease: &mut Option<leader::Lease>,
    ) -> anyhow::Result<()> {
        if let Some(why) = self.shared.readiness.unsynced() {
            tracing::info!(%why, "stopping controllers that never synced");
            running.abort_all();
            return Ok(());
        }
        let timeout = self.graceful_shutdown_timeout;
        let drained = tokio::time::timeout(timeout, wait_all(running));
        tokio::select! {
            drained = drained => drained.unwrap_or_else(|_| {
                running.abort_all();
                tracing::warn!(?timeout, "controllers did not stop in time; stopped them");
                Ok(())
            }),
            () = lost(lease) => {
                running.abort_all();
                tracing::warn!("lost leadership while stopping; stopped the controllers");
                self.abandon(lease.take());
                Ok(())
            }
        }
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
        .await
        .map(drop);
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
    .map(drop)
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
