//! Leader election through a `coordination.k8s.io/v1` Lease, with kube-lease-manager
//! (kube-runtime has none of its own). Only the leader runs controllers; a replica that loses
//! the lease exits, as controller-runtime's managers do, so that it restarts as a clean standby.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Flags, Shutdown};
use crate::Operator;

/// How long a lease lasts without renewal, and how long before that the holder renews it
/// (seconds): the leader renews about every 5 s, and a standby takes over 15 s after the
/// last renewal. These are client-go's defaults.
const LEASE_DURATION: u64 = 15;
const LEASE_GRACE: u64 = 10;
/// A leader that has not renewed for this long steps down, before a standby can take over
/// (client-go's RenewDeadline): kube-lease-manager keeps retrying a failed renewal without
/// reporting it, so without this deadline two replicas could reconcile at once.
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often the leader checks that its lease is still renewed.
const RENEW_CHECK: Duration = Duration::from_secs(2);

pub struct Config {
    lease_name: String,
    namespace: Option<String>,
    identity: String,
}

impl Config {
    /// The Lease's name (`--leader-election-id`).
    pub fn lease_name(&self) -> &str {
        &self.lease_name
    }

    /// The Lease of `operator`, as `flags` name it.
    pub fn from_flags(operator: &Operator, flags: &Flags) -> Self {
        // In a pod, POD_NAME (set from the downward API in config/manager) or else HOSTNAME is
        // the pod's name: unique per replica, which is what a lease holder identity must be.
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("{}-{}", operator.name, std::process::id()));
        Self {
            lease_name: flags
                .leader_election_id
                .clone()
                .unwrap_or_else(|| operator.leader_election_id()),
            namespace: flags
                .leader_election_namespace
                .clone()
                .filter(|ns| !ns.is_empty()),
            identity,
        }
    }
}

/// A held lease.
pub struct Lease {
    leading: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<LeaseManager>>,
    leases: Api<LeaseObject>,
    name: String,
    identity: String,
}

/// Waits until this replica holds the lease; `None` if shutdown came first.
pub async fn acquire(
    client: Client,
    config: &Config,
    shutdown: &Shutdown,
) -> anyhow::Result<Option<Lease>> {
    // Outside a cluster the client's default namespace comes from the kubeconfig context.
    let namespace = config
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let leases = Api::namespaced(client.clone(), &namespace);
    let manager = LeaseManagerBuilder::new(client, &config.lease_name)
        .with_namespace(&namespace)
        .with_identity(&config.identity)
        .with_duration(LEASE_DURATION)
        .with_grace(LEASE_GRACE)
        // A field manager per replica: with a shared one, two standbys taking a free lease
        // at once would both "win" (server-side apply merges a manager's own writes).
        .with_field_manager(field_manager(&config.identity))
        .build()
        .await
        .with_context(|| {
            format!(
                "preparing the leader election lease {namespace}/{}",
                config.lease_name
            )
        })?;
    let (mut leading, task) = manager.watch().await;
    let lease = |leading, task| Lease {
        leading,
        task,
        leases: leases.clone(),
        name: config.lease_name.clone(),
        identity: config.identity.clone(),
    };
    tracing::info!(lease = %config.lease_name, %namespace, identity = %config.identity, "waiting to become the leader");
    while !*leading.borrow_and_update() {
        tokio::select! {
            changed = leading.changed() => changed.context("leader election stopped")?,
            () = shutdown.wait() => {
                lease(leading, task).release().await;
                return Ok(None);
            }
        }
    }
    tracing::info!(identity = %config.identity, "became the leader");
    Ok(Some(lease(leading, task)))
}

impl Lease {
    /// Resolves when the lease is lost: kube-lease-manager saw another holder, or this replica
    /// has not renewed it within [`RENEW_DEADLINE`].
    pub async fn lost(&self) {
        let mut leading = self.leading.clone();
        tokio::select! {
            _ = leading.wait_for(|&is_leader| !is_leader) => {}
            () = self.renewal_overdue() => {}
        }
    }

    /// Resolves once the lease, as the API server has it, is no longer held by this replica or
    /// was last renewed more than [`RENEW_DEADLINE`] ago (or cannot be read for that long: a
    /// request that hangs counts against the deadline too).
    async fn renewal_overdue(&self) {
        let mut confirmed = Instant::now();
        loop {
            tokio::time::sleep(RENEW_CHECK).await;
            let left = RENEW_DEADLINE.saturating_sub(confirmed.elapsed());
            let Ok(read) = tokio::time::timeout(left, self.leases.get(&self.name)).await else {
                tracing::warn!("no answer about the lease within the renew deadline");
                return;
            };
            match read {
                Ok(lease) => {
                    let spec = lease.spec.unwrap_or_default();
                    if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
                        tracing::warn!(holder = ?spec.holder_identity, "another replica holds the lease");
                        return;
                    }
                    // renewTime was written by this replica, with this clock.
                    let renewed = spec.renew_time.map(|t| t.0).unwrap_or_default();
                    let age = Timestamp::now().duration_since(renewed);
                    if age.as_secs() >= RENEW_DEADLINE.as_secs() as i64 {
                        tracing::warn!(
                            seconds = age.as_secs(),
                            "the lease was not renewed in time"
                        );
                        return;
                    }
                    confirmed = Instant::now();
                }
                Err(err) if confirmed.elapsed() >= RENEW_DEADLINE => {
                    tracing::warn!(error = %err, "cannot confirm the lease within the renew deadline");
                    return;
                }
                Err(err) => tracing::debug!(error = %err, "reading the lease failed; retrying"),
            }
        }
    }

    /// Lets go of a lease that another replica holds now, without touching it: the watch task
    /// is stopped first, since dropping its last receiver would make it release the lease,
    /// clearing the new holder's claim.
    pub fn abandon(self) {
        self.task.abort();
    }

    /// Gives the lease up, so a standby takes over without waiting for it to expire; a
    /// release that does not answer within [`RENEW_DEADLINE`] is given up (the lease then expires).
    pub async fn release(self) {
        // Dropping the last receiver tells kube-lease-manager's watch task to release and stop.
        drop(self.leading);
        match tokio::time::timeout(RENEW_DEADLINE, self.task).await {
            Ok(Ok(Ok(_))) => tracing::info!("released the leader election lease"),
            Ok(Ok(Err(err))) => {
                tracing::warn!(error = %err, "could not release the leader election lease")
            }
            Ok(Err(err)) => tracing::warn!(error = %err, "the leader election task failed"),
            Err(_) => tracing::warn!("releasing the leader election lease timed out"),
        }
    }
}

/// The field manager of this replica's Lease writes (at most 128 characters, as the API allows).
fn field_manager(identity: &str) -> String {
    format!("leader-election-{identity}")
        .chars()
        .take(128)
        .collect()
}
