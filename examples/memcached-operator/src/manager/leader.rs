// Copyright 2026 The memcached-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! Leader election through a `coordination.k8s.io/v1` Lease, with kube-lease-manager
//! (kube-runtime has none of its own). Only the leader runs controllers; a replica that loses
//! the lease exits, as controller-runtime's managers do, so that it restarts as a clean standby.

use anyhow::Context as _;
use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Flags, Shutdown};

/// How long a lease lasts without renewal, and how early the holder renews it (seconds).
const LEASE_DURATION: u64 = 15;
const LEASE_GRACE: u64 = 5;

pub struct Config {
    lease_name: String,
    namespace: Option<String>,
    identity: String,
}

impl Config {
    pub fn from_flags(flags: &Flags) -> Self {
        // In a pod, POD_NAME (set from the downward API in config/manager) or else HOSTNAME is
        // the pod's name: unique per replica, which is what a lease holder identity must be.
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("memcached-operator-{}", std::process::id()));
        Self {
            lease_name: flags.leader_election_id.clone(),
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
    let manager = LeaseManagerBuilder::new(client, &config.lease_name)
        .with_namespace(&namespace)
        .with_identity(&config.identity)
        .with_duration(LEASE_DURATION)
        .with_grace(LEASE_GRACE)
        .build()
        .await
        .with_context(|| {
            format!(
                "preparing the leader election lease {namespace}/{}",
                config.lease_name
            )
        })?;
    let (mut leading, task) = manager.watch().await;
    tracing::info!(lease = %config.lease_name, %namespace, identity = %config.identity, "waiting to become the leader");
    while !*leading.borrow_and_update() {
        tokio::select! {
            changed = leading.changed() => changed.context("leader election stopped")?,
            () = shutdown.wait() => {
                Lease { leading, task }.release().await;
                return Ok(None);
            }
        }
    }
    tracing::info!(identity = %config.identity, "became the leader");
    Ok(Some(Lease { leading, task }))
}

impl Lease {
    /// Resolves when the lease is lost (or its renewal stopped).
    pub async fn lost(&self) {
        let mut leading = self.leading.clone();
        let _ = leading.wait_for(|&is_leader| !is_leader).await;
    }

    /// Gives the lease up, so a standby takes over without waiting for it to expire.
    pub async fn release(self) {
        // Dropping the last receiver tells kube-lease-manager's watch task to release and stop.
        drop(self.leading);
        match self.task.await {
            Ok(Ok(_)) => tracing::info!("released the leader election lease"),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "could not release the leader election lease")
            }
            Err(err) => tracing::warn!(error = %err, "the leader election task failed"),
        }
    }
}
